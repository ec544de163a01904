"""The run directory's seal: the sha256 of the run's own files, kept in manifest.json `sealed`, so that
`releasegate verify` sees any edit made to them since releasegate last wrote them.

The manifest hashes a run's inputs (`manifest`); the seal hashes what the run made of them: the config and rubric
snapshots (`gate` judges by the rubric snapshot), the journals (records, load, judgments, reviews, corpus scores),
run.json and report.json. Every stage that writes one of them ends with `seal(run_dir, stage)`, which hashes the files that
stage writes, in the way it writes them:

- a journal is only appended to: the new seal stands when the sealed bytes are still the file's first bytes (the
  load phase's journal is also rewritten whole by `check --resume` when the load phase it sealed had not finished);
- report.json is recomputed from the sealed files (check, gate) and run.json rewritten (check, the judge stage);
- the config and rubric snapshots are written once, when the run starts.

Any other change to a file the stage writes (an edited line, a file cut short or removed, an edited snapshot) was
made outside releasegate: the stage keeps it in `sealed.broken` (file, what changed, which stage found it and
when) before sealing the file again, so no later stage launders it, and `verify` reports it for good. Files a
stage does not write keep their seal. The seal shows edits; it is not a signature: whoever rewrites manifest.json
can forge it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, NamedTuple

from ..border.files import open_regular, read_text
from ..border.structured import json_loads
from ..clock import now
from ..data_classes import dataclass
from ..errors import InputError
from .records import RunDir
from .stored_manifest import BrokenEntry, Seal, SealedFile, SealOnly, read_manifest_file

__all__ = ["seal", "guard_seal", "seal_changes", "sealed_snapshot", "edited_evidence", "SEALED_FILES", "STAGE_WRITES"]

SEALED_FILES = ("config.yaml", "rubric.yaml", "run.json", "records.jsonl", "draws.jsonl", "load.jsonl",
                "attempts.jsonl", "judgments.jsonl", "reviews.jsonl", "review_sample.json", "corpus_scores.jsonl",
                "report.json")
"""The run's own files the seal covers, in the order `verify` lists them."""
UNSEALED_BEFORE = ("review_sample.json",)
"""Sealed only by runs made since it was: such a file that no seal names is an older run's, not an addition."""
JOURNALS = ("records.jsonl", "draws.jsonl", "load.jsonl", "attempts.jsonl", "judgments.jsonl", "reviews.jsonl",
            "corpus_scores.jsonl")
"""Append-only: a legitimate change keeps the sealed bytes as the file's start."""
SNAPSHOTS = ("config.yaml", "rubric.yaml")
"""Written once, when the run starts."""
STAGE_WRITES = {
    "check": ("config.yaml", "rubric.yaml", "run.json", "records.jsonl", "draws.jsonl", "load.jsonl", "attempts.jsonl",
              "judgments.jsonl", "corpus_scores.jsonl", "report.json"),
    "judge": ("run.json", "judgments.jsonl"),
    "review": ("reviews.jsonl", "review_sample.json"),  # the sample every drawn row of which needs a label
    "gate": ("report.json",),
}
"""Which of the run's files each stage writes, and so seals."""
_MANIFEST = "manifest.json"
_CHUNK = 1 << 20
_SEALED_MAX = 64 * 1024**3
"""Bytes a sealed file may hold when it is hashed again (the journals' own cap)."""


def seal(run_dir: Path, stage: str) -> None:
    """Seal the files `stage` writes ('check', 'judge', 'review', 'gate': see `STAGE_WRITES`) as they are now,
    keeping any change found that the stage could not have made. A run without manifest.json (one that predates
    manifests, or built by hand) has nothing to keep a seal in: nothing is done."""
    run = RunDir(run_dir)
    manifest = _read(run.path)
    if manifest is None:
        return
    sealed = _seal_of(manifest) or Seal(files={}, broken=[])
    loading = _load_phase_running(run.path)
    for name in STAGE_WRITES[stage]:
        before = sealed.files.get(name)
        now_state = _state(run.path / name, before)
        change = _foreign_change(name, before, now_state, stage)
        if change is not None and before is not None and not _kept_already(sealed, name, before):
            sealed.broken.append(BrokenEntry(file=name, change=change, found_by=stage, found_at=now(),
                                             sealed_sha256=before.sha256))
        if now_state is None:
            sealed.files.pop(name, None)
        elif name == "load.jsonl" and loading:
            sealed.files[name] = SealedFile(bytes=now_state.bytes, sha256=now_state.sha256, load_phase_running=True)
        else:
            sealed.files[name] = SealedFile(bytes=now_state.bytes, sha256=now_state.sha256)
    sealed.at, sealed.by, sealed.complete = now(), stage, _run_complete(run.path)
    _keep(run, manifest, sealed)


