"""A run's `GateEvidence`, gathered from its record: the criteria's outcomes, the population and its cuts, the
requests behind the rates, review obligations, run health and provenance. `decision.decide_gate` decides from it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ConfigDict

from ..decision.criterion import CriterionResult, awaits_labels, relaxable
from ..model_base import Model
from ..record.decision_evidence import (
    Arm,
    GateEvidence,
    Health,
    Obligations,
    Outcome,
    Population,
    Provenance,
    Requests,
)
from ..record.evidence import answered, attempt_counts
from ..record.gate_report import ObligationsRow
from ..record.records import CaseRecord, RunInfo
from ..stats.sample_weights import sample_only
from .run_view import Attempts

__all__ = ["gate_evidence", "run_population", "run_requests", "run_arm"]


def run_population(info: RunInfo, records: list[CaseRecord]) -> Population:
    """The cases the run speaks for and its cuts (run.json `cuts`; a run from before them: its `--limit`)."""
    cuts = list(info.cuts or [])
    if info.limit and info.cases >= info.limit and not any(c.startswith("--limit") for c in cuts):
        cuts.append(f"--limit {info.limit}")  # a recorded limit is a cut, whatever `cuts` says
    return Population(planned=info.cases, evaluated=len(records), cuts=tuple(cuts))


def run_requests(records: list[CaseRecord], load_records: list[CaseRecord], ledger: Sequence[Any] = ()) -> Requests:
    tally = Attempts(**attempt_counts([*records, *load_records, *ledger]))  # the ledger's attempts were sent too
    fresh = Attempts(**attempt_counts(records, cached=False)).attempts
    return Requests(attempts=tally.attempts, failed=tally.failed, answered=sum(answered(r) for r in records),
                    cached=sum(bool(r.cached) for r in records), fresh=fresh)


def gate_evidence(info: RunInfo, records: list[CaseRecord], load_records: list[CaseRecord],
                  results: list[CriterionResult], *, review_pending: int, allow_pending: bool, problems: list[str],
                  target_error: str | None, client_lag_ms: float | None, rubric_file: str, overrides: tuple[str, ...],
                  inputs_changed: tuple[str, ...], allow_insufficient: bool,
                  unplaced_domains: tuple[str, ...] = (), unplaced_reviewed: bool = False,
                  ledger: Sequence[Any] = ()) -> GateEvidence:
    outcomes = tuple(Outcome(r.criterion.name, getattr(r.criterion, "origin", "rubric"), r.verdict,
                             str(r.cause) if r.cause else None, relaxable(r), awaits_labels(r)) for r in results)
    undecided = tuple(o.name for o in outcomes if o.verdict == "insufficient")
    return GateEvidence(
        outcomes=outcomes,
        population=run_population(info, records),
        requests=run_requests(records, load_records, ledger),
        obligations=Obligations(review_pending=review_pending > 0 and not allow_pending,
                                review_waived=review_pending > 0 and allow_pending, undecided=undecided,
                                unplaced_domains=unplaced_domains, unplaced_reviewed=unplaced_reviewed),
        health=Health(problems=tuple(problems), target_error=target_error, client_lag_ms=client_lag_ms),
        provenance=Provenance(rubric=rubric_file, overrides=overrides, inputs_changed=inputs_changed),
        allow_insufficient=allow_insufficient,
        sample_only=tuple(sample_only(records)),
    )


def run_arm(name: str, info: RunInfo, records: list[CaseRecord], load_records: list[CaseRecord], report: dict[str, Any],
            *, problems: list[str]) -> Arm:
    """A saved run as one arm of a comparison: its gate's verdict (judged again), population, requests, health
    and whether its required review was waived."""
    judged = _ArmReport.model_validate(report)
    return Arm(name=name, verdict=judged.verdict, population=run_population(info, records),
               requests=run_requests(records, load_records),
               health=Health(tuple(problems), judged.target_error, None),
               review_waived=bool(judged.obligations and judged.obligations.review_waived))


class _ArmReport(Model):
    """What an arm takes of its run's gate report."""

    model_config = ConfigDict(extra="allow")

    verdict: str
    target_error: str | None = None
    obligations: ObligationsRow | None = None
