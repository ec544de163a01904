"""report.md: the verdict in GitHub-flavoured Markdown, short enough for a PR comment or a job summary.

Model outputs are untrusted: every text cell is one line with Markdown and HTML syntax backslash-escaped, so an
output can neither break the table nor become a link, an image, a tag or an @mention.
"""

from __future__ import annotations

import os
import re
import sys

from ..metrics import KNOWN_METRICS
from ._format import format_interval, format_threshold, format_value, load_phase_rows

__all__ = ["render_markdown", "append_step_summary", "md_text", "md_code"]

FAILING_CASES_SHOWN = 10
OUTPUT_CHARS = 120
_BADGE = {"PASS": "✅", "FAIL": "❌", "NEEDS_REVIEW": "👀", "INCONCLUSIVE": "⚠️"}
_CELL = {"pass": "✅ pass", "fail": "❌ fail", "insufficient": "⚠️ insufficient"}
_SPECIAL = re.compile(r"([\\`*_{}\[\]|~!#])")


def md_text(text) -> str:
    """Untrusted text as an inert Markdown table cell: one line, markup characters escaped, no @mentions."""
    text = " ".join(str(text).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")  # no raw '<' for any renderer
    text = _SPECIAL.sub(r"\\\1", text)
    return text.replace("@", "@\u200b")  # a zero-width space after '@' keeps GitHub from notifying anyone


def md_code(text) -> str:
    """An identifier (a metric name) as a code span: nothing inside is markup; only '|' needs escaping in a table."""
    return "`" + " ".join(str(text).split()).replace("`", "'").replace("|", "\\|") + "`"


def render_markdown(report: dict) -> str:
    """The whole report: verdict, criteria, then metrics, slices and failing cases folded away."""
    counts = report["counts"]
    failed = [c for c in report["criteria"] if c["verdict"] == "fail"]
    lines = [
        f"## {_BADGE.get(report['verdict'], '')} releasegate: **{report['verdict']}** (exit {report['exit_code']})",
        "",
        f"- run: {md_text(report['run_id'])}",
        f"- target: {md_text(report['target'])}",
        f"- rubric: {md_text(report['rubric'])}",
        f"- cases: {counts['cases']} ({counts['succeeded']} succeeded"
        + (f"; {counts['cached']} from the response cache, left out of latency and throughput)" if counts.get("cached") else ")"),
        f"- criteria: {len(report['criteria']) - len(failed)} of {len(report['criteria'])} met"
        + (": failed " + ", ".join(md_text(c["name"]) for c in failed) if failed else ""),
        *_review_headline(report),
        *([f"- incomplete: {md_text(report['incomplete'])}"] if report.get("incomplete") else []),
        "",
        "### Criteria",
        "",
        "| criterion | metric | value | threshold | 95% interval | n | verdict |",
        "|---|---|---:|---:|---|---:|---|",
    ]
    for c in report["criteria"]:
        lines.append(
            f"| {md_text(c['name'])} | {md_code(c['metric'])} | {format_value(c['value'])} | {format_threshold(c)} "
            f"| {format_interval(c.get('interval'))} | {c['n']} | {_CELL[c['verdict']]} |"
        )
    lines += _metric_lines(report) + _load_lines(report) + _slice_lines(report) + _review_lines(report) + _failure_lines(report)
    return "\n".join(lines) + "\n"


def append_step_summary(markdown: str) -> None:
    """Append to the file named by GITHUB_STEP_SUMMARY (GitHub Actions' job summary), when that is set."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(markdown + "\n")
    except OSError as exc:  # the summary is a courtesy: never let it hide the verdict
        sys.stderr.write(f"warning: could not append to GITHUB_STEP_SUMMARY: {exc}\n")


def _details(summary: str, lines: list[str]) -> list[str]:
    return ["", f"<details><summary>{summary}</summary>", "", *lines, "", "</details>"]


def _metric_lines(report: dict) -> list[str]:
    rows = ["| metric | value | n | 95% interval | meaning |", "|---|---:|---:|---|---|"]
    for name, m in report["metrics"].items():
        meaning = KNOWN_METRICS[name][1] if name in KNOWN_METRICS else ""
        rows.append(f"| {md_code(name)} | {format_value(m['value'])} | {m['n']} | {format_interval(m.get('interval'))} "
                    f"| {md_text(meaning)} |")
    return _details("Metrics (all cases)", rows)


def _load_lines(report: dict) -> list[str]:
    rows = load_phase_rows(report.get("load_phase"))
    if not rows:
        return []
    return ["", "## Load phase", "", "| | |", "|---|---|"] + [f"| {label} | {md_text(text)} |" for label, text in rows]


def _slice_lines(report: dict) -> list[str]:
    if not report["slices"]:
        return []
    cols = [k for k in report["slices"][0] if k not in ("slice", "n")]
    rows = ["| slice | n | " + " | ".join(cols) + " |", "|---|---:|" + "---:|" * len(cols)]
    for row in report["slices"]:
        rows.append(f"| {md_text(row['slice'])} | {row['n']} | " + " | ".join(format_value(row[c]) for c in cols) + " |")
    return _details(f"Slices ({len(report['slices'])})", rows)


def _review_headline(report: dict) -> list[str]:
    from ..review.summary import review_headline

    line = review_headline(report.get("review"))
    return [f"- {md_text(line.split('; next:')[0])}"] if line else []


def _review_lines(report: dict) -> list[str]:
    review = report.get("review") or {}
    if not _review_headline(report):
        return []
    cols = ("status", "cases", "needed", "reviewed", "approved", "rejected", "approval", "kappa")
    rows = ["| slice | " + " | ".join(cols) + " |", "|---|---|" + "---:|" * (len(cols) - 1)]
    for name, row in review.items():
        label = f"{name} (required)" if row["required"] and name != "all" else name
        rows.append(f"| {md_text(label)} | " + " | ".join(md_text(format_value(row[c])) for c in cols) + " |")
    return _details(f"Human review ({review['all']['status']})", rows)


def _failure_lines(report: dict) -> list[str]:
    failing = report["failing_cases"]
    if not failing:
        return []
    shown = failing[:FAILING_CASES_SHOWN]
    rows = ["| case | suite | why | output |", "|---|---|---|---|"]
    for f in shown:
        output = f["output"] if len(f["output"]) <= OUTPUT_CHARS else f["output"][:OUTPUT_CHARS] + "…"
        rows.append(f"| {md_text(f['case_id'])} | {md_text(f['suite'])} | {md_text('; '.join(f['why']))} | {md_text(output)} |")
    title = f"Failing cases (first {len(shown)})" if len(shown) < len(failing) else f"Failing cases ({len(failing)})"
    return _details(title, rows)
