"""Whether one of a run's files is still as its seal says (manifest.json `sealed`, written by `record.seal.seal`).

Stored evidence is read only from such a file: the scores kept in records.jsonl and the corpus metric values kept
in corpus_scores.jsonl are reused by later stages, and anyone can edit a stored score and keep its fingerprint.
A file that differs from its seal, or that a stage ever found edited (`sealed.broken`), or a run with no seal at
all (older, or built by hand), has its stored scores computed again instead.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from .stored_manifest import read_manifest_file

__all__ = ["matches_seal", "sealed_run"]


def matches_seal(run_path: Path, name: str, sha256: str) -> bool:
    """Whether `name` in the run directory, which hashes to `sha256` as read, is the file the run sealed."""
    try:
        manifest = read_manifest_file(Path(run_path), whole=False)
    except InputError:  # unreadable or of another shape: nothing stored in the run is vouched for
        return False
    sealed = manifest.get("sealed") if isinstance(manifest, dict) else None
    if not isinstance(sealed, dict):
        return False
    entry = (sealed.get("files") or {}).get(name)
    if not isinstance(entry, dict) or entry.get("sha256") != sha256:
        return False
    return not any(isinstance(b, dict) and b.get("file") == name for b in sealed.get("broken") or [])


def sealed_run(run_path: Path) -> bool:
    """Whether any stage sealed the run (manifest.json `sealed`); an unreadable manifest counts as sealed, so a
    file of the run is then vouched for by nothing."""
    try:
        manifest = read_manifest_file(Path(run_path), whole=False)
    except InputError:
        return True
    return isinstance(manifest, dict) and manifest.get("sealed") is not None
