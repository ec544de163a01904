"""The LLM judge in the reports: one line per judge criterion, and its calibration table (every format)."""

from __future__ import annotations

from typing import Any

from ..record.capacity_sweep import Number
from ..record.report_sections import JudgeCalibration, JudgeSection
from ..review.agreement import kappa_words
from .formatting import format_money, format_value
from .paired_models import read_section

__all__ = ["judge_lines", "calibration_table"]

COLUMNS = ("criterion", "slice", "labels", "agreement", "lower bound", "kappa", "judge pass / reviewer reject",
           "judge fail / reviewer approve", "calibrated")


def judge_lines(judge: JudgeSection | None) -> list[str]:
    """'judge: MODEL: 60 of 60 judged, 0 errors, 60 calls, cost $...' and one calibration line per criterion."""
    if not judge:
        return []
    errors = ", ".join(f"{n} {kind}" for kind, n in sorted(judge.errors.items())) or "no errors"
    cost = f", cost {format_money(judge.cost_usd)}" if judge.cost_usd is not None else ""
    tokens = judge.tokens
    lines = [f"judge: {judge.model}: {judge.judged} of {judge.cases} judged ({errors}), "
             f"{judge.calls} calls, {judge.cached} cached, {tokens.get('input', 0)} + "
             f"{tokens.get('output', 0)} tokens{cost} (apart from the model's)"]
    for name, row in judge.calibration.items():
        state = "calibrated" if row.calibrated else "NOT calibrated"
        lines.append(f"judge criterion '{name}': {state}: {row.why}")
    for name, p in judge.pairwise.items():
        rate = p.order_inconsistency_rate
        shown = "—" if rate is None else f"{rate:.3g}"
        lines.append(f"judge criterion '{name}' vs baseline: {p.win} win, {p.loss} loss, {p.tie} tie, "
                     f"{p.inconsistent} order-inconsistent, {p.not_judged} not judged of {p.compared} "
                     f"(order inconsistency {shown}{'' if p.consistent else ': pairwise criteria undecided'})")
    return lines


def calibration_table(judge: JudgeSection | None) -> tuple[tuple[str, ...], list[list[str]]] | None:
    """(columns, rows): each judge criterion over the whole run, then its slices."""
    if not judge or not judge.calibration:
        return None
    rows = []
    for name, row in judge.calibration.items():
        rows.append(_cells(name, "all", row, "yes" if row.calibrated else "no"))
        rows += [_cells(name, s, r, "") for s, r in sorted(row.slices.items())]
    return COLUMNS, rows


def _cells(name: str, slice_: str, row: JudgeCalibration, calibrated: str) -> list[str]:
    c = row.confusion
    return [name, slice_, str(row.labels), format_value(row.agreement),
            format_value(row.agreement_lower),
            kappa_words(row.kappa, row.agreement_sample, row.kappa_prevalence, short=True) if row.labels else "—",
            str(c.get("judge_pass_reviewer_reject", 0)), str(c.get("judge_fail_reviewer_approve", 0)), calibrated]


def guard_lines(guard: dict[str, Any] | None) -> list[str]:
    """One line per guard model and category it decides: calibrated or not, its miss and false-alarm rates against
    the reviewers' forbidden labels with their upper bounds."""
    out = []
    for name, given in (guard or {}).items():
        from .run_models import GuardRow

        row = read_section(GuardRow, given, f"guard.{name}")
        state = "calibrated" if row.calibrated else f"NOT calibrated (min_labels {row.min_labels})"
        out.append(f"guard {name}: {state}, {row.labelled} labelled repl(ies) it judged")
        for c in row.categories:
            out.append(f"  {c.category}: missed {_share(c.misses, c.positives, c.miss_bounds)}, "
                       f"false alarms {_share(c.false_alarms, c.negatives, c.false_alarm_bounds)}")
    return out


def _share(k: Number, n: Number, bounds: Any) -> str:
    if not n:
        return "0 of 0"
    return f"{k} of {n} ({k / n:.2f}, upper bound {bounds[1]:.2f})"
