"""The local hub cache: where a hub model's or dataset's copy lies on this machine, never downloaded."""

from __future__ import annotations

from pathlib import Path

__all__ = ["hub_snapshot"]


def hub_snapshot(repo_id: str, *, repo_type: str = "model", revision: str | None = None) -> Path | None:
    """The hub cache's copy of `repo_id` at `revision` (its snapshot directory), or None: not cached, offline,
    no huggingface_hub, or an id the hub would refuse. Nothing is downloaded."""
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(str(repo_id), repo_type=repo_type, revision=revision, local_files_only=True))
    except Exception:  # the callers then treat it as absent: not hashed, not read, or refused with one line
        return None
