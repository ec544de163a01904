"""report.md: the verdict in GitHub-flavoured Markdown, short enough for a PR comment or a job summary.

Model outputs are untrusted: every text cell is one line with Markdown and HTML syntax backslash-escaped, so an
output can neither break the table nor become a link, an image, a tag or an @mention. Autolinks need no syntax
(GitHub links bare `http://`, `www.` and e-mail addresses; linkify-it also bare domains such as `example.com`), so
`md_text` also puts an invisible zero-width character inside each such pattern: the text reads the same, and no
renderer finds a link in it. Control, bidi and surrogate characters are shown as visible stand-ins (`inert`).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

from ..border.env import STEP_SUMMARY, env_path
from ..border.files import append_regular
from ..border.outputs import RUN_MARKER
from ..errors import InputError
from ..inputs.scale_config import computed_words
from ..record.gate_report import GateReport, as_report
from ..record.metrics import KNOWN_METRICS, is_phased
from ..record.stored_manifest import read_manifest_file
from ..review.summary import review_headline
from ..text import inert
from .baseline_section import baseline_line, comparison_md
from .cache_probe_section import cache_probe_lines, cache_probe_table, wrong_hit_lines
from .capacity_section import capacity_lines, capacity_table, prefix_cache_lines
from .failing_cases import failing_case_lines
from .feature_sections import section_tables
from .formatting import (
    bounds_note,
    format_interval,
    format_metric,
    format_threshold,
    format_value,
    latency_source_text,
    load_phase_rows,
)
from .judge_section import calibration_table, guard_lines, judge_lines
from .review import kappa_cell
from .stability_section import draw_table, flip_table_rows, stability_lines
from .terminal import answered_words, judged_by_line, request_summary

__all__ = ["render_markdown", "append_step_summary", "md_text", "md_label", "md_code"]

FAILING_CASES_SHOWN = 10
_BADGE = {"PASS": "✅", "FAIL": "❌", "NEEDS_REVIEW": "👀", "INCONCLUSIVE": "⚠️", "TARGET_ERROR": "🛑"}
_CELL = {"pass": "✅ pass", "fail": "❌ fail", "insufficient": "⚠️ insufficient"}
_SPECIAL = re.compile(r"([\\`*_{}\[\]|~!#])")
_ZWJ = "\u200d"  # ZERO WIDTH JOINER: invisible, and neither a host character nor a scheme character to a linkifier
_NO_AUTOLINK = (
    (re.compile(r"/(?=/)"), "/" + _ZWJ),  # 'http://', 'ftp://', '//host': no scheme separator left
    (re.compile(r"(?<=[^\W\d_])(?=:\S)"), _ZWJ),  # 'mailto:', 'xmpp:', any 'scheme:': no scheme left
    (re.compile(r"(?i)(www)(?=\.)"), r"\1" + _ZWJ),  # GitHub's 'www.' autolink
    (re.compile(r"\.(?=\w)"), "." + _ZWJ),  # 'example.com', 'a@b.org': no label is a top-level domain any more
    (re.compile(r"(?<=#)(?=\w)"), _ZWJ),  # '#123': GitHub's issue references
    (re.compile(r"(?i)(?<![\w-])(gh)(?=-\d)"), r"\1" + _ZWJ),  # 'GH-123' likewise
)


def md_text(text: Any) -> str:
    """Untrusted text (model outputs, anything from a case) as an inert Markdown table cell: one line, markup
    characters escaped, no @mentions, no autolinks, controls shown as visible stand-ins."""
    cell = md_label(text)
    for pattern, replacement in _NO_AUTOLINK:
        cell = pattern.sub(replacement, cell)
    return cell


def md_label(text: Any) -> str:
    """Text the user wrote (a criterion name, the target, a rubric path) as a Markdown table cell: like `md_text`,
    but a URL in it stays a URL to copy or follow."""
    cell = inert(" ".join(str(text).split()), keep="")
    cell = cell.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")  # no raw '<' for any renderer
    cell = _SPECIAL.sub(r"\\\1", cell)
    return cell.replace("@", "@\u200b")  # a zero-width space after '@': no @mention, no e-mail autolink


def md_code(text: Any) -> str:
    """An identifier (a metric name) as a code span: nothing inside is markup; only '|' needs escaping in a table."""
    return "`" + " ".join(str(text).split()).replace("`", "'").replace("|", "\\|") + "`"


def render_markdown(report: GateReport | dict[str, Any]) -> str:
    """The whole report: verdict, criteria, then metrics, slices and failing cases folded away. A dict is
    validated into a GateReport first."""
    report = as_report(report)
    failed = [c for c in report.criteria if c.verdict == "fail"]
    whatif = " · what-if" if report.whatif else ""
    lines = [
        f"## {_BADGE.get(report.verdict, '')} releasegate: **{report.verdict}** (exit {report.exit_code}){whatif}",
        "",
        *_judged_by_lines(report),
        f"- run: {md_label(report.run_id)}",
        f"- target: {md_label(report.target)}",
        f"- {md_label(computed_words(report.computed))}",
        f"- rubric: {md_label(report.rubric)}",
        *([f"- {md_label(line)}"] if (line := judged_by_line(report)) and not whatif else []),
        *([f"- {md_label(line)}"] if (line := baseline_line(report.comparison)) else []),
        *_cases_line(report),
        f"- criteria: {len(report.criteria) - len(failed)} of {len(report.criteria)} met"
        + (": failed " + ", ".join(md_label(c.name) for c in failed) if failed else ""),
        *_review_headline(report),
        *([f"- incomplete: {md_label(report.incomplete)}"] if report.incomplete else []),
        *([f"- why: {md_label(report.verdict_reason)}"] if report.verdict_reason else []),
        *([f"- {md_label(line)}"] if (line := request_summary(report)) else []),
        *([f"- {md_label(report.client_saturated)}"] if report.client_saturated else []),
        "",
        "### Criteria",
        "",
        "| criterion | metric | value | threshold | bounds | n | verdict |",
        "|---|---|---:|---:|---|---:|---|",
    ]
    for c in report.criteria:
        lines.append(
            f"| {md_label(c.name)} | {md_code(c.metric)} | {format_metric(c.metric, c.value)} | {format_threshold(c)} "
            f"| {format_interval(c.interval or c.bounds)} | {c.n} | {_CELL[c.verdict]} |"
        )
    if note := bounds_note(report.criteria):
        lines += ["", md_label(note)]
    if any(is_phased(c.metric) for c in report.criteria):
        lines += ["", f"Latency, throughput and cost criteria are measured on: {md_text(latency_source_text(report))}."]
    lines += comparison_md(report.comparison, md_text, md_label)
    for section in (_metric_lines, _load_lines, _capacity_md, _prefix_md, _cache_probe_md, _slice_lines, _review_lines, _judge_md,
                    _guard_md, _stability_md, _feature_md, _failure_lines):
        lines += section(report)
    return "\n".join(lines) + "\n"


def _cases_line(report: GateReport) -> list[str]:
    counts = report.counts
    if counts is None:
        return []
    cached = f"; {counts.cached} from the response cache, left out of latency and throughput)" if counts.cached else ")"
    return [f"- cases: {counts.cases} ({answered_words(counts)}" + cached]


def _judged_by_lines(report: GateReport) -> list[str]:
    """A what-if judgment says so first, as a quote: its verdict is not the run's."""
    if not report.whatif:
        return []
    return [f"> ⚠️ **{md_label(judged_by_line(report))}**", ""]


