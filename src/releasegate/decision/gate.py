"""The overall verdict of one run, from its evidence (`GateEvidence`).

TARGET_ERROR when the target failed most requests; FAIL when any criterion fails; INCONCLUSIVE when the run is
not whole, ran on part of its suites (any cut: `check --limit`, a suite's `limit:` from any layer or `--set`),
was judged on inputs that changed since, or no criterion of the rubric itself was decided; NEEDS_REVIEW while
required review is pending or when the only open criteria wait for reviewers' labels (an uncalibrated guard or
judge, approval not decided yet: a failure on an uncalibrated guard's own word is one of them, a failure on
evidence labels cannot change is a FAIL); INCONCLUSIVE when a criterion is undecided (unless `allow_insufficient` and it only
lacks samples); else PASS. A PASS with required review waived (`--allow-pending`) says so in its line.
"""

from __future__ import annotations

from ..record.decision_evidence import GateEvidence, Outcome
from .verdicts import FAIL, INCONCLUSIVE, NEEDS_REVIEW, PASS, TARGET_ERROR, Decision, decision

__all__ = ["decide_gate", "decide_capacity"]


def decide_gate(e: GateEvidence) -> Decision:
    """The run's verdict and the one line that says why (the population's cut and any waiver named)."""
    verdict, reason = _verdict(e)
    return decision(verdict, reason + _notes(e, verdict))


def _verdict(e: GateEvidence) -> tuple[str, str]:
    if e.health.target_error is not None:
        return TARGET_ERROR, e.health.target_error
    failed = [o.name for o in e.outcomes if o.verdict == "fail" and not o.awaits_labels]
    if failed:
        return FAIL, f"{len(failed)} criterion(s) failed: " + ", ".join(failed[:5])
    if e.health.problems:
        return INCONCLUSIVE, "incomplete run: " + "; ".join(e.health.problems)
    if e.provenance.inputs_changed:
        return INCONCLUSIVE, ("the inputs changed since the run (" + ", ".join(e.provenance.inputs_changed)
                              + "): the verdict would be on other inputs; run check again")
    if e.population.cut:
        return INCONCLUSIVE, (f"the run covers {e.population.evaluated} case(s) of part of the suites only "
                              f"({'; '.join(e.population.cuts)}): it speaks for that part; run without the cut")
    blocking = [o for o in e.outcomes if o.verdict != "pass" and not o.awaits_labels
                and not (e.allow_insufficient and o.relaxable)]
    waiting = [o for o in e.outcomes if o.awaits_labels and o.verdict != "pass"]
    if waiting and not blocking and not e.obligations.review_waived:
        return NEEDS_REVIEW, _awaiting_words(waiting, e.obligations.review_pending)
    if not any(o.verdict == "pass" and o.origin == "rubric" for o in e.outcomes):
        return INCONCLUSIVE, "no criterion of the rubric was decided"
    if e.obligations.review_pending:
        return NEEDS_REVIEW, "required human review is pending"
    blocking += waiting
    if blocking:
        named = [f"{o.name} ({_open_cause(o)})" for o in blocking]
        return INCONCLUSIVE, f"{len(blocking)} criterion(s) could not be decided: " + ", ".join(named[:5])
    undecided = sum(o.verdict == "insufficient" for o in e.outcomes)
    allowed = f" ({undecided} undecided, allowed by allow_insufficient)" if undecided else ""
    return PASS, f"every criterion passed{allowed}"


def _open_cause(o: Outcome) -> str:
    if o.verdict == "fail":
        return "failed on an uncalibrated guard's word"
    return o.cause or "undecided"


def _awaiting_words(waiting: list[Outcome], review_pending: bool) -> str:
    """The NEEDS_REVIEW line of a run whose only open criteria wait for reviewers' labels: what to label."""
    named = ", ".join(f"{o.name} ({_open_cause(o)})" for o in waiting[:5])
    more = f" and {len(waiting) - 5} more" if len(waiting) > 5 else ""
    pending = "required human review is pending; " if review_pending else ""
    return (f"{pending}{len(waiting)} criterion(s) wait for reviewers' labels: {named}{more}; label the review CSV "
            "(releasegate review export RUN_DIR: label, reviewer, and the forbidden column for a guard), then "
            "review import and gate")


def _notes(e: GateEvidence, verdict: str) -> str:
    notes = []
    if e.obligations.review_waived and verdict == PASS:
        notes.append("required human review waived (--allow-pending): not reviewed")
    if e.sample_only:
        notes.append(f"rates of {', '.join(e.sample_only)} describe the sample only, not its source "
                     "(sample.estimate: sample)")
    if e.population.cut and verdict != INCONCLUSIVE:
        notes.append(e.population.describe())
    if e.requests.cached and verdict == PASS:
        notes.append(f"{e.requests.cached} of {e.population.evaluated} answers reused from the response cache")
    if e.obligations.unplaced_domains:  # a high-risk domain it cannot recognise would go unreviewed: say so
        named = ", ".join(repr(d) for d in e.obligations.unplaced_domains[:5])
        more = f" and {len(e.obligations.unplaced_domains) - 5} more" if len(e.obligations.unplaced_domains) > 5 else ""
        how = "reviewed as required (review.unplaced_domains: require)" if e.obligations.unplaced_reviewed else \
            "not reviewed unless required: list them in review.required_domains or set review.unplaced_domains: require"
        notes.append(f"domain value(s) {named}{more} not known as high-risk or not: {how}")
    if e.provenance.overrides:
        notes.append("--set " + ", ".join(e.provenance.overrides))
    return "".join(f"; {n}" for n in notes)




def decide_capacity(capacity_rps: float | None, why: str) -> Decision:
    """`releasegate capacity`: PASS when the sweep established a capacity, else INCONCLUSIVE with the sweep's why."""
    if capacity_rps is None:
        return decision(INCONCLUSIVE, why or "the sweep established no capacity")
    return decision(PASS, why or f"capacity {capacity_rps:.4g} req/s")
