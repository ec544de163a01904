"""A saved run's inputs checked again (`releasegate verify`): every input of its manifest re-hashed and the
package versions compared, with one outcome: unchanged, changed, or unverified (nothing checked changed, but not
every input could be checked)."""

from __future__ import annotations

from pathlib import Path

from .manifest import compare_manifest, read_manifest

__all__ = ["verify_run", "OUTCOME_EXIT"]

OUTCOME_EXIT = {"changed": 1, "unverified": 3, "unchanged": 0}
"""`releasegate verify`'s exit code for each outcome."""


def verify_run(run_dir: Path) -> dict:
    """The verification of a run: its outcome, the changed inputs (`compare_manifest` rows), how many inputs were
    checked, and what could not be hashed (a hub id not on disk, the model behind an endpoint)."""
    manifest = read_manifest(run_dir)
    rows = compare_manifest(manifest)
    checked = sum(1 for e in manifest["inputs"] if e.get("sha256"))
    unhashed = [e["path"] for e in manifest["inputs"] if not e.get("sha256")]
    if manifest.get("target", {}).get("backend") == "openai":
        unhashed.append("the model served behind the endpoint (its weights are not visible to releasegate)")
    outcome = "changed" if rows else "unverified" if unhashed else "unchanged"
    return {"run": str(run_dir), "outcome": outcome, "checked": checked, "unchanged": not rows, "changes": rows,
            "not_hashed": unhashed, "manifest": manifest}
