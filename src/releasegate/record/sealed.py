"""Whether one of a run's files is still as its seal says (manifest.json `sealed`, written by `record.seal.seal`).

Stored evidence is read only from such a file: the scores kept in records.jsonl and the corpus metric values kept
in corpus_scores.jsonl are reused by later stages, and anyone can edit a stored score and keep its fingerprint.
A file that differs from its seal, or that a stage ever found edited (`sealed.broken`), or a run with no seal at
all (older, or built by hand), has its stored scores computed again instead.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from .stored_manifest import SealOnly, read_manifest_file

__all__ = ["matches_seal", "seal_of"]


def matches_seal(run_path: Path, name: str, sha256: str) -> bool:
    """Whether `name` in the run directory, which hashes to `sha256` as read, is the file the run sealed."""
    return seal_of(run_path, name, sha256) == "matches"


def seal_of(run_path: Path, name: str, sha256: str) -> str:
    """What the run's seal says of `name` as read (hashing to `sha256`), from one read of manifest.json:
    'matches'; 'unsealed' when no stage sealed the run at all (older, or built by hand); 'unreadable' when
    manifest.json or its seal cannot be read or has another shape; else 'differs' (another digest, a file the seal
    does not name, one a stage found edited). Only 'matches' vouches for what the run stored."""
    try:
        manifest = read_manifest_file(Path(run_path), whole=False)
    except InputError:
        return "unreadable"
    if manifest is None:  # no manifest.json: a run from before manifests, or built by hand
        return "unsealed"
    sealed = SealOnly.model_validate(manifest).sealed  # of this shape: `read_manifest_file` checked it
    if sealed is None:
        return "unsealed"
    entry = sealed.files.get(name)
    if entry is None or entry.sha256 != sha256:
        return "differs"
    return "differs" if any(b.file == name for b in sealed.broken) else "matches"
