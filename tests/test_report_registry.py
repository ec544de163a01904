"""The report formats come from one registry and render the typed GateReport; a dict is validated once."""

from __future__ import annotations

import pytest

from releasegate.errors import InputError
from releasegate.gate.capacity import capacity_sweep, capacity_view
from releasegate.record.capacity_sweep import CapacitySweep
from releasegate.record.gate_report import GateReport, as_report, load_report
from releasegate.report import FORMATS, REGISTRY, render, rendered_reports
from releasegate.report.formats import RenderOptions, ReportFormat, register
from releasegate.report.markdown import render_markdown
from releasegate.report.terminal import verdict_lines
from releasegate.report.view import RunView
from test_capacity import RISE_AND_BISECT, sweep_run
from test_reports import make_run, report_of


def test_every_format_is_registered_with_its_file_and_what_it_needs():
    assert FORMATS == {f.name: f.file for f in REGISTRY.values()}
    assert {f.name: f.needs for f in REGISTRY.values()} == {
        "json": "report", "md": "report", "html": "records", "junit": "report", "csv": "records",
        "summary": "report"}


def test_a_name_registered_twice_is_refused():
    with pytest.raises(ValueError, match="registered twice"):
        register(ReportFormat("md", "other.md", "report", lambda s, o: ""))


def test_rendered_reports_writes_one_file_per_registered_format(tmp_path):
    run = make_run(tmp_path)
    texts = rendered_reports(run, report_of(run))
    assert sorted(texts) == sorted(f.file for f in REGISTRY.values())
    for fmt in REGISTRY.values():  # the saved files are what each registered renderer gives
        assert (run.path / fmt.file).read_bytes().decode("utf-8") == texts[fmt.file]


def test_a_model_and_its_dict_render_the_same(tmp_path):
    run = make_run(tmp_path)
    model = load_report(run)
    assert isinstance(model, GateReport) and model.as_json() == report_of(run)
    assert render_markdown(model) == render_markdown(report_of(run)) == (run.path / "report.md").read_text()
    assert verdict_lines(model) == verdict_lines(report_of(run))
    view = RunView.load(run, model)
    assert view.gate_report is model and render(view, "csv") == (run.path / "report.csv").read_bytes().decode("utf-8")


def test_a_records_format_is_refused_a_bare_report(tmp_path):
    run = make_run(tmp_path)
    with pytest.raises(TypeError, match="RunView"):
        REGISTRY["csv"].render(load_report(run), RenderOptions())


def test_a_dict_that_is_no_report_is_an_input_error_naming_its_source(tmp_path):
    with pytest.raises(InputError, match="not a releasegate report: verdict"):
        as_report({**report_of(make_run(tmp_path)), "verdict": "MAYBE"}, source="x.json")


def test_the_sweep_is_built_as_a_model_and_read_back_the_same(tmp_path):
    from releasegate.record.records import RunDir

    path = sweep_run(RISE_AND_BISECT).build(tmp_path)
    run = RunDir(path)
    info, load = run.read_info(), run.read_records("load.jsonl")
    sweep = capacity_sweep(info, load)
    assert isinstance(sweep, CapacitySweep) and sweep.capacity_rps == 30 and sweep.step_at(sweep.capacity_step).rate == 30
    assert [s.rate for s in sweep.steps] == [10, 20, 30, 35, 40]
    assert capacity_view(info, load) == sweep.as_json()
    assert CapacitySweep.model_validate(sweep.as_json()).as_json() == sweep.as_json()  # the JSON form round-trips
    assert isinstance(sweep.as_json()["steps"][0]["rate"], int)  # an int rate stays an int in report.json
