"""Reports from the judged run: report.json (machines), report.md (people), a rich table (terminal)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from .metrics import KNOWN_METRICS
from .record import RunDir

__all__ = ["write_reports", "criteria_table", "render_markdown", "format_value"]

_STYLE = {"PASS": "bold green", "FAIL": "bold red", "NEEDS_REVIEW": "bold yellow", "INCONCLUSIVE": "bold yellow"}
_CELL = {"pass": "green", "fail": "red", "insufficient": "yellow"}


def write_reports(run: RunDir, report: dict) -> None:
    run.write_json("report.json", report)
    run.write_text("report.md", render_markdown(report))


def format_value(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e5 else f"{value:,.0f}"
    return str(value)


def criteria_table(report: dict) -> Table:
    """The gate as a rich table: criterion, value, threshold, n, verdict."""
    verdict = report["verdict"]
    table = Table(title=Text(f"releasegate: {verdict}", style=_STYLE[verdict]), title_justify="left")
    for col, kw in (("criterion", {"no_wrap": True}), ("value", {"justify": "right"}), ("threshold", {"justify": "right"}),
                    ("n", {"justify": "right"}), ("verdict", {}), ("why", {"overflow": "fold"})):
        table.add_column(col, **kw)
    for c in report["criteria"]:
        table.add_row(
            c["name"], format_value(c["value"]), f"{c['op']} {c['threshold']:g}", str(c["n"]),
            Text(c["verdict"], style=_CELL[c["verdict"]]), c.get("reason", ""),
        )
    return table


def _md_cell(text) -> str:
    # model output is untrusted: one line, no table breaks, no HTML
    text = str(text).replace("\r", " ").replace("\n", " ").replace("|", "\\|")
    return text.replace("<", "&lt;").replace(">", "&gt;").replace("`", "'")


def render_markdown(report: dict) -> str:
    lines = [
        f"# releasegate: **{report['verdict']}** (exit {report['exit_code']})",
        "",
        f"- run: `{report['run_id']}`",
        f"- target: {_md_cell(report['target'])}",
        f"- rubric: {_md_cell(report['rubric'])}",
        f"- cases: {report['counts']['cases']} ({report['counts']['succeeded']} succeeded)",
        "",
        "## Criteria",
        "",
        "| criterion | metric | value | threshold | n | verdict |",
        "|---|---|---:|---:|---:|---|",
    ]
    for c in report["criteria"]:
        lines.append(
            f"| {_md_cell(c['name'])} | {c['metric']} | {format_value(c['value'])} | {c['op']} {c['threshold']:g} "
            f"| {c['n']} | {c['verdict']} |"
        )
    lines += ["", "## Metrics (all cases)", "", "| metric | value | n | 95% interval | meaning |", "|---|---:|---:|---|---|"]
    for name, m in report["metrics"].items():
        interval = "" if "interval" not in m else f"[{m['interval'][0]:.3g}, {m['interval'][1]:.3g}]"
        lines.append(f"| {name} | {format_value(m['value'])} | {m['n']} | {interval} | {KNOWN_METRICS[name][1]} |")
    lines += _slice_lines(report) + _failure_lines(report)
    return "\n".join(lines) + "\n"


def _slice_lines(report: dict) -> list[str]:
    if not report["slices"]:
        return []
    cols = [k for k in report["slices"][0] if k not in ("slice", "n")]
    lines = ["", "## Slices", "", "| slice | n | " + " | ".join(cols) + " |", "|---|---:|" + "---:|" * len(cols)]
    for row in report["slices"]:
        lines.append(f"| {_md_cell(row['slice'])} | {row['n']} | " + " | ".join(format_value(row[c]) for c in cols) + " |")
    return lines


def _failure_lines(report: dict) -> list[str]:
    failing = report["failing_cases"]
    if not failing:
        return []
    lines = ["", f"## Failing cases (first {len(failing)})", "", "| case | suite | why | output |", "|---|---|---|---|"]
    for f in failing:
        lines.append(f"| {_md_cell(f['case_id'])} | {f['suite']} | {_md_cell('; '.join(f['why']))} | {_md_cell(f['output'][:120])} |")
    return lines
