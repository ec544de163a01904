"""Whether a saved run may leave the gate (`bless`, `attest`, `promote`): sealed whole, verified unchanged (every
input re-hashed, the same package versions, its own files as sealed), judged by its own rubric with no override
of a judging key that the rubric does not allow by name (`rubric_binding`), and PASS. The decision is
`decision.release.decide_release`; this gathers its evidence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ConfigDict, field_validator

from ..border.structured import stored_json
from ..data_classes import dataclass
from ..decision.release import decide_release
from ..errors import ReleaseRefused
from ..model_base import Model
from ..record.decision_evidence import ReleaseEvidence
from ..record.gate_report import GateReport, as_report
from ..record.stored_manifest import ManifestShape
from .regate import judged_again
from .rubric_binding import RubricBinding, binding_of
from .verify import verification

__all__ = ["ReleasableRun", "releasable_run"]


@dataclass(frozen=True)
class ReleasableRun:
    """A run that may be released, with what was read to say so."""

    path: Path
    report: GateReport
    """Its sealed report.json, validated once (`record.gate_report`)."""
    manifest: dict[str, Any]
    """Its manifest.json, verified."""
    reason: str
    binding: RubricBinding
    """The rubric that judged it: its effective hash, the rubric file's, every override."""


class _JudgedBy(Model):
    """report.json's `judged_by`, as far as a release reads it (any value: the decision weighs it)."""

    model_config = ConfigDict(extra="allow")

    file: Any = None
    whatif: Any = None
    sha256: Any = None
    snapshot_sha256: Any = None


class _Recorded(Model):
    """report.json read leniently: a report of another shape is no release (`decide_release`), never an error."""

    model_config = ConfigDict(extra="allow")

    verdict: Any = None
    judged_by: _JudgedBy = _JudgedBy()

    @field_validator("judged_by", mode="before")
    @classmethod
    def _mapping_or_nothing(cls, value: Any) -> Any:
        return value if isinstance(value, dict) else {}


def releasable_run(run_dir: Path) -> ReleasableRun:
    """The run, when it may be released; else ReleaseRefused (exit 1) with the one line that says why. Not a run
    directory: InputError (exit 2)."""
    path = Path(run_dir)
    result = verification(path)
    manifest = result.manifest
    sealed = ManifestShape.model_validate(manifest).sealed  # verified: of the shape releasegate writes
    report = stored_json(path / "report.json", what="report.json")
    report = report if isinstance(report, dict) else {}
    recorded = _Recorded.model_validate(report)
    judged = recorded.judged_by
    own = judged.whatif is False and judged.sha256 is not None and judged.sha256 == judged.snapshot_sha256
    verdict = recorded.verdict
    binding = binding_of(path, manifest, whatif=str(judged.file) if judged.whatif is not False else None)
    evidence = ReleaseEvidence(
        run=str(path), sealed=sealed is not None, complete=bool(sealed and sealed.complete),
        verify_outcome=result.outcome, changes=tuple(f"{c.path} {c.change}" for c in result.change_rows()),
        not_checked=tuple(str(n) for n in result.not_hashed),
        recorded_verdict=verdict if isinstance(verdict, str) else None,
        judged_again=judged_again(path) if verdict == "PASS" and result.outcome == "unchanged" else None,
        judged_by_own_rubric=own, overrides=tuple((o.key, o.by, o.judges) for o in binding.overrides),
        allow_overrides=binding.allow_overrides)
    release = decide_release(evidence)
    if not release.allowed:
        raise ReleaseRefused(release.reason)
    return ReleasableRun(path, as_report(report, source=path / "report.json"), manifest, release.reason, binding)
