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
from typing import Any

from ..border.files import open_regular, read_text
from ..border.structured import json_loads
from ..clock import now
from ..errors import InputError
from .records import RunDir
from .stored_manifest import read_manifest_file

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
    sealed = manifest.get("sealed") or {"files": {}, "broken": []}
    loading = _load_phase_running(run.path)
    for name in STAGE_WRITES[stage]:
        before = sealed["files"].get(name)
        now_state = _state(run.path / name, before)
        change = _foreign_change(name, before, now_state, stage)
        if change is not None and not _kept_already(sealed, name, before):
            sealed["broken"].append({"file": name, "change": change, "found_by": stage, "found_at": now(),
                                     "sealed_sha256": before["sha256"]})
        if now_state is None:
            sealed["files"].pop(name, None)
        else:
            sealed["files"][name] = {"bytes": now_state["bytes"], "sha256": now_state["sha256"],
                                     **({"load_phase_running": True} if name == "load.jsonl" and loading else {})}
    sealed.update(at=now(), by=stage, complete=_run_complete(run.path))
    manifest["sealed"] = sealed
    run.write_json(_MANIFEST, manifest)


def guard_seal(run_dir: Path, stage: str) -> None:
    """Before a stage writes to a run that was sealed whole (run.json said `complete` when it was last sealed):
    no stage can have written to it since, so any change to its own files (report.json aside), a line appended
    to a journal or an edited run.json included, was made outside releasegate; keep each in `sealed.broken`
    before the stage seals the files again as its own. (A run sealed while a stage was still writing, one killed
    mid-run, may legitimately hold appended lines and a rewritten run.json: `seal` keeps only what no stage
    writes.)"""
    run = RunDir(run_dir)
    manifest = _read(run.path)
    sealed = (manifest or {}).get("sealed")
    if not sealed or not sealed.get("complete"):
        return
    rows, _ = seal_changes({"sealed": {**sealed, "broken": []}}, run.path)
    found = [r for r in rows if r["path"] != "report.json"]
    for row in found:
        change = _GUARD_WORDS.get(row["change"], row["change"])
        if row["change"] == "changed" and row["path"] in JOURNALS:
            state = _state(run.path / row["path"], sealed["files"][row["path"]])
            change = _foreign_change(row["path"], sealed["files"][row["path"]], state, stage) or change
        sealed.setdefault("broken", []).append({"file": row["path"], "change": change, "found_by": stage,
                                                "found_at": now(), "sealed_sha256": row["before"]})
    if found:
        run.write_json(_MANIFEST, manifest)


def seal_changes(manifest: dict[str, Any], run_dir: Path) -> tuple[list[dict[str, Any]], bool]:
    """What differs in the run's own files from their seal: one row {role, path, change, before, after, note}
    per file appended, changed, missing or added since the last seal, and per change a stage found and kept
    (`sealed.broken`); and whether the run has a seal at all (runs before sealing have none)."""
    sealed = manifest.get("sealed")
    if not sealed:
        return [], False
    run_path = Path(run_dir)
    rows = [_broken_row(b) for b in sealed.get("broken", [])]
    for name in SEALED_FILES:
        before = sealed["files"].get(name)
        state = _state(run_path / name, before)
        row = _change_row(name, before, state, sealed)
        if row is not None:
            rows.append(row)
    return rows, True


def edited_evidence(run_dir: Path, *, found_only: bool = False) -> list[str]:
    """Why a saved run is no longer the run releasegate recorded: one line per file of its own edited outside
    releasegate since it sealed it (or found edited by a stage, for good), report.json aside (every command judges
    the run again rather than read its report). Empty for an untouched run and for a run with no seal (older, or
    built by hand). `gate`, `compare`, `servers` and a rubric's `baseline:` call a run with such a file
    INCONCLUSIVE at best: its evidence is not what was measured. `found_only`: only the changes a stage found
    and kept (`check` itself, whose own writes are not sealed yet when it judges)."""
    manifest = _read(Path(run_dir))
    if found_only:
        rows = [_broken_row(b) for b in ((manifest or {}).get("sealed") or {}).get("broken", [])]
    else:
        rows, _ = seal_changes(manifest, run_dir) if manifest is not None else ([], False)
    edited = sorted({f"{row['path']} {row['change']}" for row in rows if row["path"] != "report.json"})
    if not edited:
        return []
    return [f"edited since releasegate sealed it ({', '.join(edited)}; releasegate verify {run_dir} says how)"]


