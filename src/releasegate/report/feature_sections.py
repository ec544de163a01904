"""The summaries gate features show as they are (report.json `sections`, `gate.feature.GateFeature.summary`):
one rendering per format, so a feature with no renderer of its own still appears in every report."""

from __future__ import annotations

from ..record.gate_report import GateReport
from ..text import inert

__all__ = ["section_lines", "section_tables"]


def section_tables(report: GateReport) -> list[tuple[str, list[tuple[str, str]]]]:
    """Each feature summary as (title, [(label, value)]), untrusted text made fit to show."""
    return [(inert(s.title), [(inert(r.label), inert(r.value)) for r in s.rows]) for s in report.sections]


def section_lines(report: GateReport) -> list[str]:
    """One line per feature summary: 'title: label value; label value'."""
    return [f"{title}: " + "; ".join(f"{label} {value}" for label, value in rows)
            for title, rows in section_tables(report)]
