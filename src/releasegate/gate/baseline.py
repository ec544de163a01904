"""A rubric's `baseline:`: this run compared, case by case, with a run it must not regress from, and each
compared metric as a gate criterion. Baseline criteria never make a PASS on their own (docs/guarantees.md "What a PASS
guarantees")."""

from __future__ import annotations

from typing import Any

from ..decision.comparison import compared_result
from ..decision.criterion import CriterionResult, Undecided, undecided
from ..errors import ReleasegateError
from ..inputs.rubric import Criterion, Rubric
from ..record.judge_verdicts import Verdicts
from ..record.metrics import MetricValue
from ..record.records import CaseRecord, RunDir, RunInfo
from .baseline_run import SavedBaseline, read_baseline
from .baseline_spec import baseline_spec
from .blessed_baseline import blessed_standing
from .comparability import (
    BASELINE_PARTS,
    baseline_problems,
    coverage_problem,
    guard_problem,
    saved_settings_key,
    settings_problem,
)
from .comparison_rows import Comparison, ComparisonRow
from .paired_comparison import Margins, changed_note, compare_records
from .run_view import stopping_of_run
from .stability import CaseDraws

__all__ = ["baseline_comparison", "comparison_results", "row_criterion", "comparison_margins", "standing_problems"]


def baseline_comparison(rubric: Rubric, records: list[CaseRecord], verdicts: Verdicts | None = None,
                        info: RunInfo | None = None, drawn: CaseDraws | None = None,
                        saved: SavedBaseline | None = None, *, planned: list[str] | None = None,
                        level_share: float = 1.0) -> dict[str, Any] | None:
    """The comparison with the rubric's `baseline:` run, with why that run proves nothing about this one (none
    when it stands); None without a baseline. `drawn`: this run's repeated draws (`stability.case_draws`): the
    quality rates are then compared per draw, each case's share of its draws paired with the baseline's. `saved`:
    the baseline run as the gate read it once (`GateContext.baseline_run`). `planned`: the case ids a run that may
    stop planned to ask (the baseline's coverage is of those, not of the prefix asked); `level_share`: the share
    of the comparison's alpha its fixed-size bounds spend (a run that may stop spends the rest on e-processes)."""
    if not rubric.baseline:
        return None

    spec = baseline_spec(rubric.baseline)
    margins = comparison_margins(rubric, level_share)
    saved = saved if saved is not None else read_baseline(spec.run)  # `saved`: read once for the gate
    base_records, base_verdicts, base_found = saved.records, saved.verdicts, saved.draws
    comparison = compare_records(base_records, records, rubric.forbidden, margins,
                                 base_verdicts=base_verdicts, cand_verdicts=verdicts,
                                 base_draws=base_found, cand_draws=drawn, metrics=spec.metrics or None)
    problems = standing_problems(rubric, saved, info, verdicts)
    shared = (Comparison.model_validate(comparison).shared_cases if planned is None
              else len(set(planned) & {r.case_id for r in base_records}))
    problems += [n for n in (changed_note(comparison), coverage_problem(shared, len(base_records))) if n]
    blessed: dict[str, Any] = {}
    if spec.blessed:
        found = blessed_standing(rubric.baseline, info)
        blessed = {"baseline_blessed": spec.blessed, "baseline_warnings": list(found.warnings),
                   "baseline_blessing": found.blessing}
    return {"baseline_run": spec.run, **comparison, "baseline_problems": problems, **blessed}


def comparison_margins(rubric: Rubric, level_share: float = 1.0) -> Margins:
    """The rubric's baseline margins and confidence; `level_share`: the share of its alpha the bounds spend."""
    spec = baseline_spec(rubric.baseline) if rubric.baseline else None
    confidence = 1.0 - (1.0 - (spec.confidence if spec else 0.95)) * level_share
    return Margins(margins={**Margins().margins, **(spec.margins if spec else {})}, confidence=confidence)