def guard_seal(run_dir: Path, stage: str) -> None:
    """Before a stage writes to a run that was sealed whole (run.json said `complete` when it was last sealed):
    no stage can have written to it since, so any change to its own files (report.json aside), a line appended
    to a journal or an edited run.json included, was made outside releasegate; keep each in `sealed.broken`
    before the stage seals the files again as its own. (A run sealed while a stage was still writing, one killed
    mid-run, may legitimately hold appended lines and a rewritten run.json: `seal` keeps only what no stage
    writes.)"""
    run = RunDir(run_dir)
    manifest = _read(run.path)
    sealed = _seal_of(manifest) if manifest is not None else None
    if manifest is None or sealed is None or not sealed.complete:
        return
    found = [r for r in _file_rows(sealed, run.path) if r.path != "report.json"]
    for row in found:
        change = _GUARD_WORDS.get(row.change, row.change)
        before = sealed.files.get(row.path)
        if row.change == "changed" and row.path in JOURNALS and before is not None:
            state = _state(run.path / row.path, before)
            change = _foreign_change(row.path, before, state, stage) or change
        sealed.broken.append(BrokenEntry(file=row.path, change=change, found_by=stage, found_at=now(),
                                         sealed_sha256=row.before))
    if found:
        _keep(run, manifest, sealed)


def seal_changes(manifest: dict[str, Any], run_dir: Path) -> tuple[list[dict[str, Any]], bool]:
    """What differs in the run's own files from their seal: one row {role, path, change, before, after, note}
    per file appended, changed, missing or added since the last seal, and per change a stage found and kept
    (`sealed.broken`); and whether the run has a seal at all (runs before sealing have none)."""
    sealed = _seal_of(manifest)
    if sealed is None:
        return [], False
    return [row.as_row() for row in _seal_rows(sealed, Path(run_dir))], True


def _seal_rows(sealed: Seal, run_path: Path) -> list[SealRow]:
    return [_broken_row(b) for b in sealed.broken] + _file_rows(sealed, run_path)


def _file_rows(sealed: Seal, run_path: Path) -> list[SealRow]:
    """A row per sealed file changed, missing or added since the last seal (`sealed.broken` aside)."""
    rows = []
    for name in SEALED_FILES:
        before = sealed.files.get(name)
        row = _change_row(name, before, _state(run_path / name, before), sealed)
        if row is not None:
            rows.append(row)
    return rows


def edited_evidence(run_dir: Path, *, found_only: bool = False) -> list[str]:
    """Why a saved run is no longer the run releasegate recorded: one line per file of its own edited outside
    releasegate since it sealed it (or found edited by a stage, for good), report.json aside (every command judges
    the run again rather than read its report). Empty for an untouched run and for a run with no seal (older, or
    built by hand). `gate`, `compare`, `servers` and a rubric's `baseline:` call a run with such a file
    INCONCLUSIVE at best: its evidence is not what was measured. `found_only`: only the changes a stage found
    and kept (`check` itself, whose own writes are not sealed yet when it judges)."""
    manifest = _read(Path(run_dir))
    sealed = _seal_of(manifest) if manifest is not None else None
    if sealed is None:
        rows: list[SealRow] = []
    elif found_only:
        rows = [_broken_row(b) for b in sealed.broken]
    else:
        rows = _seal_rows(sealed, Path(run_dir))
    edited = sorted({f"{row.path} {row.change}" for row in rows if row.path != "report.json"})
    if not edited:
        return []
    return [f"edited since releasegate sealed it ({', '.join(edited)}; releasegate verify {run_dir} says how)"]


def sealed_snapshot(run_dir: Path, name: str) -> Path:
    """The path of a snapshot the run judges by (rubric.yaml, config.yaml), refused (InputError) when it was edited
    since the run sealed it: a threshold changed there would pass for the run's own policy. A run with no seal
    (older, or built by hand) is taken as it is."""
    path = Path(run_dir) / name
    manifest = _read(Path(run_dir))
    sealed = _seal_of(manifest) if manifest is not None else None
    before = sealed.files.get(name) if sealed is not None else None
    state = _state(path, before) if before else None
    if before is None or (state is not None and state.sha256 == before.sha256):
        return path
    kind = "policy" if name == "rubric.yaml" else "config"
    raise InputError(f"{name} was edited since the run sealed it: the run's {kind} is no longer the one it ran with",
                     file=path, hint="to judge by another rubric pass it with --rubric FILE; releasegate verify "
                                     f"{Path(run_dir)} lists what changed")


# -- one file ---------------------------------------------------------------------------------------------------

class FileState(NamedTuple):
    """A file as it is now: its size and sha256, and whether its sealed bytes are still its first bytes."""

    bytes: int
    sha256: str
    kept: bool


@dataclass(frozen=True)
class SealRow:
    """One change to the run's own files, as `verify` lists it."""

    path: str
    change: str
    before: str | None
    after: str | None
    note: str
    found: bool = False
    """A change a stage found and kept (`sealed.broken`), rather than one seen now."""

    def as_row(self) -> dict[str, Any]:
        if self.found:  # each kind of row with its keys in the order `verify --json` has always shown them
            return {"role": "run", "path": self.path, "change": self.change, "before": self.before,
                    "after": self.after, "note": self.note}
        return {"role": "run", "path": self.path, "before": self.before, "after": self.after,
                "change": self.change, "note": self.note}