def append_step_summary(markdown: str, run_dir: Path | None = None) -> None:
    """Append to the file named by GITHUB_STEP_SUMMARY (GitHub Actions' job summary), when that is set: never to a
    file of a run directory nor to an input the run `run_dir` read (its manifest's), which the summary would
    corrupt; a warning line instead."""
    try:
        path = env_path(STEP_SUMMARY)
        if path is not None:
            _refuse_evidence(path, run_dir)
            append_regular(path, markdown + "\n", what=STEP_SUMMARY)
    except InputError as exc:  # the summary is a courtesy: never let it hide the verdict
        sys.stderr.write(f"warning: {exc}\n")


def _refuse_evidence(path: Path, run_dir: Path | None) -> None:
    real = Path(os.path.realpath(path))  # a link loop resolves as far as it goes, never raises
    if (real.parent / RUN_MARKER).is_file():
        raise InputError(f"{STEP_SUMMARY} names a file of a run directory, the run's evidence: not written", file=path)
    try:
        manifest = read_manifest_file(run_dir, whole=False) if run_dir is not None else None
    except InputError:
        manifest = None
    inputs = {Path(os.path.realpath(e["path"])) for e in (manifest or {}).get("inputs") or []
              if isinstance(e, dict) and isinstance(e.get("path"), str)}
    if real in inputs:
        raise InputError(f"{STEP_SUMMARY} names an input of the run: not written", file=path)


