"""report.junit.xml: the gate as JUnit XML, so CI systems list gate failures as failed tests.

One <testsuite> per run, one <testcase> per criterion (and one for required human review: failed when approval
failed or review is pending, skipped when `--allow-pending` allowed pending review or the labels decide nothing
yet; none when the target could not be run): a failed criterion is a <failure> naming value vs threshold,
an insufficient one (too few samples, no value) is <skipped> with the reason. With `cases=True`, every failing
case is a failed testcase too; by default the failing cases go to the suite's <system-out> instead, so the number
of failed tests is the number of failed criteria and a passing gate is never shown red.

Every text is `inert` first (control, bidi and surrogate characters as visible stand-ins: a CI log that prints
the file runs no escape sequence, and NUL or a lone surrogate cannot make the XML invalid); anything else XML 1.0
cannot carry (U+FFFE, U+FFFF) becomes U+FFFD.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from ..inputs.scale_config import computed_words
from ..record.gate_report import CriterionRow, FailingCase, GateReport, as_report
from ..record.metrics import is_phased
from ..text import inert
from .baseline_section import baseline_line
from .feature_sections import section_lines
from .formatting import format_interval, format_metric, format_threshold, format_value, latency_source_text
from .stability_section import stability_lines
from .terminal import judged_by_line, request_summary

__all__ = ["render_junit", "xml_text"]

# characters XML 1.0 cannot carry at all; model outputs may contain them. Named as the few it cannot carry (every
# control character but tab, newline and CR; surrogates; U+FFFE, U+FFFF), not as the complement of those it can:
# the same set, compiled twenty times faster at each start
_NOT_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_OUTPUT_CHARS = 2000


def render_junit(report: GateReport | dict[str, Any], *, cases: bool = False) -> str:
    """The JUnit XML document for a judged report (a dict is validated into a GateReport first)."""
    report = as_report(report)
    criteria = report.criteria
    failing = report.failing_cases if cases else []
    review = _review_status(report)
    failures = sum(c.verdict == "fail" for c in criteria) + len(failing) + (review in ("blocking", "failed"))
    counts = {
        "tests": str(len(criteria) + len(failing) + (review is not None)), "failures": str(failures), "errors": "0",
        "skipped": str(sum(c.verdict == "insufficient" for c in criteria) + (review in ("allowed", "undecided"))),
        "time": "0",
    }
    root = ET.Element("testsuites", {"name": "releasegate", **counts})
    whatif = " (what-if)" if report.whatif else ""
    suite = ET.SubElement(root, "testsuite", {"name": xml_text(f"releasegate: {report.rubric}{whatif}"), **counts})
    props = ET.SubElement(suite, "properties")
    for name in ("run_id", "verdict", "exit_code", "target", "rubric", "verdict_reason", "incomplete", "target_error"):
        if name in report.model_fields_set and (value := getattr(report, name)) is not None:
            ET.SubElement(props, "property", name=name, value=xml_text(value))
    _judged_by(props, report)
    ET.SubElement(props, "property", name="computed", value=xml_text(computed_words(report.computed)))
    if baseline := baseline_line(report.comparison):  # which blessed run (who, when, why) the comparison is with
        ET.SubElement(props, "property", name="baseline", value=xml_text(baseline))
    if summary := request_summary(report):
        ET.SubElement(props, "property", name="requests", value=xml_text(summary))
    if stable := stability_lines(report):  # repeated draws, answers changed under load
        ET.SubElement(props, "property", name="stability", value=xml_text("; ".join(stable)))
    for feature, line in zip(report.sections, section_lines(report), strict=True):  # each feature's own summary
        ET.SubElement(props, "property", name=xml_text(f"feature.{feature.feature}"), value=xml_text(line))
    for c in criteria:
        _criterion(suite, c, latency_source_text(report))
    if review is not None:
        _review_case(suite, report, review)
    for f in failing:
        case = ET.SubElement(suite, "testcase", classname=xml_text(f"releasegate.cases.{f.suite}"), name=xml_text(f.case_id), time="0")
        failure = ET.SubElement(case, "failure", message=xml_text("; ".join(f.why)), type="case")
        failure.text = xml_text(_case_text(f))
    if report.failing_cases and not cases:
        ET.SubElement(suite, "system-out").text = xml_text(_failing_text(report.failing_cases))
    listed = len(report.failing_cases)
    unlisted = (listed if report.failing_cases_total is None else report.failing_cases_total) - listed
    if unlisted > 0:  # report.json keeps the first FAILING_CASES_KEPT; say so instead of stopping silently
        ET.SubElement(suite, "system-err").text = xml_text(
            f"{unlisted} more failing case(s) not listed: report.json keeps the first {listed}; "
            "report.csv lists every case")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _judged_by(props: ET.Element, report: GateReport) -> None:
    """The rubric file and sha256 that judged the report, and for a what-if that it is not the run's rubric."""
    by = report.judged_by
    if not by:
        return
    for name, value in (("rubric_file", by.file), ("rubric_source", by.source), ("rubric_named_by", by.named_by),
                        ("rubric_sha256", by.sha256),
                        ("rubric_snapshot_sha256", by.snapshot_sha256), ("whatif", str(by.whatif).lower()),
                        ("judged_by", judged_by_line(report))):
        if value is not None:
            ET.SubElement(props, "property", name=name, value=xml_text(value))


