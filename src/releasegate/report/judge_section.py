"""The LLM judge in the reports: one line per judge criterion, and its calibration table (every format)."""

from __future__ import annotations

from .formatting import format_money, format_value

__all__ = ["judge_lines", "calibration_table"]

COLUMNS = ("criterion", "slice", "labels", "agreement", "lower bound", "kappa", "judge pass / reviewer reject",
           "judge fail / reviewer approve", "calibrated")


def judge_lines(judge: dict | None) -> list[str]:
    """'judge: MODEL: 60 of 60 judged, 0 errors, 60 calls, cost $...' and one calibration line per criterion."""
    if not judge:
        return []
    errors = ", ".join(f"{n} {kind}" for kind, n in sorted((judge.get("errors") or {}).items())) or "no errors"
    cost = f", cost {format_money(judge['cost_usd'])}" if judge.get("cost_usd") is not None else ""
    tokens = judge.get("tokens") or {}
    lines = [f"judge: {judge.get('model')}: {judge.get('judged', 0)} of {judge.get('cases', 0)} judged ({errors}), "
             f"{judge.get('calls', 0)} calls, {judge.get('cached', 0)} cached, {tokens.get('input', 0)} + "
             f"{tokens.get('output', 0)} tokens{cost} (apart from the model's)"]
    for name, row in (judge.get("calibration") or {}).items():
        state = "calibrated" if row.get("calibrated") else "NOT calibrated"
        lines.append(f"judge criterion '{name}': {state}: {row.get('why')}")
    for name, row in (judge.get("pairwise") or {}).items():
        rate = row.get("order_inconsistency_rate")
        shown = "—" if rate is None else f"{rate:.3g}"
        lines.append(f"judge criterion '{name}' vs baseline: {row['win']} win, {row['loss']} loss, {row['tie']} tie, "
                     f"{row['inconsistent']} order-inconsistent, {row['not_judged']} not judged of {row['compared']} "
                     f"(order inconsistency {shown}{'' if row.get('consistent') else ': pairwise criteria undecided'})")
    return lines


def calibration_table(judge: dict | None) -> tuple[tuple[str, ...], list[list[str]]] | None:
    """(columns, rows): each judge criterion over the whole run, then its slices."""
    if not judge or not judge.get("calibration"):
        return None
    rows = []
    for name, row in judge["calibration"].items():
        rows.append(_cells(name, "all", row, "yes" if row.get("calibrated") else "no"))
        rows += [_cells(name, s, r, "") for s, r in sorted((row.get("slices") or {}).items())]
    return COLUMNS, rows


def _cells(name: str, slice_: str, row: dict, calibrated: str) -> list[str]:
    c = row.get("confusion") or {}
    return [name, slice_, str(row.get("labels", 0)), format_value(row.get("agreement")),
            format_value(row.get("agreement_lower")), format_value(row.get("kappa")),
            str(c.get("judge_pass_reviewer_reject", 0)), str(c.get("judge_fail_reviewer_approve", 0)), calibrated]