def sealed_snapshot(run_dir: Path, name: str) -> Path:
    """The path of a snapshot the run judges by (rubric.yaml, config.yaml), refused (InputError) when it was edited
    since the run sealed it: a threshold changed there would pass for the run's own policy. A run with no seal
    (older, or built by hand) is taken as it is."""
    path = Path(run_dir) / name
    manifest = _read(Path(run_dir))
    before = ((manifest or {}).get("sealed") or {}).get("files", {}).get(name)
    state = _state(path, before) if before else None
    if before is None or (state is not None and state["sha256"] == before["sha256"]):
        return path
    kind = "policy" if name == "rubric.yaml" else "config"
    raise InputError(f"{name} was edited since the run sealed it: the run's {kind} is no longer the one it ran with",
                     file=path, hint="to judge by another rubric pass it with --rubric FILE; releasegate verify "
                                     f"{Path(run_dir)} lists what changed")


# -- one file ---------------------------------------------------------------------------------------------------

def _state(path: Path, before: dict[str, Any] | None) -> dict[str, Any] | None:
    """The file's size and sha256, and whether its first `before['bytes']` still hash to the sealed sha256 (one
    read); None when there is no such file."""
    if not path.is_file():
        return None
    digest, prefix, size = hashlib.sha256(), None, 0
    cut = before["bytes"] if before else None
    with open_regular(path, what="sealed file", max_bytes=_SEALED_MAX) as fh:  # a FIFO in its place: exit 2
        while block := fh.read(_CHUNK if cut is None or size >= cut else min(_CHUNK, cut - size)):
            digest.update(block)
            size += len(block)
            if cut is not None and size == cut:
                prefix = digest.copy().hexdigest()
    if cut == 0:
        prefix = hashlib.sha256().hexdigest()
    return {"bytes": size, "sha256": digest.hexdigest(), "kept": before is not None and prefix == before["sha256"]}


def _foreign_change(name: str, before: dict[str, Any] | None, state: dict[str, Any] | None, stage: str) -> str | None:
    """How the file changed in a way `stage` does not change it ('edited', 'cut short', 'removed'), or None."""
    if before is None or (state is not None and state["sha256"] == before["sha256"]):
        return None
    if name in JOURNALS:
        if name == "load.jsonl" and stage == "check" and before.get("load_phase_running"):
            return None  # a load phase that had not finished is measured again, whole
        if state is not None and state["kept"]:
            return None  # appended to
        return "removed" if state is None else "cut short" if state["bytes"] < before["bytes"] else "edited"
    if name in SNAPSHOTS:
        return "removed" if state is None else "edited"
    return None  # run.json, report.json: rewritten whole by the stages that write them


def _change_row(name: str, before: dict[str, Any] | None, state: dict[str, Any] | None, sealed: dict[str, Any]) -> dict[str, Any] | None:
    row = {"role": "run", "path": name, "before": before and before["sha256"], "after": state and state["sha256"]}
    if before is None:
        if state is None or name in UNSEALED_BEFORE:
            return None
        return {**row, "change": "added", "note": f"written after the last seal ({sealed.get('by')}, {sealed.get('at')})"}
    if state is None:
        return {**row, "change": "missing", "note": "removed since the last seal"}
    if state["sha256"] == before["sha256"]:
        return None
    if name in JOURNALS and state["kept"]:
        added = state["bytes"] - before["bytes"]
        return {**row, "change": "appended", "note": f"{added} bytes appended since the last seal: by a stage that did "
                                                     "not finish (check --resume seals them), or by hand"}
    return {**row, "change": "changed", "note": "edited since the last seal"}


def _broken_row(broken: dict[str, Any]) -> dict[str, Any]:
    return {"role": "run", "path": broken["file"], "change": broken["change"], "before": broken.get("sealed_sha256"),
            "after": None, "note": f"{broken['change']} outside releasegate: found by {broken['found_by']} at "
                                   f"{broken['found_at']}, sealed again after"}


def _read(run_path: Path) -> dict[str, Any] | None:
    """The run's manifest, of the shape releasegate writes (`stored_manifest`); None when it has none. Any other
    shape is refused (InputError), never read as "no seal": that would let an edited run through."""
    return read_manifest_file(run_path, whole=False)


_GUARD_WORDS = {"changed": "edited", "missing": "removed"}
"""`seal_changes` rows in the words `sealed.broken` keeps (those of `_foreign_change`)."""


def _kept_already(sealed: dict[str, Any], name: str, before: dict[str, Any]) -> bool:
    """Whether a change to this sealed version of the file is already kept (found by `guard_seal`)."""
    return any(b["file"] == name and b.get("sealed_sha256") == before["sha256"] for b in sealed.get("broken", []))


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
