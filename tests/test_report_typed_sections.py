"""The report sections the renderers read into their own typed models (the baseline comparison, the load phase, the
prefix-cache probe, the guard models, the servers and variants tables): a section that does not fit is one input
error naming its field (exit 2), never a traceback and never a report without the part it garbled; a section of
another shape the model leaves open renders as it did."""

from __future__ import annotations

import json

import pytest

from releasegate.errors import InputError
from releasegate.report import render
from releasegate.report.compare import comparison_notes, render_comparison
from releasegate.report.servers import render_servers
from releasegate.report.trend import deciding_bound
from test_reports import make_run, report_of

FORMATS = ["md", "junit", "html", "csv"]  # the summary CSV shows no comparison


def _edit(run, change) -> None:
    report = report_of(run)
    change(report)
    (run.path / "report.json").write_text(json.dumps(report), encoding="utf-8")


def _row(**given):
    row = {"metric": "accuracy", "n": 3, "baseline": 1.0, "candidate": 0.5, "delta": -0.5, "interval": [-0.9, -0.1],
           "margin": 0.02, "p_value": 0.25, "verdict": "fail"}
    return {**row, **given}


def _comparison(**given):
    return {"baseline_run": "/somewhere/else/base", "shared_cases": 3, "identical_outputs": 1, "changed_cases": 0,
            "rows": [_row()], "slices": [], "flipped": {"pass_to_fail": 1, "fail_to_pass": 0, "cases": []},
            "baseline_problems": [], **given}


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_baseline_row_that_does_not_fit_names_its_field(tmp_path, fmt):
    run = make_run(tmp_path)
    _edit(run, lambda r: r.__setitem__("comparison", _comparison(rows=[{"metric": "accuracy", "verdict": "fail"}])))
    with pytest.raises(InputError, match=r"comparison\.rows\.0\.margin"):
        render(run, fmt)


def test_a_failed_baseline_row_is_shown_in_every_format_and_the_path_is_cut_to_the_run_name(tmp_path):
    run = make_run(tmp_path)
    _edit(run, lambda r: r.__setitem__("comparison", _comparison()))
    md = render(run, "md")
    assert "| accuracy | 1 | 0.5 | -0.5 | [-0.9, -0.1] | 0.02 | 0.25 | fail |" in md
    assert "baseline: run base" in md and "/somewhere" not in md
    assert "flipped cases: 1 pass -&gt; fail, 0 fail -&gt; pass" in md
    assert "baseline: run base" in render(run, "junit") and "baseline: run base" in render(run, "html")


def test_a_comparison_of_another_shape_still_renders(tmp_path):
    run = make_run(tmp_path)
    _edit(run, lambda r: r.__setitem__("comparison", {"note": "made by another tool"}))
    assert "made by another tool" in render(run, "html")
    assert "Comparison with the baseline" not in render(run, "md")


@pytest.mark.parametrize(("section", "value", "field"), [
    ("load_phase", {"profile": "closed loop", "requests": 4, "server_metrics": {"samples": 2, "queue": "deep"}},
     r"load_phase\.server_metrics\.queue"),
    ("prefix_cache", {"pairs": 2, "system_chars": 10, "cold": {}}, r"prefix_cache\.warm"),
    ("guard", {"lg": {"labelled": 3, "min_labels": 2, "calibrated": True, "categories": [{"category": "S1"}]}},
     r"guard\.lg\.categories\.0\.misses"),
])
def test_a_measured_section_that_does_not_fit_names_its_field(tmp_path, section, value, field):
    run = make_run(tmp_path)
    _edit(run, lambda r: r.__setitem__(section, value))
    with pytest.raises(InputError, match=field):
        render(run, "md")


def test_the_report_command_says_one_line_and_exits_2(tmp_path, cli):
    run = make_run(tmp_path)
    _edit(run, lambda r: r.__setitem__("prefix_cache", {"pairs": "many"}))
    code, out, err = cli("report", run.path, "--format", "md")
    assert code == 2 and "prefix_cache.pairs" in err and "Traceback" not in err


def _compared(**given):
    return {"verdict": "FAIL", "exit_code": 1, "verdict_reason": "accuracy regressed", "baseline_run": "b",
            "candidate_run": "c", "shared_cases": 3, "pairs_answered": 3, "identical_outputs": 0,
            "rows": [_row()], "target_error": None, "incomplete": "1 case missing", **given}


def test_compare_reads_its_result_once_and_keeps_every_note():
    assert comparison_notes(_compared()) == ["FAIL: 1 case missing"]
    assert "| `accuracy` | 1 | 0.5 | -0.5 | [-0.9, -0.1] | 0.02 | 0.25 | fail |" in render_comparison(_compared(), "md")
    with pytest.raises(InputError, match=r"compare\.rows\.0\.metric"):
        render_comparison(_compared(rows=[{"margin": 0.02, "verdict": "fail"}]), "md")


def test_a_server_figure_given_as_text_is_shown_as_text():
    target = {"run_id": "r1", "target": "t", "verdict": "PASS", "capacity_rps": "\x1b[31mlots", "capacity_at_least": True,
              "latency_source": "\x1b]8;;evil\x07text", "parity": None}
    result = {"targets": [target], "reference": "r1", "recommendation": "r1", "recommended": "r1", "verdict": "PASS",
              "exit_code": 0, "verdict_reason": "ok"}
    for fmt in ("md", "csv", "html"):
        text = render_servers(result, fmt)
        assert "lots" in text and "\x1b" not in text


def test_the_deciding_bound_of_a_criterion_that_does_not_fit_is_an_input_error():
    with pytest.raises(InputError, match=r"criterion\.bounds"):
        deciding_bound({"op": ">=", "verdict": "pass", "bounds": "high"})


def test_verify_shows_a_stopping_row_which_has_no_then_and_now():
    from rich.console import Console

    from releasegate.report.verify import changes_table, seal_notes

    rows = [{"role": "stopping", "path": "run.json", "change": "the order asked differs from the manifest's"}]
    console = Console(width=120, record=True)
    console.print(changes_table({"run_id": "r", "created_at": "t", "config": "/x/c.yaml"}, rows))
    assert "the order asked differs" in console.export_text() and seal_notes(rows) == []
