"""Non-inferiority: a candidate against a reference, on the pairs both answered (`ComparisonEvidence`).

Rules, once for `compare`, a rubric's `baseline:`, `servers`' parity and the served variants' parity:
- only pairs both arms answered count, for every metric; an arm's failed requests are its own error rate, gated on
  their own (a candidate whose target failed is TARGET_ERROR; a reference that failed most requests decides nothing);
- the reference must itself be whole and measured (and, for a choice, PASS its own gate) before anything is
  "non-inferior" to it;
- a comparison on part of the suites (either arm cut, or pairs covering less than `min_share` of the reference's
  cases) speaks for that part only: INCONCLUSIVE;
- any regression fails; nothing compared, a metric undecided or a case changed under the same id is INCONCLUSIVE.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..record.decision_evidence import Arm, ComparisonEvidence
from ..record.metrics import MetricValue
from .criterion import CriterionResult, CriterionVerdict, Undecided
from .verdicts import FAIL, INCONCLUSIVE, PASS, TARGET_ERROR, Decision, decision, worst

__all__ = ["compared_result", "row_word", "decide_comparison", "pairs_verdict", "matrix_decision", "quality_row_verdict", "non_inferiority",
           "latency_non_inferiority"]


def pairs_verdict(metric_verdicts: Iterable[tuple[str, str]], pairs: int, changed: int) -> str:
    """The verdict of the paired rows alone: FAIL on any regression, INCONCLUSIVE when nothing was compared, a
    metric is undecided or a case changed under its id, else PASS."""
    verdicts = {v for _, v in metric_verdicts}
    if "fail" in verdicts:
        return FAIL
    if not pairs or not verdicts or "insufficient" in verdicts or changed:
        return INCONCLUSIVE
    return PASS


def decide_comparison(e: ComparisonEvidence) -> Decision:
    """The comparison's verdict and why: the pairs' verdict, unless an arm keeps it from standing."""
    if e.candidate.health.target_error is not None:
        return decision(TARGET_ERROR, f"{e.candidate.name}: {e.candidate.health.target_error}")
    verdict = pairs_verdict(e.metric_verdicts, e.pairs, e.changed)
    if verdict == FAIL:
        return decision(FAIL, "the candidate is worse than the reference beyond the margin")
    problems = _reference_problems(e.reference, e.require_reference_pass) + _candidate_problems(e.candidate)
    share = e.pairs / e.reference_cases if e.reference_cases else 0.0
    if e.min_share and share < e.min_share:
        problems.append(f"the pairs both answered cover {share:.0%} of the reference's {e.reference_cases} cases "
                        f"(at least {e.min_share:.0%} needed)")
    if problems:
        return decision(INCONCLUSIVE, "; ".join(problems))
    if verdict != PASS:
        return decision(verdict, f"not shown non-inferior on {e.pairs} pair(s) both arms answered")
    return decision(PASS, f"non-inferior on {e.pairs} pair(s) both arms answered")


def _reference_problems(ref: Arm, require_pass: bool) -> list[str]:
    problems = [f"{ref.name}: {p}" for p in ref.health.problems]
    if ref.health.target_error is not None:
        problems.append(f"{ref.name} measured nothing: {ref.health.target_error}")
    if ref.population.cut:
        problems.append(f"{ref.name} ran {ref.population.describe()}")
    if require_pass and ref.verdict != PASS:
        problems.append(f"{ref.name}: its own gate said {ref.verdict}")
    return problems


def _candidate_problems(cand: Arm) -> list[str]:
    problems = [f"{cand.name}: {p}" for p in cand.health.problems]
    if cand.population.cut:
        problems.append(f"{cand.name} ran {cand.population.describe()}")
    return problems


def matrix_decision(rows: Sequence[Mapping[str, Any]]) -> Decision:
    """The matrix: the worst of every variant's own gate verdict and its quality comparison with the reference
    (each row: `verdict` and `quality_verdict`, 'pass' | 'fail' | 'insufficient')."""
    verdicts = []
    for row in rows:
        verdicts.append(row["verdict"])
        verdicts.append({"fail": FAIL, "insufficient": INCONCLUSIVE}.get(row["quality_verdict"], PASS))
    verdict = worst(verdicts)
    if not rows:
        return decision(INCONCLUSIVE, "no variant ran")
    return decision(verdict, f"the worst of {len(rows)} variant(s)' gates and quality comparisons: {verdict}")


def quality_row_verdict(metric_verdicts: Iterable[tuple[str, str]], pairs: int, changed: int) -> str:
    """A matrix row's quality against the reference: 'pass', 'fail' or 'insufficient'."""
    return str(row_word(pairs_verdict(metric_verdicts, pairs, changed)))


def row_word(verdict: str) -> CriterionVerdict:
    """A run-level verdict said of one row or criterion: PASS 'pass', FAIL 'fail', anything else 'insufficient'
    (the one map between the two vocabularies)."""
    words: dict[str, CriterionVerdict] = {PASS: CriterionVerdict.PASS, FAIL: CriterionVerdict.FAIL}
    return words.get(verdict, CriterionVerdict.INSUFFICIENT)



def non_inferiority(n: float, loss_lo: float, loss_hi: float, margin: float, needed: int | None, *,
                    weighted: bool = False) -> tuple[str, str]:
    """A paired rate's row, on the one-sided bounds of the loss (how much worse the candidate is): a regression
    when even the lower bound is past the margin, non-inferior when the upper bound is within it on at least
    `needed` cases (`weighted`: `n` is the effective n of a weighted sample's shared cases)."""
    if loss_lo > margin:
        return "fail", ""
    if needed is None:
        return "insufficient", f"a margin of {margin:g} can never be shown by a bound: set a margin above 0"
    if n < needed:
        what = f"an effective n of {n:.1f} (population-weighted)" if weighted else f"{n} shared case(s)"
        return "insufficient", f"{what}: at least {needed} are needed before this margin can be shown"
    if loss_hi <= margin:
        return "pass", ""
    return "insufficient", f"the bound {loss_hi:.4g} on the loss is past the margin {margin:g}: more shared cases are needed"


def latency_non_inferiority(pairs: int, interval: Sequence[float] | None, margin: float, min_pairs: int
                            ) -> tuple[str, str]:
    """A paired latency row: undecided below `min_pairs` (the bootstrap bound's coverage does not hold yet), a
    regression when the interval lies past the margin, non-inferior when it lies within it."""
    if pairs < min_pairs:
        return "insufficient", f"{pairs} paired timings: at least {min_pairs} are needed"
    if interval is None:
        return "insufficient", "no interval on the paired timings"
    if interval[0] > margin:
        return "fail", ""
    if interval[1] <= margin:
        return "pass", ""
    return "insufficient", ""


def compared_result(criterion: Any, value: MetricValue, row_verdict: str, reason: str, needed_n: int | None
                    ) -> CriterionResult:
    """A paired row of the baseline comparison (its verdict decided by `non_inferiority`) as a gate criterion."""
    verdict = CriterionVerdict(row_verdict)
    if verdict == CriterionVerdict.INSUFFICIENT:
        return CriterionResult(criterion, value, verdict, reason, needed_n, Undecided.BASELINE)
    return CriterionResult(criterion, value, verdict, reason)
