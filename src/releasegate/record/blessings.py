"""Blessed baselines: a name given to a sealed, verified PASS run (`releasegate bless`), kept in the reports
folder's `baselines.jsonl`, one line per blessing, never rewritten. Blessing a name again appends a line: the name
then means the new run, and the old blessing stays in the file for good (who, when, why).

A blessing keeps what the run was when it was blessed: its evidence digest (the sealed hashes of its records and
snapshots), its package versions and its suites' hashes, so that a run changed after its blessing, a suite changed
since, or a run measured with other packages can be told (`decision.release.decide_baseline_age`)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..border.dsse import key_id, public_key_from_pem, verified_by
from ..border.files import append_regular, exists, read_text
from ..border.structured import json_loads
from ..data_classes import dataclass
from ..errors import InputError

__all__ = ["BASELINES_FILE", "BLESSING_TYPE", "Blessing", "append_blessing", "blessings", "blessed", "evidence_digest",
           "check_name", "blessing_payload", "signer_of", "Signers"]

BASELINES_FILE = "baselines.jsonl"
BLESSING_TYPE = "application/vnd.releasegate.blessing+json"
"""The DSSE payload type of a blessing's signature (`bless --key`)."""
EVIDENCE_FILES = ("config.yaml", "rubric.yaml", "records.jsonl", "load.jsonl", "corpus_scores.jsonl")
"""The sealed files a blessing's evidence digest covers: none of them changes once a run is complete."""
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
_MAX_BYTES = 16 * 1024 * 1024


Signers = tuple[tuple[str, str], ...]
"""(name, Ed25519 public key in PEM) of each key a rubric trusts to bless (`baseline.signed_by`)."""


@dataclass(frozen=True)
class Blessing:
    """One line of baselines.jsonl."""

    name: str
    run: str
    """The run directory's name in the reports folder."""
    run_id: str
    run_created_at: str
    blessed_at: str
    by: str
    reason: str
    verdict: str
    rubric_sha256: str | None
    evidence_sha256: str
    """`evidence_digest` of the run when it was blessed."""
    packages: dict[str, str]
    suites: dict[str, str]
    """Each suite file of the run and its sha256 when the run was measured: keyed by its path relative to its
    repository (or to the reports folder's parent); a blessing from before keeps its absolute path."""
    rubric: dict[str, Any] | None = None
    """The rubric that judged it (`pipeline.rubric_binding`): effective_sha256, official_sha256, overrides;
    None in a blessing written before it was kept."""
    signature: dict[str, Any] | None = None
    """`bless --key`: a DSSE envelope (Ed25519) over `blessing_payload`; a rubric whose `baseline.signed_by`
    names the key counts only a blessing it verifies. None: unsigned."""


def check_name(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise InputError(f"{name[:80]!r} is not a baseline name: letters, digits, '_', '.' and '-', at most 100",
                         field="--as")
    return name


def evidence_digest(manifest: dict[str, Any]) -> str:
    """The sha256 over the sealed hashes of the run's `EVIDENCE_FILES`."""
    files = (manifest.get("sealed") or {}).get("files") or {}
    kept = {name: (files.get(name) or {}).get("sha256") for name in EVIDENCE_FILES}
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()


def append_blessing(reports: Path, blessing: Blessing) -> None:
    if os.path.islink(Path(reports) / BASELINES_FILE):  # an append would go wherever the link points
        raise InputError("is a symbolic link: the blessings are kept in the reports folder itself",
                         file=Path(reports) / BASELINES_FILE)
    append_regular(Path(reports) / BASELINES_FILE, json.dumps(asdict(blessing), sort_keys=True) + "\n",
                   what=BASELINES_FILE)


def blessings(reports: Path) -> list[Blessing]:
    """Every blessing of the reports folder, oldest first; InputError naming the line of one that is not one."""
    path = Path(reports) / BASELINES_FILE
    if not exists(path):
        return []
    found = []
    for number, line in enumerate(read_text(path, what=BASELINES_FILE, max_bytes=_MAX_BYTES).splitlines(), 1):
        if line.strip():
            found.append(_blessing(line, path, number))
    return found


def _blessing(line: str, path: Path, number: int) -> Blessing:
    try:
        raw = json_loads(line)
        entry = Blessing(**raw)
    except (ValueError, TypeError, RecursionError) as exc:
        raise InputError(f"not a blessing: {str(exc)[:120]}", file=path, line=number,
                         hint="baselines.jsonl is written by releasegate bless; restore it from version control") from None
    texts = (entry.name, entry.run, entry.run_id, entry.by, entry.reason, entry.evidence_sha256)
    if not all(isinstance(t, str) for t in texts) or not _NAME.fullmatch(entry.name) or \
            entry.run in ("", ".", "..") or "/" in entry.run or "\\" in entry.run:
        raise InputError("a blessing names something other than a run directory of this folder", file=path,
                         line=number, hint="baselines.jsonl is written by releasegate bless")
    if not isinstance(entry.packages, dict) or not isinstance(entry.suites, dict) or \
            not isinstance(entry.signature, (dict, type(None))):
        raise InputError("a blessing's packages, suites or signature are of another shape", file=path, line=number)
    return entry


def blessed(reports: Path, name: str, signers: Signers = ()) -> Blessing:
    """The run the name means now (its latest blessing; with `signers`, its latest blessing one of them signed:
    a line anyone else appended names nothing); InputError when the folder never blessed it so."""
    every = blessings(reports)
    found = [b for b in every if b.name == name and (not signers or signer_of(b, signers) is not None)]
    if not found:
        known = sorted({b.name for b in every})
        signed = " signed by a key of baseline.signed_by" if signers else ""
        raise InputError(f"no baseline blessed as {name!r}{signed} in {reports}"
                         + (f" (blessed: {', '.join(known)})" if known else ""),
                         hint="bless a run first: releasegate bless RUN_DIR --as NAME --reason TEXT"
                              + (" --key KEY" if signers else ""))
    return found[-1]


def blessing_payload(blessing: Blessing) -> bytes:
    """What a blessing's signature signs: the line without its signature, keys sorted."""
    signed = {field: value for field, value in asdict(blessing).items() if field != "signature"}
    return json.dumps(signed, sort_keys=True).encode("utf-8")


def signer_of(blessing: Blessing, signers: Signers) -> str | None:
    """The name of the signer whose key signed exactly this blessing (every field as the line holds it), or None:
    unsigned, signed by another key, or a signature over another line (a copied signature names nothing)."""
    keys = [(name, key) for name, pem in signers if (key := public_key_from_pem(pem)) is not None]
    if blessing.signature is None or not keys:
        return None
    problem, payload, verified = verified_by(blessing.signature, [key for _, key in keys], BLESSING_TYPE,
                                             "a blessing")
    if problem is not None or payload != blessing_payload(blessing):
        return None
    return next((name for name, key in keys if key_id(key) == verified), None)
