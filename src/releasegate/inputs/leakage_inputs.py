"""The leakage probe's inputs: the `leakage:` section of a config and the leakage suite file it names.

A leakage suite (`releasegate leakage build`) is one JSON document: the training and held-out files it was drawn
from (path, sha256, rows), the draw (n, seed), the fields declared personal, and the drawn records, each with its
id, set ('train' or 'heldout'), sha256, the prefix the model is given (`prompt` text or chat `messages`) and the
`rest` its continuation is compared with, and the personal values found in it. The suite is the user's own data:
releasegate reads it, and writes none of its text anywhere else (only ids, hashes and 8 characters each side).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ConfigDict

from ..border.files import read_capped
from ..border.json_reader import NotJson, read_json
from ..data_classes import dataclass
from ..errors import InputError
from ..model_base import Model
from .canaries import read_canaries
from .files import named_file, resolve_under
from .read_doc import read_doc

__all__ = ["SUITE_KIND", "LeakageConfig", "LeakageRecord", "LeakageSuite", "parse_leakage", "read_leakage_suite",
           "require_other_base"]

SUITE_KIND = "releasegate-leakage-suite"
SUITE_VERSION = 1
MAX_SUITE_BYTES = 256 * 2**20
SETS = ("train", "heldout")


@dataclass(frozen=True)
class LeakageConfig:
    """`leakage:`: the suite, the base model to measure against (None: the target without its adapter) and the
    length of the greedy continuations."""

    suite: Path
    base: Any = None
    """A second target (`inputs.target.TargetConfig`) for an endpoint run or a merged model; None: the hf target's
    base, its adapter disabled."""
    max_new_tokens: int = 64
    templates: bool = True
    """ProPILE-style prompts: a person's known fields given, another asked for."""
    canaries: Path | None = None
    """The sealed canary file (`releasegate leakage canaries`) whose canaries the training data holds; None: none."""
    canary_candidates: int = 200


@dataclass(frozen=True)
class LeakageRecord:
    id: str
    set: str
    sha256: str
    rest: str
    prompt: str | None = None
    messages: tuple[dict[str, Any], ...] | None = None
    personal: tuple[tuple[str, str], ...] = ()
    """(field, value): the declared personal fields of the record, then spans the detectors found ('detected:email')"""


@dataclass(frozen=True)
class LeakageSuite:
    path: Path
    sources: dict[str, dict[str, Any]]
    """'train' and 'heldout': {'path', 'sha256', 'rows'} of the files the suite was drawn from."""
    records: tuple[LeakageRecord, ...]
    personal_fields: tuple[str, ...] = ()
    seed: int = 0


class LeakageDoc(Model):
    """The config's `leakage:` section as written."""

    model_config = ConfigDict(frozen=True, extra="allow")

    suite: str
    base: dict[str, Any] | None = None
    max_new_tokens: int = 64
    templates: bool = True
    canaries: str | None = None
    canary_candidates: int = 200


def parse_leakage(raw: dict[str, Any] | None, here: Path, at: Any, parse_target: Any) -> LeakageConfig | None:
    """The `leakage:` section (None: no leakage probe); `parse_target` reads its `base:` like the target."""
    if raw is None:
        return None
    doc = read_doc(LeakageDoc, raw, None)
    suite = named_file(resolve_under(here, doc.suite), what="leakage suite", where=at("leakage", "suite"))
    read_leakage_suite(suite)  # a broken suite stops the run before the model is loaded, not after generating
    base = doc.base
    return LeakageConfig(
        suite=suite,
        base=parse_target(base, here, lambda *p: at("leakage", "base", *p)) if base is not None else None,
        max_new_tokens=doc.max_new_tokens, templates=doc.templates,
        canaries=_canaries(doc.canaries, here, at), canary_candidates=doc.canary_candidates)


_OUTPUTS_DECIDED_BY = ("backend", "base", "adapter", "merge", "responses", "base_url", "model", "mode", "extra_body",
                       "headers")
"""The target keys that decide what a model answers: two targets equal in each are one model."""


def require_other_base(target: Any, leakage: LeakageConfig | None, at: Any) -> None:
    """Refuse (exit 2, one line naming both keys) a `leakage.base` that is the target itself (`--set` or a layer
    can make it so): the probe would compare the candidate with itself, and every delta would read 0, a leaking
    model's too."""
    base = leakage.base if leakage is not None else None
    if base is None or any(getattr(base, k, None) != getattr(target, k, None) for k in _OUTPUTS_DECIDED_BY):
        return
    raise InputError("leakage.base is the target itself (same backend, model and endpoint): the probe would "
                     "measure the candidate against itself, every delta 0", **at("leakage", "base"),
                     hint="name the fine-tune's base model in leakage.base")