def _details(summary: str, lines: list[str]) -> list[str]:
    return ["", f"<details><summary>{summary}</summary>", "", *lines, "", "</details>"]


def _metric_lines(report: GateReport) -> list[str]:
    rows = ["| metric | value | n | bounds | meaning |", "|---|---:|---:|---|---|"]
    for name, m in report.metrics.items():
        meaning = KNOWN_METRICS[name][1] if name in KNOWN_METRICS else ""
        rows.append(f"| {md_code(name)} | {format_metric(name, m.value)} | {m.n} | {format_interval(m.interval)} "
                    f"| {md_label(meaning)} |")
    note = bounds_note(report.metrics.values())
    source = f"Latency, throughput and cost are measured on: {md_text(latency_source_text(report))}."
    return _details("Metrics (all cases)", rows + (["", md_label(note)] if note else []) + ["", source])


def _load_lines(report: GateReport) -> list[str]:
    rows = load_phase_rows(report.load_phase)
    if not rows:
        return []
    return ["", "## Load phase", "", "| | |", "|---|---|"] + [f"| {label} | {md_label(text)} |" for label, text in rows]


def _capacity_md(report: GateReport) -> list[str]:
    lines = capacity_lines(report.capacity)
    if not lines:
        return []
    columns, rows = capacity_table(report.capacity)
    table = ["| " + " | ".join(columns) + " |", "|" + "---:|" * (len(columns) - 1) + "---|"]
    table += ["| " + " | ".join(md_label(v) for v in row) + " |" for row in rows]
    return ["", "## Capacity", "", *(f"- {md_label(line)}" for line in lines)] + _details(f"Sweep steps ({len(rows)})", table)


def _prefix_md(report: GateReport) -> list[str]:
    lines = prefix_cache_lines(report.prefix_cache)
    return ["", "## Prefix cache", "", *(f"- {md_label(line)}" for line in lines)] if lines else []


def _cache_probe_md(report: GateReport) -> list[str]:
    probe = report.response_cache_probe
    if probe is None:
        return []
    columns, rows = cache_probe_table(probe)
    table = ["| " + " | ".join(columns) + " |", "|" + "---:|" * len(columns)]
    table += ["| " + " | ".join(md_label(v) for v in row) + " |" for row in rows]
    wrong = [f"- {md_label(line)}" for line in wrong_hit_lines(probe, limit=10)]
    return (["", "## Response cache", "", *(f"- {md_label(line)}" for line in cache_probe_lines(probe)), "", *table]
            + (["", "Most dangerous wrong hits at the deployment's threshold:", "", *wrong] if wrong else []))


