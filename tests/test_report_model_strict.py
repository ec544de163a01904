"""A report.json or run.json that does not fit the gate report's model is refused whole (exit 2, one line), never
rendered without the part it garbled: a review row of another shape would otherwise drop the pending review from
JUnit and Markdown, and CI would read green. Figures that are not finite are JSON null, as strict readers need."""

from __future__ import annotations

import json
import math

import pytest

from conftest import gate_run
from releasegate.errors import InputError
from releasegate.record.records import RunDir, RunInfo
from releasegate.report import render
from test_capacity import SLO, capacity_rubric, sweep_run  # noqa: F401
from test_reports import make_run, report_of


def _edit_report(run: RunDir, change) -> None:
    report = report_of(run)
    change(report)
    (run.path / "report.json").write_text(json.dumps(report), encoding="utf-8")


@pytest.mark.parametrize("fmt", ["junit", "md", "html", "csv"])
def test_a_review_row_of_another_shape_is_refused_not_dropped(tmp_path, fmt):
    run = make_run(tmp_path)
    assert "<testcase" in render(run, "junit")  # as judged, it renders
    _edit_report(run, lambda r: r["review"].__setitem__("note", {"comment": "added by a dashboard"}))
    with pytest.raises(InputError, match="review"):
        render(run, fmt)


@pytest.mark.parametrize("key", ["counts", "latency_from", "metrics", "slices"])
def test_a_report_missing_a_part_the_gate_always_writes_is_refused(tmp_path, key):
    run = make_run(tmp_path)
    _edit_report(run, lambda r: r.pop(key))
    with pytest.raises(InputError, match=key):
        render(run, "md")


def _sweep_dir(tmp_path, change):
    path = sweep_run([(10.0, 100.0), (20.0, 150.0), (40.0, 400.0)], rubric=capacity_rubric()).build(tmp_path)
    info = json.loads((path / "run.json").read_text())
    change(info["load_phase"]["sweep"]["steps"][0]["signals"])
    (path / "run.json").write_text(json.dumps(info), encoding="utf-8")
    return RunDir(path)


def _gate(run: RunDir) -> dict:
    from releasegate.inputs.rubric import load_rubric

    return gate_run(run.read_info(), run.read_records(), load_rubric(run.path / "rubric.yaml"), None,
                    run.read_records("load.jsonl", required=False))


def test_a_sweep_signal_that_does_not_read_is_one_input_error(tmp_path):
    run = _sweep_dir(tmp_path, lambda s: s.__setitem__("foo", {"mean": "abc", "n": 1}))
    with pytest.raises(InputError) as caught:
        _gate(run)
    assert "capacity sweep" in str(caught.value) and "\n" not in str(caught.value)


def test_a_sweep_figure_that_is_not_finite_is_written_as_null_and_refused_when_edited_in(tmp_path):
    run = _sweep_dir(tmp_path, lambda s: s["queue"].__setitem__("max", math.inf))  # run.json edited by hand
    with pytest.raises(InputError, match="inf is not a finite number"):
        run.read_info()
    info = RunInfo.model_validate_json((run.path / "run.json").read_text().replace("Infinity", "1.0"))
    info.load_phase["sweep"]["steps"][0]["signals"]["queue"]["max"] = math.inf  # a server's +Inf gauge, as set
    run.write_info(info)  # what releasegate writes: never a figure it cannot read back
    report = _gate(run)
    text = json.dumps(report["capacity"], allow_nan=False)  # strict JSON: no Infinity, no NaN
    step = next(s for s in json.loads(text)["steps"] if s["step"] == 0)
    assert step["signals"]["queue"]["max"] is None and step["signals"]["queue"]["mean"] == 1.0
