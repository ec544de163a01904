"""report.html is rendered by its template translated to Python (report/report_page.py, written by
scripts/compile_templates.py): the module is what a fresh translation gives, and its page is byte for byte what
jinja2 renders from the template, on a checked run and on pages that take every branch of the template (every
section there and none, hostile run text, what-if and each verdict)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import SimpleNamespace as NS

import pytest
from markupsafe import Markup

from conftest import GOOD, write_jsonl
from releasegate.record.records import RunDir
from releasegate.report import html, report_page
from releasegate.report.page_codegen import TEMPLATE, reference_environment
from releasegate.report.page_runtime import UndefinedError
from releasegate.report.view import RunView

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = "<script>x</script> & \u202e\u0007 {\"a\":[1,2]} " + "long " * 80


def jinja2_page(context: dict) -> str:
    return reference_environment().get_template(TEMPLATE).render(**context)


def test_the_module_is_what_the_template_gives():
    spec = importlib.util.spec_from_file_location("compile_templates", ROOT / "scripts" / "compile_templates.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.OUT.read_text("utf-8") == script.render(), "run: python scripts/compile_templates.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    """A run checked through the replay backend: one right answer, one hostile one."""
    from releasegate.cli import main
    from releasegate.inputs.scaffold import scaffold

    project = tmp_path_factory.mktemp("page")
    scaffold(project)
    config = project / "releasegate.yaml"
    text = config.read_text().replace("  backend: hf ", "  backend: replay\n  responses: responses.jsonl\n  #")
    config.write_text(text.replace("  base: your-org/your-base-model", ""))
    write_jsonl(project / "responses.jsonl", [{"id": "example-001", "output": GOOD},
                                              {"id": "example-002", "output": HOSTILE}])
    cwd = os.getcwd()
    os.chdir(project)
    try:
        assert main(["check", "-c", "releasegate.yaml", "--run-id", "r", "--no-progress", "--allow-pending"]) in (0, 1)
    finally:
        os.chdir(cwd)
    return RunDir(project / "reports" / "r")


def test_a_runs_page_is_what_jinja2_renders(run: RunDir, monkeypatch: pytest.MonkeyPatch):
    given: list[dict] = []
    monkeypatch.setattr(html, "render_page", lambda context: given.append(context) or report_page.render(context))
    page = html.render_html(RunView.load(run))
    assert page == jinja2_page(given[0])
    assert "&lt;script&gt;" in page and "<script>" not in page and "\u202e" not in page


def _case(passed: bool, output: str | None, reviews: list) -> dict:
    folded = {"preview": HOSTILE[:280] + "…", "full": HOSTILE, "chars": len(HOSTILE)}
    row = NS(passed=passed, case_id="c<1>", suite="s", results=[NS(passed=True, check="a"), NS(passed=None, check="b"),
                                                              NS(passed=False, check="c")],
             why=["wrong & late"], output=output, error="timeout", error_message=HOSTILE, reviews=reviews,
             ttft_ms=12.5, e2e_ms=None, output_tokens=3)
    return {"row": row, "tags": ["kind=must_refuse_bait"], "input": folded,
            "expected": {"preview": "", "full": None, "chars": 0}, "output": folded}


def _everything(verdict: str, whatif: bool) -> dict:
    metric = NS(value=0.5, note=HOSTILE, n=3, interval=[0.1, 0.9])
    table = {"columns": ["a", "b<"], "rows": [["1", HOSTILE], ["2", "3"]]}
    report = NS(run_id="r<1>", target_error="down", incomplete="few", exit_code=1, target="t", rubric="rb",
                counts={"cases": 3, "cached": 1, "errors": {"timeout": 2, "http_5xx": 1}}, client_saturated="late",
                verdict_reason=HOSTILE)
    return {
        "csp": "default-src 'none'", "css": Markup("b > i {}"), "report": report,
        "info": NS(created_at="2024", backend="hf", run_id="r", status="done", finished_at=None,
                   versions={"a": "1", "b": "2"}, host={}),
        "judged_by": "by rubric.yaml", "whatif": whatif, "verdict": verdict, "verdict_class": verdict.lower(),
        "failed_criteria": [NS(name="acc<"), NS(name="lat")], "headline": [
            {"label": "accuracy", "value": "50%", "n": 3, "interval": "a–b", "source": "quality"},
            {"label": "x", "value": "1", "n": 1, "interval": "", "source": ""}],
        "criteria": [{"verdict": "fail", "name": "n", "metric": "accuracy", "where": "kind=a", "source": "s",
                      "threshold_text": ">= 0.9", "value": 0.5, "interval_text": "", "n": 3, "reason": HOSTILE}],
        "bounds_note": "bounds", "requests": "3 requests", "answered": "2 answered", "review_pending": True,
        "latency": [{"label": "TTFT", "values": [1.0, None, 3.0], "n": 3}],
        "plots": {"cdf": Markup("<svg/>"), "split": Markup("<svg id=s/>")}, "latency_source": "quality",
        "slices_source": "load", "load_phase": table, "capacity": {**table, "lines": ["c"], "plot": Markup("<svg/>")},
        "prefix_cache": ["warm"], "response_cache": {**table, "lines": ["l"], "wrong": [HOSTILE], "plot": ""},
        "cost": {"config": {"input_usd_per_1m": 1.0, "output_usd_per_1m": None, "x": 2}, "per_1m": metric,
                 "total": None, "input_tokens": 12345, "output_tokens": 7, "generation_seconds": 1.5,
                 "load_seconds": 0.25, "throughput": NS(value=None)},
        "slices": {"columns": ["accuracy", "ttft_ms_p95"], "rows": [{"slice": "all", "n": 3, "accuracy": 0.5,
                                                                     "ttft_ms_p95": None}], "timed": True},
        "metrics": [("accuracy", metric, "share right", False), ("ttft_ms_p95", NS(value=None, n=0, interval=None,
                                                                                   note=None), "", True)],
        "comparison": {"baseline": "b", "summary": "s", "columns": ["m", "x", "verdict"],
                       "rows": [["acc", "1", "fail"]], "slices": [["s", "pass"]], "slice_columns": ["s", "v"],
                       "notes": [HOSTILE]},
        "other_comparison": table, "computed": "locally",
        "review": table, "judge": {"lines": ["j"], **table}, "guard_lines": ["g"],
        "feature_sections": [("Feature <x>", [("label", HOSTILE)])],
        "sequences": [{"name": "acc", "op": ">=", "threshold": 0.9, "decided_at": 12, "verdict": "fail", "cases": 30,
                       "lower": 0.1, "upper": 0.8, "svg": Markup("<svg/>")}],
        "stability": {"lines": ["st"], "tables": [("Repeated draws", ["a"], [["1"]])]},
        "cases": [_case(False, None, [NS(label="approve", reviewer="ann", reason=HOSTILE), NS(label="reject",
                                                                                           reviewer="bo", reason="")]),
                  _case(True, "ok", [])],
        "n_cases": 2, "n_failing": 1, "n_hidden": 0, "baseline": "baseline b",
    }


def _nothing(verdict: str) -> dict:
    context = _everything(verdict, whatif=False)
    context.update(
        headline=[], plots={}, latency=[], load_phase=None, prefix_cache=[], response_cache=None, capacity=None,
        slices={"columns": [], "rows": [], "timed": False}, comparison=None, other_comparison=None, stability=None,
        judge=None, feature_sections=[], sequences=[], guard_lines=[], review=None, cases=[], n_failing=0,
        n_hidden=5, judged_by="", baseline="", bounds_note="", requests="", review_pending=False,
        cost={"config": {}, "per_1m": None, "total": NS(value=2.0, note=None), "input_tokens": 0, "output_tokens": 0,
              "generation_seconds": None, "load_seconds": None, "throughput": NS(value=3.0)},
        info=NS(created_at="2024", backend="replay", run_id="r", status="done", finished_at="2025", versions={},
                host={"cpu": "x", "os": "y"}),
    )
    context["report"].counts = None
    context["report"].verdict_reason = None
    context["report"].client_saturated = None
    return context


@pytest.mark.parametrize("verdict", ["PASS", "FAIL", "NEEDS_REVIEW", "TARGET_ERROR", "INCONCLUSIVE"])
@pytest.mark.parametrize("whatif", [False, True])
def test_every_branch_renders_as_jinja2_renders_it(verdict: str, whatif: bool):
    for context in (_everything(verdict, whatif), _nothing(verdict)):
        assert report_page.render(context) == jinja2_page(context)
    other = {**_nothing(verdict), "other_comparison": {"columns": ["k"], "rows": [["v"]]}}
    assert report_page.render(other) == jinja2_page(other)


def test_what_the_template_reads_and_is_not_there_fails_as_in_jinja2():
    context = _nothing("PASS")
    del context["csp"]
    with pytest.raises(UndefinedError, match="'csp' is undefined"):
        report_page.render(context)
    context = {**_nothing("PASS"), "report": NS(run_id="r")}  # report.exit_code and others missing
    with pytest.raises(UndefinedError, match="has no attribute 'target_error'|has no attribute 'exit_code'"):
        report_page.render(context)