def standing_problems(rubric: Rubric, saved: SavedBaseline, info: RunInfo | None,
                      verdicts: Verdicts | None = None) -> list[str]:
    """Why the baseline run proves nothing about this one before any case is paired: not whole, stopped early,
    this very run, other settings or guards, a blessing that does not stand. Empty when it stands."""
    problems = _baseline_standing(saved.run, saved.records, info)
    guards = guard_problem(saved.verdicts.guards if saved.verdicts else {}, verdicts.guards if verdicts else {},
                           rubric.forbidden)
    problems += [guards] if guards else []
    if rubric.baseline and baseline_spec(rubric.baseline).blessed:
        problems += list(blessed_standing(rubric.baseline, info).problems)
    return problems


def _baseline_standing(base: RunDir, base_records: list[CaseRecord], info: RunInfo | None) -> list[str]:
    """Why the baseline run proves nothing about this one: not whole, TARGET_ERROR, this very run, or made with
    other generation settings. Empty when it stands."""
    try:
        base_info = base.read_info()
    except ReleasegateError:
        return ["the baseline run has no readable run.json: it cannot be shown whole"]
    if info is not None and (base_info.run_id, base_info.created_at) == (info.run_id, info.created_at):
        return ["the baseline is this run itself: a run is no evidence about itself"]
    problems = baseline_problems(base.path, base_info, base_records, base.read_records("load.jsonl", required=False))
    settings = settings_problem(saved_settings_key(base.path, base_info), (info and info.comparability) or {},
                                BASELINE_PARTS)
    stopped = stopping_of_run(base_info).stopped_at
    if stopped:  # its cases are the ones its e-processes stopped at: no fixed-size pairing is valid on them
        problems.append(f"it stopped when decided after {stopped} of its {base_info.cases} cases: a paired bound "
                        "on the cases its e-processes chose is not valid; compare with a run that asked its suite")
    return problems + ([settings] if settings else [])


def comparison_results(comparison: dict[str, Any]) -> list[CriterionResult]:
    """Each compared metric as a gate criterion: a regression beyond its margin fails. A comparison with nothing
    to compare (no shared cases, or none judged on any metric), or with a baseline that proves nothing (see
    `_baseline_standing`; a case whose contents differ), is one insufficient criterion, never a pass. Baseline
    criteria never make a run PASS on their own (`decision.gate`)."""
    compared = Comparison.model_validate(comparison)
    criterion = Criterion(name="baseline comparison", metric="baseline", op=">=", threshold=1, origin="baseline")
    if compared.baseline_problems:
        why = "baseline not usable: " + "; ".join(compared.baseline_problems)
        return [undecided(criterion, MetricValue(None, compared.shared_cases, note=why), why, Undecided.BASELINE)]
    if not compared.rows:
        why = (f"nothing to compare: {compared.shared_cases} case(s) shared with the baseline run "
               f"({compared.only_in_candidate} only in this run, {compared.only_in_baseline} only in the baseline)")
        return [undecided(criterion, MetricValue(None, compared.shared_cases, note=why), why, Undecided.BASELINE)]
    rows = [_baseline_row(row, compared.confidence) for row in compared.rows]
    warned = "; ".join(compared.baseline_warnings or [])
    return [r.explained(f"stale baseline: {warned}") if warned else r for r in rows]


def row_criterion(metric: str, margin: float) -> Criterion:
    """A compared metric as a criterion on the difference candidate - baseline: no worse than the margin."""
    higher = metric in ("accuracy", "format_compliance")
    return Criterion(name=f"{metric} vs baseline", metric=metric, op=">=" if higher else "<=",
                     threshold=-margin if higher else margin, origin="baseline")


def _baseline_row(row: ComparisonRow, confidence: float) -> CriterionResult:
    criterion = row_criterion(row.metric, row.margin)
    interval = (row.interval[0], row.interval[1]) if row.interval else None
    value = MetricValue(row.delta, row.n, interval, note="candidate - baseline, paired", confidence=confidence)
    p = f", McNemar p={row.p_value:.3g}" if row.p_value is not None else ""
    if row.delta is None:
        reason = row.note or "not compared"
    else:
        reason = f"delta {row.delta:+.4g} (baseline {row.baseline:.4g}, candidate {row.candidate:.4g}){p}"
        reason += f"; {row.note}" if row.note else ""
    return compared_result(criterion, value, row.verdict, reason, row.needed_n)
