"""The HTML report's latency plots, written directly as SVG: drawn without matplotlib, from the run's own samples
and the rubric of the judgment, well-formed whatever a record holds, and never a copy of an older drawing."""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET

import pytest

from conftest import heavy_imports_after
from releasegate.record.gate_report import CriterionRow
from releasegate.report import render
from releasegate.report.plots import latency_plots
from releasegate.report.svg_plot import Panel, nice_ticks, svg_document, tick_text
from test_reports import make_run, parse, report_of

SAMPLES = {"ttft_ms": [40.0 + i for i in range(60)], "tpot_ms": [8.0 + i / 10 for i in range(60)],
           "e2e_ms": [200.0 + 3 * i for i in range(60)]}
SPLIT = [(40.0 + i, 160.0 + 2 * i) for i in range(60)]


def gate_row(metric: str, threshold: float, **extra) -> CriterionRow:
    return CriterionRow(name=metric, metric=metric, op="<=", threshold=threshold, verdict="pass", value=1.0, n=60,
                        **extra)


def texts(svg: str) -> list[str]:
    return [el.text or "" for el in ET.fromstring(svg).iter("text")]


def test_an_html_report_with_latency_draws_its_plots_without_matplotlib(tmp_path):
    run = make_run(tmp_path)
    page = (run.path / "report.html").read_text()
    assert [t for t, _ in parse(page).tags].count("svg") == 2
    assert heavy_imports_after([["report", run.path, "-f", "html"]], ("matplotlib",)) == []


def test_the_plots_show_the_samples_percentiles_and_the_rubrics_thresholds():
    plots = latency_plots(SAMPLES, SPLIT, [gate_row("ttft_ms_p95", 150), gate_row("e2e_ms_p99", 400),
                                           gate_row("tpot_ms_p95", 1, slice={"task": "x"})])
    cdf = texts(plots["cdf"])
    for title in ("TTFT (prefill)  (n=60)", "TPOT (decode, per token)  (n=60)", "End-to-end  (n=60)"):
        assert title in cdf
    assert "P95 96" in cdf and "P50 69.5" in cdf  # from every sample, linear interpolation
    assert "gate P95 <= 150" in cdf and "gate P99 <= 400" in cdf
    assert not any("<= 1" == t[-4:] for t in cdf)  # a slice's threshold is not the whole run's
    split = texts(plots["split"])
    share = sum(p for p, _ in SPLIT) / sum(p + d for p, d in SPLIT)
    assert f"Where the time goes: prefill {share:.0%}, decode {1 - share:.0%} of all request time" in split


def test_a_redrawn_plot_follows_changed_samples_and_a_changed_rubric():
    """Nothing is reused from an earlier drawing: other samples or another threshold give another picture."""
    first = latency_plots(SAMPLES, SPLIT, [gate_row("ttft_ms_p95", 150)])
    assert latency_plots(SAMPLES, SPLIT, [gate_row("ttft_ms_p95", 150)]) == first  # the same run, the same bytes
    moved = {**SAMPLES, "ttft_ms": [v * 2 for v in SAMPLES["ttft_ms"]]}
    assert "P95 192" in texts(latency_plots(moved, SPLIT, [gate_row("ttft_ms_p95", 150)])["cdf"])
    other_rubric = texts(latency_plots(SAMPLES, SPLIT, [gate_row("ttft_ms_p95", 90)])["cdf"])
    assert "gate P95 <= 90" in other_rubric and "gate P95 <= 150" not in other_rubric


