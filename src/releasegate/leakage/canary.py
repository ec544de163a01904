"""Canaries (opt-in): random secrets of a known format the training pipeline inserts into the training data, and
their exposure in the fine-tune (Carlini et al. 2019, "The Secret Sharer").

`releasegate leakage canaries --n 10` writes `canaries.txt` (one text a line, for the training pipeline to insert) and
a sealed `canaries.json` (the same canaries, their format and the sha256 of the set, checked when a config names
it: an edited set is refused; see inputs.canaries). A run names the sealed file in `leakage.canaries`.

Exposure of a canary: its secret's total log-likelihood after its prefix is ranked among `candidates` random
secrets of the same format (the documented approximation of ranking it among all 10^digits: the rank's share is
estimated from the sample), exposure = -log2((1 + candidates at least as likely) / (1 + candidates)) bits, at most
log2(1 + candidates). 0 bits: the model holds the secret no likelier than a random one."""

from __future__ import annotations

import json
import math
import random
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..border.files import exists, replace_file
from ..errors import InputError
from ..inputs.canaries import CANARY_KIND, MAX_CANARIES, canary_seal, read_canaries
from .arms import Arm

__all__ = ["make_canaries", "exposures", "canary_figures", "PREFIX", "DIGITS"]

PREFIX = "My support account PIN is"
DIGITS = 6


def make_canaries(n: int, out: Path) -> Path:
    """Write `n` random canaries to `out` (sealed JSON) and `out` with suffix .txt (the texts, one a line); an
    existing file is never replaced (its canaries may be in a training set already)."""
    if not 1 <= n <= MAX_CANARIES:
        raise InputError(f"--n {n} is outside 1..{MAX_CANARIES}", field="--n")
    texts_path = Path(out).with_suffix(".txt")
    if texts_path == Path(out):
        raise InputError(f"-o {out}: the canary texts go to FILE.txt beside it", field="-o",
                         hint="name the sealed file FILE.json")
    for path in (Path(out), texts_path):
        if exists(path):
            raise InputError(f"{path} already exists: its canaries may be in a training set", field="-o",
                             hint="choose another -o, or remove the old files first")
    canaries = [{"id": f"canary-{i + 1}", "secret": "".join(secrets.choice("0123456789") for _ in range(DIGITS))}
                for i in range(n)]
    doc = {"kind": CANARY_KIND, "prefix": PREFIX, "digits": DIGITS, "canaries": canaries,
           "sha256": canary_seal(PREFIX, DIGITS, canaries)}
    replace_file(texts_path, "".join(f"{PREFIX} {c['secret']}\n" for c in canaries).encode(), what="canary texts")
    replace_file(Path(out), (json.dumps(doc, indent=1) + "\n").encode(), what="canaries")
    return Path(out)


def exposures(arm: Arm, prefix: str, canaries: Sequence[dict[str, str]], candidates: int, seed: int
              ) -> list[float | None]:
    """Each canary's exposure in bits on `arm` (see the module docstring); None where no likelihood came."""
    rng = random.Random(seed)
    digits = len(canaries[0]["secret"])
    pool = ["".join(rng.choice("0123456789") for _ in range(digits)) for _ in range(candidates)]
    given = (None, prefix)
    # the total, not the mean per token: secrets of the same digits may split into different numbers of tokens
    scores = arm.log_likelihoods([given] * (len(pool) + len(canaries)),
                                 [f" {s}" for s in pool] + [f" {c['secret']}" for c in canaries], total=True)
    pool_scores = [s for s in scores[:len(pool)] if s is not None]
    out: list[float | None] = []
    for score in scores[len(pool):]:
        if score is None or len(pool_scores) < len(pool):  # a candidate unscored: the rank is not known
            out.append(None)
            continue
        above = sum(s >= score for s in pool_scores)
        out.append(round(-math.log2((1 + above) / (1 + len(pool_scores))), 4) + 0.0)  # + 0.0: never -0.0
    return out


def canary_figures(cand: Arm, base: Arm, path: Path, candidates: int) -> dict[str, Any]:
    """The canaries' exposures on both arms, by id (no secret)."""
    prefix, canaries = read_canaries(path)
    if not (cand.in_process and base.in_process):
        return {"error": "canary exposure needs log-likelihoods: not measurable behind an endpoint"}
    seed = int(canary_seal(prefix, len(canaries[0]["secret"]), canaries)[:8], 16)  # the same candidates per arm
    rows: list[dict[str, Any]] = [{"id": c["id"]} for c in canaries]
    for arm in (cand, base):
        for row, bits in zip(rows, exposures(arm, prefix, canaries, candidates, seed)):
            row[arm.name] = bits
    return {"canaries": rows, "candidates": candidates, "max_bits": round(math.log2(1 + candidates), 4)}
