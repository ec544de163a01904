"""A saved run checked again (`releasegate verify`): every input of its manifest re-hashed, the package versions
compared, and the run's own files (records, judgments, reviews, snapshots, run.json, report.json) compared with
their seal (`seal`). One outcome: unchanged, changed, or unverified (nothing checked changed, but not everything
could be checked: an input that could not be hashed, or a run sealed by no stage)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict

from ..errors import ReleasegateError
from ..gate.context import GateContext, GateInputs
from ..gate.paired_stopping import baseline_pairing
from ..gate.stopping import run_stop_state, stopping_of
from ..inputs.backend_facts import backend_names, capabilities
from ..inputs.rubric import load_rubric
from ..model_base import Model
from ..record.judge_verdicts import run_verdicts
from ..record.records import RunDir
from ..record.seal import seal_changes, sealed_snapshot
from ..record.stored_manifest import ManifestShape
from ..run.manifest import compare_manifest, grader_inputs, read_manifest
from ..scorers import scored_run

__all__ = ["verify_run", "verification", "Verification"]

ENDPOINT = "the model served behind the endpoint (its weights are not visible to releasegate)"


UNSEALED = "the run's own files (records, rubric snapshot, report): no stage sealed them (a run from before seals)"


class Change(Model):
    """A row of what changed (`compare_manifest`, `seal_changes`, the stop recomputed)."""

    model_config = ConfigDict(extra="allow")

    role: str | None = None
    path: Any = None
    change: Any = None


class Verification(Model):
    """A run checked again: what `verify` says (its JSON, less the manifest) and what a release reads."""

    run: str
    outcome: Literal["unchanged", "changed", "unverified"]
    checked: int
    unchanged: bool
    changes: list[dict[str, Any]]
    sealed: list[str]
    not_hashed: list[Any]
    manifest: dict[str, Any]

    def change_rows(self) -> list[Change]:
        return [Change.model_validate(row) for row in self.changes]


class _Hashed(Model):
    """An input entry as far as verifying reads it: a grader's (manifest.json `judge`, `guards`) is any mapping."""

    model_config = ConfigDict(extra="allow")

    path: Any = None
    sha256: Any = None


def verify_run(run_dir: Path) -> dict[str, Any]:
    """The verification of a run: its outcome, the changed inputs and run files (`compare_manifest` and
    `seal_changes` rows), how many inputs were checked, and what could not be checked (a hub id not on disk, the
    model behind an endpoint, a run with no seal)."""
    return verification(run_dir).model_dump()


def verification(run_dir: Path) -> Verification:
    """`verify_run`, typed."""
    manifest = read_manifest(run_dir)
    shape = ManifestShape.model_validate(manifest)  # read_manifest checked it whole
    sealed_rows, sealed = seal_changes(manifest, run_dir)
    rows = compare_manifest(manifest) + sealed_rows + _stopping_rows(manifest, run_dir)
    inputs = [_Hashed(path=e.path, sha256=e.sha256) for e in shape.inputs] + [
        _Hashed.model_validate(e) for e in grader_inputs(manifest)]  # the judge's and the guards' files too
    checked = sum(1 for e in inputs if e.sha256)
    unhashed = [e.path for e in inputs if not e.sha256]
    unhashed += _model_unseen(shape, run_dir)
    if not sealed:
        unhashed.append(UNSEALED)
    outcome: Literal["unchanged", "changed", "unverified"] = "changed" if rows else "unverified" if unhashed else "unchanged"
    return Verification(run=str(run_dir), outcome=outcome, checked=checked, unchanged=not rows, changes=rows,
                        sealed=sorted(shape.sealed.files) if shape.sealed else [], not_hashed=unhashed,
                        manifest=manifest)


def _model_unseen(manifest: ManifestShape, run_dir: Path) -> list[str]:
    """Why the model that answered could not be hashed: an endpoint's whose served weights the run did not hash,
    or a backend releasegate does not know.
    The backend is read from the sealed run.json as well as from manifest.json, which no seal covers: a manifest
    rewritten to name a local backend does not hide an endpoint."""
    try:
        sealed_backend: str | None = RunDir(run_dir).read_info().backend
    except ReleasegateError:
        sealed_backend = None
    named = {b for b in (manifest.target.backend, sealed_backend) if b is not None}
    unknown = sorted(str(b) for b in named if b not in backend_names())
    if unknown:
        return [f"the model of backend {unknown[0][:40]!r}, which releasegate does not know"]
    if any(capabilities(b).endpoint for b in named) and not _served_weights(manifest):
        return [ENDPOINT]
    return []


def _served_weights(manifest: ManifestShape) -> bool:
    """Whether the run hashed the weights its endpoint's server loads (`target.served_files`, or the files
    releasegate's launcher handed the server it started): then they are checked like any model's files."""
    return any(e.role == "served:weights" and isinstance(e.sha256, str) for e in manifest.inputs)


def _stopping_rows(manifest: dict[str, Any], run_dir: Path) -> list[dict[str, Any]]:
    """A run stopped when decided, its stop recomputed from the records: a row when the order differs from the
    manifest's, or when the records do not decide every criterion after the cases run.json says it stopped at."""
    try:
        run = RunDir(run_dir)
        info = run.read_info()
    except ReleasegateError:
        return []
    stopping = stopping_of(info)
    if stopping is None:
        return []
    row = {"role": "stopping", "path": "run.json"}
    if (manifest.get("stopping") or {}).get("order") != stopping["order"]:
        return [{**row, "change": "the order asked differs from the manifest's"}]
    stopped = stopping.get("stopped_at")
    if not stopped:
        return []
    try:
        rubric = load_rubric(sealed_snapshot(run.path, "rubric.yaml"))
        verdicts = run_verdicts(run, info)
        scored = scored_run(run, rubric.forbidden, verdicts)
    except ReleasegateError as exc:  # an edited snapshot or journal: the seal's rows say so
        if str(getattr(exc, "field", "") or "").startswith("baseline"):  # the baseline the stop paired with is gone
            return [{**row, "change": f"the stop cannot be recomputed: {getattr(exc, 'message', exc)}"}]
        return []
    criteria = GateContext(GateInputs(info, scored.records, rubric)).criteria
    state = run_stop_state(info, criteria, {r.case_id: r for r in scored.records},
                           lambda r: scored.scores.get(r.case_id, {}),
                           baseline=baseline_pairing(rubric, info, verdicts=verdicts),
                           ledger=scored.ledger)
    if not state.all_decided or state.asked < stopped:
        return [{**row, "change": f"the records do not decide every criterion after the {stopped} case(s) the run "
                                  f"stopped at ({state.asked} in order)"}]
    return []
