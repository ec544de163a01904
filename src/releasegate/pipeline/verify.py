"""A saved run checked again (`releasegate verify`): every input of its manifest re-hashed, the package versions
compared, and the run's own files (records, judgments, reviews, snapshots, run.json, report.json) compared with
their seal (`seal`). One outcome: unchanged, changed, or unverified (nothing checked changed, but not everything
could be checked: an input that could not be hashed, or a run sealed by no stage)."""

from __future__ import annotations

from pathlib import Path

from ..inputs.backend_facts import backend_names, capabilities
from ..record.seal import seal_changes
from ..run.manifest import compare_manifest, read_manifest

__all__ = ["verify_run", "OUTCOME_EXIT"]

OUTCOME_EXIT = {"changed": 1, "unverified": 3, "unchanged": 0}
"""`releasegate verify`'s exit code for each outcome."""

UNSEALED = "the run's own files (records, rubric snapshot, report): no stage sealed them (a run from before seals)"


def verify_run(run_dir: Path) -> dict:
    """The verification of a run: its outcome, the changed inputs and run files (`compare_manifest` and
    `seal_changes` rows), how many inputs were checked, and what could not be checked (a hub id not on disk, the
    model behind an endpoint, a run with no seal)."""
    manifest = read_manifest(run_dir)
    sealed_rows, sealed = seal_changes(manifest, run_dir)
    rows = compare_manifest(manifest) + sealed_rows
    checked = sum(1 for e in manifest["inputs"] if e.get("sha256"))
    unhashed = [e["path"] for e in manifest["inputs"] if not e.get("sha256")]
    backend = manifest.get("target", {}).get("backend")
    if backend in backend_names() and capabilities(backend).endpoint:
        unhashed.append("the model served behind the endpoint (its weights are not visible to releasegate)")
    if not sealed:
        unhashed.append(UNSEALED)
    outcome = "changed" if rows else "unverified" if unhashed else "unchanged"
    return {"run": str(run_dir), "outcome": outcome, "checked": checked, "unchanged": not rows, "changes": rows,
            "sealed": sorted((manifest.get("sealed") or {}).get("files", {})), "not_hashed": unhashed,
            "manifest": manifest}