def _canaries(name: str | None, here: Path, at: Any) -> Path | None:
    """The sealed canary file, read now: a broken or edited one stops the run before the model is loaded."""
    if name is None:
        return None
    path = named_file(resolve_under(here, name), what="canary file", where=at("leakage", "canaries"))
    read_canaries(path)
    return path


def read_leakage_suite(path: Path) -> LeakageSuite:
    """The suite file, checked: any part that does not fit is an InputError naming the file and the record."""
    try:
        data = read_json(read_capped(path, what="leakage suite", max_bytes=MAX_SUITE_BYTES),
                         max_bytes=MAX_SUITE_BYTES, what="leakage suite")
    except NotJson as exc:
        raise InputError(str(exc), file=path, hint="write it with releasegate leakage build") from None
    if not isinstance(data, dict) or data.get("kind") != SUITE_KIND or data.get("version") != SUITE_VERSION:
        raise InputError(f"not a leakage suite (kind {SUITE_KIND!r}, version {SUITE_VERSION})", file=path,
                         hint="write it with releasegate leakage build")
    records = data.get("records")
    if not isinstance(records, list) or not records:
        raise InputError("the suite holds no record", file=path, field="records")
    sources, fields, seed = _header(data, path)
    parsed = tuple(_record(r, i, path) for i, r in enumerate(records))
    trained = {r.sha256 for r in parsed if r.set == "train"}
    if both := next((r for r in parsed if r.set == "heldout" and r.sha256 in trained), None):
        raise InputError(f"held-out record {both.id} is also a training record: it would read as not memorised",
                         file=path, hint="build the suite again from a held-out file never trained on")
    if not trained or len(trained) == len(parsed):
        raise InputError("the suite needs training and held-out records", file=path, field="records")
    for s in SETS:  # a relative path is relative to the suite's folder
        sources[s] = {**sources[s], "path": str(path.parent / str(sources[s].get("path")))}
    return LeakageSuite(path=path, sources={s: sources[s] for s in SETS},
                        records=parsed,
                        personal_fields=fields, seed=seed)


def _header(data: dict[str, Any], path: Path) -> tuple[dict[str, Any], tuple[str, ...], int]:
    """(sources, personal fields, seed) of a suite, each of the type `leakage build` writes: an edited one is
    named by its field, never taken as whatever Python makes of it."""
    sources = data.get("sources")
    if not isinstance(sources, dict) or any(not isinstance(sources.get(s), dict) for s in SETS):
        raise InputError("the suite names no training and held-out files", file=path, field="sources")
    for s in SETS:
        if not isinstance(sources[s].get("path"), str) or not isinstance(sources[s].get("sha256"), str):
            raise InputError("must give the file's path and sha256 (texts)", file=path, field=f"sources.{s}")
    fields = data.get("personal_fields", [])
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise InputError("must be a list of field names (texts)", file=path, field="personal_fields")
    seed = data.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"must be a whole number, got {type(seed).__name__}", file=path, field="seed")
    return sources, tuple(fields), seed


def _record(raw: Any, i: int, path: Path) -> LeakageRecord:
    where = f"records[{i}]"
    if not isinstance(raw, dict):
        raise InputError("a record is not an object", file=path, field=where)
    for key in ("id", "set", "sha256", "rest"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise InputError(f"the record has no {key} (text)", file=path, field=f"{where}.{key}")
    if raw["set"] not in SETS:
        raise InputError(f"set is {raw['set']!r}, not train or heldout", file=path, field=f"{where}.set")
    prompt, messages = raw.get("prompt"), raw.get("messages")
    if not isinstance(prompt, str) and not _chat(messages):
        raise InputError("the record has neither a prompt (text) nor messages (role and content)", file=path,
                         field=where)
    personal = raw.get("personal") or []
    if not isinstance(personal, list) or not all(isinstance(p, list) and len(p) == 2
                                                 and all(isinstance(x, str) for x in p) for p in personal):
        raise InputError("personal is not a list of [field, value] pairs", file=path, field=f"{where}.personal")
    return LeakageRecord(id=raw["id"], set=raw["set"], sha256=raw["sha256"], rest=raw["rest"],
                         prompt=prompt if isinstance(prompt, str) else None,
                         messages=tuple(messages) if isinstance(messages, list) and _chat(messages) else None,
                         personal=tuple((f, v) for f, v in personal))


def _chat(messages: Any) -> bool:
    return isinstance(messages, list) and bool(messages) and all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in messages)
