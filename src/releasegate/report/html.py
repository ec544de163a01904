"""report.html: one self-contained page for people (verdict, criteria, slices, latency plots, cost, cases).

Model outputs are untrusted text. The page is a jinja2 template with autoescape on, so every value is escaped;
it is written as Python ahead of time (report_page.py, by scripts/compile_templates.py), so rendering it loads no
jinja2. The only markup not written by the template is the plots' SVG (plots.py writes the latency plots, escaping
every label; matplotlib draws a sweep's and a probe's), which holds no run text. Every value the template prints
also passes through `inert` first (the environment's `finalize`, `page_runtime.finalized`): control, bidi and
surrogate characters, which HTML cannot hold or which reorder what the reader sees, are shown as visible
stand-ins. A Content-Security-Policy forbids every script and every fetch, so even a missed escape could not run
code or call out. Filtering the case table to failures is pure CSS (a checkbox), so the page needs no script at
all.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from markupsafe import Markup

from ..inputs.scale_config import computed_words
from ..record.capacity_sweep import CapacitySweep
from ..record.gate_report import CriterionRow, GateReport, MetricRow
from ..record.metrics import KNOWN_METRICS, is_phased
from ..record.report_sections import JudgeSection, ReviewRow
from .baseline_section import baseline_line, comparison_view
from .cache_probe_plot import cache_probe_plot
from .cache_probe_section import cache_probe_lines, cache_probe_table, wrong_hit_lines
from .capacity_plots import capacity_plots
from .capacity_section import capacity_lines, capacity_table, prefix_cache_lines
from .feature_sections import section_tables
from .formatting import (
    CSP,
    bounds_note,
    format_interval,
    format_money,
    format_threshold,
    format_value,
    latency_source_text,
    load_phase_rows,
)
from .judge_section import calibration_table, guard_lines, judge_lines
from .page_runtime import breakable
from .plots import latency_plots
from .report_page import render as render_page
from .review import kappa_cell
from .stability_section import draw_table, flip_table_rows, stability_lines
from .stopping_plot import sequence_figures
from .terminal import answered_words, judged_by_line, request_summary, whatif_of
from .view import CaseRow, RunView

__all__ = ["render_html", "CSP", "breakable"]

OUTPUT_PREVIEW = 280
OUTPUT_MAX = 4000
MAX_CASE_ROWS = 500  # failing cases first; report.csv has every case
_HEADLINE = (
    ("accuracy", "accuracy", "pct"), ("format_compliance", "format compliance", "pct"),
    ("forbidden_rate", "forbidden responses", "pct"), ("error_rate", "errors", "pct"),
    ("ttft_ms_p95", "TTFT P95", "ms"), ("e2e_ms_p95", "E2E P95", "ms"),
    ("output_tokens_per_s", "output tokens/s", "num"), ("cost_per_1m_output_tokens", "$ per 1M output tokens", "usd"),
)
_LATENCY = (
    ("ttft_ms", "TTFT: time to first token (prefill)"), ("tpot_ms", "TPOT: time per output token (decode)"),
    ("itl_ms", "ITL: inter-token latency"), ("e2e_ms", "E2E: end-to-end latency"),
    ("send_lag_ms", "send lag: scheduled → actual send"), ("ttft_sched_ms", "TTFT from the scheduled send"),
    ("e2e_sched_ms", "E2E from the scheduled send"),
)


def render_html(view: RunView) -> str:
    report, info = view.gate_report, view.info
    shown, n_cases, n_failing = _shown_cases(view)

    return render_page(dict(
        csp=CSP, css=Markup(_resource("report.css")), report=report, info=info,
        judged_by=judged_by_line(report), whatif=whatif_of(report),
        verdict=report.verdict, verdict_class=report.verdict.lower().replace("_", "-"),
        failed_criteria=[c for c in report.criteria if c.verdict == "fail"],
        headline=_headline(report.metrics, latency_source_text(report)),
        criteria=[_criterion(c, latency_source_text(report)) for c in report.criteria],
        bounds_note=bounds_note(report.criteria), requests=request_summary(report),
        answered=answered_words(report.counts) if report.counts else "",
        latency=_latency_rows(report.metrics),
        plots={k: Markup(v) for k, v in latency_plots(view.latency_samples(), view.prefill_decode(), report.criteria).items()},
        latency_source=latency_source_text(report), slices_source=latency_source_text(report, slices=True),
        load_phase=_load_phase_table(report.load_phase),
        capacity=_capacity(report.capacity), prefix_cache=_prefix_cache(report.prefix_cache),
        response_cache=_response_cache(report.response_cache_probe),
        cost=_cost(view),
        slices=_slices(report.slices),
        metrics=[(name, m, KNOWN_METRICS.get(name, ("", ""))[1], is_phased(name)) for name, m in report.metrics.items()],
        comparison=comparison_view(_comparison(report)), other_comparison=_other_comparison(report),
        baseline=baseline_line(report.comparison), computed=computed_words(report.computed),
        review=_review_table(_review(report)),
        judge=_judge(report.judge),
        guard_lines=[line.strip() for line in guard_lines(report.guard)],
        feature_sections=section_tables(report),
        sequences=[{**f, "svg": Markup(f["svg"])} for f in sequence_figures(report.confidence_sequences)],
        stability=_stability(report),
        review_pending=_review_pending(report),
        cases=[_case(c) for c in shown],
        n_cases=n_cases, n_failing=n_failing, n_hidden=n_cases - len(shown),
    ))


def _shown_cases(view: RunView) -> tuple[list[CaseRow], int, int]:
    """The rows the page lists (failing cases first, MAX_CASE_ROWS in all, in the run's order), the number of
    cases and of failing cases. Rows are read one at a time and only the listed ones kept: memory stays flat
    in the number of cases."""
    kept: dict[bool, list[tuple[int, CaseRow]]] = {False: [], True: []}
    n_cases = n_failing = 0
    for n_cases, row in enumerate(view.cases(), start=1):
        n_failing += not row.passed
        if len(kept[row.passed]) < MAX_CASE_ROWS:
            kept[row.passed].append((n_cases, row))
    shown = (kept[False] + kept[True])[:MAX_CASE_ROWS]
    return [row for _, row in sorted(shown, key=lambda pair: pair[0])], n_cases, n_failing


def _resource(name: str) -> str:
    return (resources.files(__package__) / "templates" / name).read_text("utf-8")


def _comparison(report: GateReport) -> Any:
    """The baseline comparison; a report.json from elsewhere may hold it as `baseline` or `variants`."""
    extra = report.model_extra or {}
    return next((v for v in (report.comparison, extra.get("baseline"), extra.get("variants")) if v), None)


def _other_comparison(report: GateReport) -> dict[str, Any] | None:
    """A comparison of a shape other than the baseline comparison's, as a generic table."""
    found = _comparison(report)
    return None if comparison_view(found) is not None else _as_table(found)


def _headline(metrics: dict[str, MetricRow], source: str) -> list[dict[str, Any]]:
    out = []
    for name, label, kind in _HEADLINE:
        m = metrics.get(name)
        if m is None or m.value is None:
            continue
        value = m.value
        text = {"pct": f"{value:.1%}", "ms": f"{value:,.0f} ms" if value >= 100 else f"{value:.3g} ms",
                "usd": format_money(value), "num": format_value(value)}[kind]
        bounds = m.interval
        if bounds and kind == "pct":
            interval = f"{bounds[0]:.1%}–{bounds[1]:.1%}"
        else:
            interval = format_interval(bounds)
        if interval:  # the bounds' real confidence, each side one-sided
            interval = f"one-sided {0.95 if m.confidence is None else m.confidence:.0%} bounds {interval}"
        out.append({"label": label, "value": text, "n": m.n, "interval": interval,
                    "source": source if is_phased(name) else ""})
    return out


def _criterion(c: CriterionRow, source: str) -> dict[str, Any]:
    where = ", ".join(f"{k}={v}" for k, v in (c.slice or {}).items())
    return {"row": c, "name": c.name, "metric": c.metric, "value": c.value, "n": c.n, "verdict": c.verdict,
            "reason": c.reason, "where": where, "source": source if is_phased(c.metric) else "",
            "threshold_text": format_threshold(c), "interval_text": format_interval(c.interval or c.bounds)}


def _latency_rows(metrics: dict[str, MetricRow]) -> list[dict[str, Any]]:
    """The latency percentiles the report has, one row per measure (P50/P95/P99; '—' where not reported)."""
    rows = []
    for key, label in _LATENCY:
        found = {q: metrics[f"{key}_p{q}"] for q in (50, 95, 99) if f"{key}_p{q}" in metrics}
        if not found or all(m.value is None for m in found.values()):
            continue
        values = [found[q].value if q in found else None for q in (50, 95, 99)]
        rows.append({"label": label, "values": values, "n": max(m.n for m in found.values())})
    return rows


def _cost(view: RunView) -> dict[str, Any]:
    metrics, info = view.gate_report.metrics, view.info
    timed = view.timed_figures  # the answered timed requests, read once
    return {
        "config": info.cost,
        "per_1m": metrics.get("cost_per_1m_output_tokens"),
        "total": metrics.get("cost_usd_total"),
        "input_tokens": timed.input_tokens,
        "output_tokens": timed.output_tokens,
        "generation_seconds": info.generation_seconds,
        "load_seconds": info.load_seconds,
        "throughput": metrics.get("output_tokens_per_s"),
    }


def _slices(rows: list[dict[str, Any]]) -> dict[str, Any]:
    if not rows:
        return {"columns": [], "rows": [], "timed": False}
    columns = [k for k in rows[0] if k not in ("slice", "n")]
    timed = any(is_phased(k) and row.get(k) is not None for row in rows for k in columns)  # latency to label
    return {"columns": columns, "rows": rows, "timed": timed}


def _judge(judge: JudgeSection | None) -> dict[str, Any] | None:
    if not judge:
        return None
    table = calibration_table(judge)
    columns, rows = table if table else ((), [])
    return {"lines": judge_lines(judge), "columns": columns, "rows": rows}


def _stability(report: GateReport) -> dict[str, Any] | None:
    """The stable-answers section: its lines and the two tables (`stability_section`)."""
    if report.stability is None:
        return None
    tables = [(title, *table) for title, table in (("Repeated draws", draw_table(report)),
                                                   ("Answers under load", flip_table_rows(report))) if table[1]]
    return {"lines": stability_lines(report), "tables": tables}


def _review(report: GateReport) -> dict[str, Any] | None:
    """The review section (one row per slice, "all" first), unless review neither applies nor happened."""
    review = report.review
    if not report.review_rows:
        return review or None  # a report.json from elsewhere: shown as it is
    return review if "all" in review and report.review_rows["all"].status != "not required" else None


def _review_pending(report: GateReport) -> bool:
    return "all" in report.review_rows and report.review_rows["all"].status.startswith("pending")


_REVIEW_COLUMNS = {"status": "status", "cases": "cases", "needed": "needed", "reviewed": "reviewed",
                   "approved": "approved", "rejected": "rejected", "approval": "approval weighted by outcome",
                   "min_approval": "min", "kappa": "kappa (auto vs human)"}


def _review_table(review: dict[str, Any] | None) -> dict[str, Any] | None:
    """Review per slice, the columns a reader needs (report.json keeps them all); required slices marked *."""
    if not review:
        return None
    if not all(isinstance(row, ReviewRow) for row in review.values()):
        return _as_table(review)  # a report.json from elsewhere: show whatever it holds
    rows = [[f"{name} *" if row.required and name != "all" else name,
             *(kappa_cell(row.model_dump()) if k == "kappa" else _cell(getattr(row, k)) for k in _REVIEW_COLUMNS)]
            for name, row in review.items()]
    return {"columns": ["slice (* required)", *_REVIEW_COLUMNS.values()], "rows": rows}


def _capacity(capacity: CapacitySweep | None) -> dict[str, Any] | None:
    """The sweep's lines, step table and plots (latency vs rate, signals vs rate); None without a sweep."""
    if not capacity:
        return None

    columns, rows = capacity_table(capacity)
    return {"lines": capacity_lines(capacity), "columns": columns, "rows": rows,
            "plot": Markup(capacity_plots(capacity).get("capacity", ""))}


def _prefix_cache(probe: dict[str, Any] | None) -> list[str]:
    return prefix_cache_lines(probe)


def _response_cache(probe: Any) -> dict[str, Any] | None:
    """The response-cache probe's lines, a row per threshold and the most dangerous wrong hits; None without it."""
    if probe is None:
        return None
    columns, rows = cache_probe_table(probe)
    return {"lines": cache_probe_lines(probe), "columns": columns, "rows": rows,
            "wrong": wrong_hit_lines(probe, limit=10), "plot": Markup(cache_probe_plot(probe))}


def _load_phase_table(load_phase: dict[str, Any] | None) -> dict[str, Any] | None:
    rows = load_phase_rows(load_phase)
    return {"columns": ["", "value"], "rows": [list(r) for r in rows]} if rows else None


def _as_table(obj: Any) -> dict[str, Any] | None:
    """A comparison or review section of the report (shape defined by the feature that writes it) as a table."""
    if not obj:
        return None
    if isinstance(obj, list) and all(isinstance(r, dict) for r in obj):
        columns = list(dict.fromkeys(k for r in obj for k in r))
        return {"columns": columns, "rows": [[_cell(r.get(k)) for k in columns] for r in obj]}
    if isinstance(obj, dict) and all(isinstance(v, dict) for v in obj.values()):
        columns = list(dict.fromkeys(k for v in obj.values() for k in v))
        return {"columns": ["", *columns], "rows": [[k, *(_cell(v.get(c)) for c in columns)] for k, v in obj.items()]}
    if isinstance(obj, dict):
        return {"columns": ["", "value"], "rows": [[k, _cell(v)] for k, v in obj.items()]}
    return {"columns": ["value"], "rows": [[_cell(obj)]]}


def _cell(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return format_value(value)


def _case(c: CaseRow) -> dict[str, Any]:
    return {
        "row": c, "tags": [f"{k}={v}" for k, v in c.tags.items()],
        "input": _folded(c.input), "expected": _folded(c.expected), "output": _folded(c.output or ""),
    }


def _folded(text: str) -> dict[str, Any]:
    """A long text as a preview with the rest (up to OUTPUT_MAX) behind a <details> toggle: no script needed."""
    if len(text) <= OUTPUT_PREVIEW:
        return {"preview": text, "full": None, "chars": len(text)}
    return {"preview": text[:OUTPUT_PREVIEW] + "…", "full": text[:OUTPUT_MAX] + ("…" if len(text) > OUTPUT_MAX else ""),
            "chars": len(text)}