def _criterion(suite: ET.Element, c: CriterionRow, source: str = "") -> None:
    case = ET.SubElement(suite, "testcase", classname="releasegate.criteria", name=xml_text(c.name), time="0")
    measured_on = f", {source}" if source and is_phased(c.metric) else ""  # under what load, for latency
    if c.verdict == "fail":
        message = (f"{c.metric} = {format_metric(c.metric, c.value)}, required {format_threshold(c)} "
                   f"(n={c.n}{measured_on})")
        failure = ET.SubElement(case, "failure", message=xml_text(message), type="gate")
        failure.text = xml_text(_details(c) + (f"\nmeasured on: {source}" if measured_on else ""))
    elif c.verdict == "insufficient":
        ET.SubElement(case, "skipped", message=xml_text(f"insufficient: {c.reason or 'too few samples'}"))


def _review_status(report: GateReport) -> str | None:
    """None (no required review, or a target that could not be run: no one is asked to review it); 'failed' (a
    required slice's approval, or the run's, failed: it fails the gate whatever else is pending); 'blocking'
    (pending); 'allowed' (pending, and `--allow-pending` was given); 'undecided' (labelled, but the labels decide
    nothing yet); 'done'."""
    required = [row for row in report.review_rows.values() if row.required]
    if not required or report.verdict == "TARGET_ERROR":
        return None
    if any(row.status == "fail" for row in required):
        return "failed"
    if any(row.status.startswith("pending") for row in required):
        return "allowed" if _waived(report) else "blocking"
    if any(row.status in ("undecided", "unrepresentative") for row in required):
        return "undecided"
    return "done"


def _waived(report: GateReport) -> bool:
    """Whether `--allow-pending` let pending review through (a report that predates `obligations`: its "all" row
    says so)."""
    if report.obligations is not None:
        return report.obligations.review_waived
    return report.review_rows["all"].status == "pending (allowed)" if "all" in report.review_rows else False


def _review_case(suite: ET.Element, report: GateReport, status: str) -> None:
    """Required human review as its own test: failed when approval failed or review is pending, skipped while
    `--allow-pending` allows pending review or the labels decide nothing yet, passed when approval passed."""
    case = ET.SubElement(suite, "testcase", classname="releasegate.review", name="human review", time="0")
    rows = {name: row for name, row in report.review_rows.items() if row.required}
    if status == "failed":
        failed = [f"{name} {format_value(row.approval)} < {format_value(row.min_approval)} "
                  f"({row.approved} of {row.reviewed} reviewed approved)"
                  for name, row in rows.items() if row.status == "fail"]
        ET.SubElement(case, "failure", message=xml_text("human approval failed: " + ", ".join(failed)), type="review")
        return
    missing = [f"{name} {row.reviewed}/{row.needed}" for name, row in rows.items() if row.status.startswith("pending")]
    message = "human review pending: " + ", ".join(missing)
    if status == "blocking":
        ET.SubElement(case, "failure", message=xml_text(message), type="review")
    elif status == "allowed":
        ET.SubElement(case, "skipped", message=xml_text(message + " (allowed by --allow-pending)"))
    elif status == "undecided":
        undecided = [f"{name} ({row.status})" for name, row in rows.items() if row.status in ("undecided", "unrepresentative")]
        ET.SubElement(case, "skipped", message=xml_text("human approval not decided yet: " + ", ".join(undecided)))


def _details(c: CriterionRow) -> str:
    lines = [f"metric: {c.metric}", f"value: {c.value}", f"threshold: {format_threshold(c)}", f"n: {c.n}"]
    if c.bounds:
        confidence = 0.95 if c.confidence is None else c.confidence
        lines.append(f"bounds, each one-sided at {confidence:.4g}: {format_interval(c.bounds)}")
    if c.slice:
        lines.append("slice: " + ", ".join(f"{k}={v}" for k, v in c.slice.items()))
    if c.reason:
        lines.append(f"reason: {c.reason}")
    return "\n".join(lines)


def _case_text(f: FailingCase) -> str:
    """A failing case's body: its output (for a failed request, what the server said), input and expected answer."""
    said = f"no output: {f.error_message}" if not f.output and f.error_message else f.output[:_OUTPUT_CHARS]
    parts = [said] + [f"{key}: {text[:_OUTPUT_CHARS]}" for key, text in (("input", f.input), ("expected", f.expected)) if text]
    return "\n".join(parts)


def _failing_text(failing: list[FailingCase]) -> str:
    lines = [f"failing cases ({len(failing)} listed):"]
    for f in failing:
        output = " ".join(f.output.split())[:200]
        lines.append(f"- {f.case_id} [{f.suite}] {'; '.join(f.why)} | output: {output}")
    return "\n".join(lines)


def xml_text(value: Any) -> str:
    """Any text as JUnit XML carries it: `inert`, then what XML 1.0 cannot hold at all as U+FFFD."""
    return _NOT_XML.sub("\ufffd", inert(value))