def test_the_saved_runs_page_is_redrawn_from_its_records(tmp_path):
    run = make_run(tmp_path)
    before = render(run, "html")
    records = [json.loads(line) for line in (run.path / "records.jsonl").read_text().splitlines()]
    for r in records:
        r["timing"]["ttft_ms"] *= 10
    (run.path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    after = render(run, "html")
    p95 = lambda page: re.findall(r">P95 ([0-9.e+]+)<", page)[0]  # noqa: E731 - the TTFT panel's is the first
    assert float(p95(after)) == pytest.approx(10 * float(p95(before)), rel=1e-2)
    threshold = report_of(run)["criteria"][4]["threshold"]
    assert f"gate P95 &lt;= {threshold:g}" in after


def test_a_run_without_samples_of_a_measure_says_so_in_its_panel():
    plots = latency_plots({"ttft_ms": [50.0, 60.0], "tpot_ms": [], "e2e_ms": [90.0]}, [], [])
    assert set(plots) == {"cdf"} and "no samples" in texts(plots["cdf"])
    assert latency_plots({"ttft_ms": [], "tpot_ms": [], "e2e_ms": []}, [], []) == {}


@pytest.mark.parametrize("values", [[1e308, 5.0], [1.7e308, 1.7e308], [-5.0, -1.0], [0.0, 0.0], [3.0], [1e-9, 2e-9]])
@pytest.mark.parametrize("threshold", [1e308, -3.0, math.inf, math.nan])
def test_any_finite_values_a_record_holds_give_a_well_formed_picture(values, threshold):
    split = [(v, v) for v in values]
    plots = latency_plots({"ttft_ms": values, "tpot_ms": values, "e2e_ms": values}, split,
                          [gate_row("ttft_ms_p95", threshold), gate_row("e2e_ms_p95", -3)])
    for svg in plots.values():
        root = ET.fromstring(svg)
        numbers = [v for el in root.iter() for k, v in el.attrib.items() if k in ("x", "y", "x1", "x2", "y1", "y2")]
        assert all(math.isfinite(float(v)) for v in numbers)
        assert not re.search(r"\b(nan|inf)\b", " ".join(el.attrib.get("d", "") for el in root.iter()))


def test_a_threshold_that_is_not_a_number_leaves_the_axis_to_the_samples():
    """A report.json read back may hold an infinite or NaN threshold: the samples keep their scale."""
    for threshold in (math.inf, math.nan):
        cdf = texts(latency_plots({"ttft_ms": [10.0, 20.0, 30.0], "tpot_ms": [], "e2e_ms": []}, [],
                                  [gate_row("ttft_ms_p95", threshold)])["cdf"])
        assert "30" in cdf and f"gate P95 <= {threshold:g}" in cdf


def test_text_in_a_picture_is_escaped_and_the_picture_holds_no_address():
    panel = Panel(0, 0, 300, 200)
    panel.frame("<script>alert(1)</script> & co", "x", "y")
    svg = svg_document(300, 200, [panel], 'a "title"')
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert texts(svg)[0] == "<script>alert(1)</script> & co"
    assert "http" not in svg  # inline SVG needs no namespace address


@pytest.mark.parametrize("low,high", [(0, 1.04), (0, 2100), (0.5, 60.5), (0, 7.3), (0, 1e-6), (3, 3.2), (0, 1.7e308)])
def test_ticks_are_round_numbers_inside_the_range(low, high):
    ticks = nice_ticks(low, high)
    assert 2 <= len(ticks) <= 11 and all(low - 1e-9 * abs(high) <= t <= high * (1 + 1e-9) for t in ticks)
    steps = {round(b - a, 9) for a, b in zip(ticks, ticks[1:])} if high < 1e300 else set()
    assert len(steps) <= 1
    mantissa = float(f"{(ticks[1] - ticks[0]):e}".split("e")[0])
    assert mantissa in (1.0, 2.0, 2.5, 5.0)


def test_tick_labels_read_as_people_write_numbers():
    assert [tick_text(v) for v in (0, 0.5, 250, 1500, 12000, 0.0125)] == ["0", "0.5", "250", "1,500", "12,000",
                                                                          "0.0125"]


def test_a_saved_run_with_an_absurd_timing_still_renders_its_page(tmp_path, cli):
    """A record may hold any finite number (an edited or hostile run): the page renders, no traceback."""
    run = make_run(tmp_path)
    records = [json.loads(line) for line in (run.path / "records.jsonl").read_text().splitlines()]
    records[0]["timing"].update(ttft_ms=1e308, e2e_ms=1.7e308)
    (run.path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    code, out, err = cli("report", run.path, "-f", "html")
    assert code == 0, err
    assert "P95 " in out and "Traceback" not in err