def _state(path: Path, before: SealedFile | None) -> FileState | None:
    """The file's size and sha256, and whether its first `before.bytes` still hash to the sealed sha256 (one
    read); None when there is no such file."""
    if not path.is_file():
        return None
    digest, prefix, size = hashlib.sha256(), None, 0
    cut = before.bytes if before else None
    with open_regular(path, what="sealed file", max_bytes=_SEALED_MAX) as fh:  # a FIFO in its place: exit 2
        while block := fh.read(_CHUNK if cut is None or size >= cut else min(_CHUNK, cut - size)):
            digest.update(block)
            size += len(block)
            if cut is not None and size == cut:
                prefix = digest.copy().hexdigest()
    if cut == 0:
        prefix = hashlib.sha256().hexdigest()
    return FileState(size, digest.hexdigest(), before is not None and prefix == before.sha256)


def _foreign_change(name: str, before: SealedFile | None, state: FileState | None, stage: str) -> str | None:
    """How the file changed in a way `stage` does not change it ('edited', 'cut short', 'removed'), or None."""
    if before is None or (state is not None and state.sha256 == before.sha256):
        return None
    if name in JOURNALS:
        if name == "load.jsonl" and stage == "check" and before.load_phase_running:
            return None  # a load phase that had not finished is measured again, whole
        if state is not None and state.kept:
            return None  # appended to
        return "removed" if state is None else "cut short" if state.bytes < before.bytes else "edited"
    if name in SNAPSHOTS:
        return "removed" if state is None else "edited"
    return None  # run.json, report.json: rewritten whole by the stages that write them


def _change_row(name: str, before: SealedFile | None, state: FileState | None, sealed: Seal) -> SealRow | None:
    was, now_sha = before.sha256 if before else None, state.sha256 if state else None
    if before is None:
        if state is None or name in UNSEALED_BEFORE:
            return None
        return SealRow(name, "added", was, now_sha, f"written after the last seal ({sealed.by}, {sealed.at})")
    if state is None:
        return SealRow(name, "missing", was, now_sha, "removed since the last seal")
    if state.sha256 == before.sha256:
        return None
    if name in JOURNALS and state.kept:
        added = state.bytes - before.bytes
        return SealRow(name, "appended", was, now_sha, f"{added} bytes appended since the last seal: by a stage "
                                                       "that did not finish (check --resume seals them), or by hand")
    return SealRow(name, "changed", was, now_sha, "edited since the last seal")


def _broken_row(broken: BrokenEntry) -> SealRow:
    return SealRow(broken.file, broken.change, broken.sealed_sha256, None,
                   f"{broken.change} outside releasegate: found by {broken.found_by} at {broken.found_at}, "
                   "sealed again after", found=True)


def _read(run_path: Path) -> dict[str, Any] | None:
    """The run's manifest, of the shape releasegate writes (`stored_manifest`); None when it has none. Any other
    shape is refused (InputError), never read as "no seal": that would let an edited run through."""
    return read_manifest_file(run_path, whole=False)


def _seal_of(manifest: dict[str, Any]) -> Seal | None:
    """The manifest's seal, typed; None when it has none (an empty `sealed` included: a run built by hand)."""
    return SealOnly.model_validate(manifest).sealed if manifest.get("sealed") else None


def _keep(run: RunDir, manifest: dict[str, Any], sealed: Seal) -> None:
    """Write the manifest back with `sealed` as its seal, every other part as it was read."""
    manifest["sealed"] = sealed.model_dump(mode="json", exclude_unset=True)
    run.write_json(_MANIFEST, manifest)


_GUARD_WORDS = {"changed": "edited", "missing": "removed"}
"""`seal_changes` rows in the words `sealed.broken` keeps (those of `_foreign_change`)."""


def _kept_already(sealed: Seal, name: str, before: SealedFile) -> bool:
    """Whether a change to this sealed version of the file is already kept (found by `guard_seal`)."""
    return any(b.file == name and b.sealed_sha256 == before.sha256 for b in sealed.broken)


def _run_complete(run_path: Path) -> bool:
    """Whether run.json says the run is complete (no stage of it still writing)."""
    try:
        return bool(json_loads(read_text(run_path / "run.json", what="run.json")).get("status") == "complete")
    except (InputError, ValueError, AttributeError, RecursionError):
        return False


def _load_phase_running(run_path: Path) -> bool:
    """Whether run.json says the load phase has not finished (its journal is then still being written)."""
    try:
        info = json_loads(read_text(run_path / "run.json", what="run.json"))
    except (InputError, ValueError, RecursionError):
        return False
    return isinstance(info, dict) and "load" in (info.get("phases") or []) and info.get("load_phase") is None