def _slice_lines(report: GateReport) -> list[str]:
    if not report.slices:
        return []
    cols = [k for k in report.slices[0] if k not in ("slice", "n")]
    rows = ["| slice | n | " + " | ".join(cols) + " |", "|---|---:|" + "---:|" * len(cols)]
    for row in report.slices:
        rows.append(f"| {md_text(row['slice'])} | {row['n']} | " + " | ".join(format_value(row[c]) for c in cols) + " |")
    source = [f"Latency columns are measured on: {md_text(latency_source_text(report, slices=True))}."] if any(
        is_phased(c) and row.get(c) is not None for row in report.slices for c in cols) else []
    return _details(f"Slices ({len(report.slices)})", source + ([""] if source else []) + rows)


def _review_headline(report: GateReport) -> list[str]:
    line = review_headline(_review_rows(report), report.verdict)
    return [f"- {md_label(line.split('; next:')[0])}"] if line else []


def _review_rows(report: GateReport) -> dict[str, dict[str, Any]]:
    """The review section in the JSON shape `review.summary.review_headline` reads."""
    return {name: row.model_dump(mode="json") for name, row in report.review_rows.items()}


def _review_lines(report: GateReport) -> list[str]:
    if not _review_headline(report):
        return []
    cols = ("status", "cases", "needed", "reviewed", "approved", "rejected", "approval", "kappa")
    header = [{"approval": "approval weighted by outcome"}.get(c, c) for c in cols]
    rows = ["| slice | " + " | ".join(header) + " |", "|---|---|" + "---:|" * (len(cols) - 1)]
    for name, row in report.review_rows.items():
        label = f"{name} (required)" if row.required and name != "all" else name
        cells = [kappa_cell(row.model_dump()) if c == "kappa" else format_value(getattr(row, c)) for c in cols]
        rows.append(f"| {md_text(label)} | " + " | ".join(md_label(cell) for cell in cells) + " |")
    return _details(f"Human review ({report.review_rows['all'].status})", rows)


def _judge_md(report: GateReport) -> list[str]:
    lines = judge_lines(report.judge)
    if not lines:
        return []
    out = ["", "## LLM judge", "", *(f"- {md_label(line)}" for line in lines)]
    table = calibration_table(report.judge)
    if table:
        columns, rows = table
        body = ["| " + " | ".join(columns) + " |", "|---|---|" + "---:|" * (len(columns) - 2)]
        body += ["| " + " | ".join(md_label(v) for v in row) + " |" for row in rows]
        out += _details("Judge calibration against the reviewers", body)
    return out


def _guard_md(report: GateReport) -> list[str]:
    lines = guard_lines(report.guard)
    return ["", "## Guard models", "", *(f"- {md_label(line.strip())}" for line in lines)] if lines else []


def _stability_md(report: GateReport) -> list[str]:
    """Repeated draws and answers under load (`stability_section`); nothing for a run with neither."""
    lines = stability_lines(report)
    if not lines:
        return []
    out = ["", "## Stable answers", "", *(f"- {md_label(line)}" for line in lines)]
    for title, (columns, rows), texts in (("Repeated draws", draw_table(report), {0, 4}),
                                          ("Answers under load", flip_table_rows(report), {0, 1, 2})):
        if rows:  # case ids and answers are untrusted text; the figures are ours
            table = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
            table += ["| " + " | ".join(md_text(v) if i in texts else md_label(v) for i, v in enumerate(r)) + " |"
                      for r in rows]
            out += _details(f"{title} ({len(rows)})", table)
    return out


def _feature_md(report: GateReport) -> list[str]:
    """Each gate feature's own summary, as a table."""
    lines = []
    for title, rows in section_tables(report):
        lines += ["", f"### {md_label(title)}", "", "| | |", "|---|---|",
                  *(f"| {md_label(label)} | {md_label(value)} |" for label, value in rows)]
    return lines


def _failure_lines(report: GateReport) -> list[str]:
    failing = report.failing_cases
    if not failing:
        return []
    shown = failing[:FAILING_CASES_SHOWN]
    title = f"Failing cases (first {len(shown)})" if len(shown) < len(failing) else f"Failing cases ({len(failing)})"
    return _details(title, failing_case_lines(shown, md_text))
