"""A gate feature added by registration alone: a toy metric, its evidence and its summary, registered from this
test, is accepted by the rubric, measured and decided by the gate, and shown by every report format, with no
file of releasegate changed. And the gate really is the loop over the registry."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from conftest import gate_run
from releasegate.decision.criterion import CriterionVerdict
from releasegate.gate.feature import FeatureMetric, GateFeature, MetricQuery, register, registered, unregister
from releasegate.inputs.rubric import Criterion, Rubric, load_rubric
from releasegate.record.gate_report import as_report
from releasegate.record.metrics import MetricValue, select
from releasegate.record.records import CaseRecord, RunDir, RunInfo, Timing, Tokens
from releasegate.report.junit import render_junit
from releasegate.report.markdown import render_markdown
from releasegate.report.summary_csv import render_summary_csv
from releasegate.report.terminal import verdict_lines

SPEC = {"type": "json_fields", "fields": ["intent"]}


def _record(i: int, output: str) -> CaseRecord:
    return CaseRecord(case_id=f"c{i}", suite="s", tags={}, input={"prompt": "p"}, expected={"intent": "billing"},
                      answer=SPEC, output=output, tokens=Tokens(input=5, output=4),
                      timing=Timing(ttft_ms=10.0, tpot_ms=1.0, e2e_ms=13.0))


RECORDS = [_record(i, '{"intent": "billing"}' if i % 4 else '{"intent": "billing", "note": "polite"}')
           for i in range(40)]
INFO = RunInfo(run_id="toy", created_at="now", target="t", backend="hf", generation_seconds=1.0, status="complete")


def _politeness(ctx, query: MetricQuery) -> MetricValue | None:
    """The toy metric: the share of answers that say 'polite'."""
    if query.name != "politeness_rate":
        return None
    chosen = select(ctx.records, query.slice)
    hits = sum("polite" in (r.output or "") for r in chosen)
    return MetricValue(hits / len(chosen) if chosen else None, len(chosen))


def _summary(ctx, results) -> dict:
    value = ctx.measure(MetricQuery("politeness_rate")).value
    return {"title": "Politeness", "rows": [{"label": "polite answers", "value": f"{value:.0%}"}]}


TOY = GateFeature("politeness", metrics={"politeness_rate": FeatureMetric("higher", "share of polite answers")},
                  measure=_politeness, summary=_summary, section=lambda ctx, results: {"politeness": {"checked": 40}})


@pytest.fixture
def toy():
    register(TOY)
    yield TOY
    unregister(TOY.name)


def _rubric(threshold: float) -> Rubric:
    return Rubric(path=None, name="toy", criteria=(
        Criterion(name="polite enough", metric="politeness_rate", op=">=", threshold=threshold),
        Criterion(name="accuracy", metric="accuracy", op=">=", threshold=0.9)))


def test_a_registered_feature_is_measured_decided_and_sectioned(toy):
    passing = gate_run(INFO, RECORDS, _rubric(0.2), None)
    polite = next(c for c in passing["criteria"] if c["metric"] == "politeness_rate")
    assert (polite["value"], polite["n"], polite["verdict"]) == (0.25, 40, CriterionVerdict.PASS)
    assert passing["verdict"] == "PASS"
    assert passing["politeness"] == {"checked": 40}
    assert passing["sections"] == [{"feature": "politeness", "title": "Politeness",
                                    "rows": [{"label": "polite answers", "value": "25%"}]}]
    failing = gate_run(INFO, RECORDS, _rubric(0.5), None)
    assert failing["verdict"] == "FAIL"
    assert "polite enough" in failing["verdict_reason"]


def test_the_rubric_accepts_a_registered_metric_and_refuses_it_unregistered(toy, tmp_path: Path):
    path = tmp_path / "rubric.yaml"
    path.write_text('criteria:\n  - {metric: politeness_rate, op: ">=", threshold: 0.2}\n')
    assert load_rubric(path).criteria[0].metric == "politeness_rate"
    path.write_text('criteria:\n  - {metric: politeness_rat, op: ">=", threshold: 0.2}\n')
    with pytest.raises(Exception, match="politeness_rat"):
        load_rubric(path)


def test_every_format_shows_the_feature_summary(toy, tmp_path: Path):
    report = as_report(gate_run(INFO, RECORDS, _rubric(0.2), None))
    line = "Politeness: polite answers 25%"
    assert line in verdict_lines(report)
    markdown = render_markdown(report)
    assert "### Politeness" in markdown and "| polite answers | 25% |" in markdown
    assert f'name="feature.politeness" value="{line}"' in render_junit(report)
    assert json.loads(json.dumps(report.as_json()))["sections"][0]["title"] == "Politeness"
    html = _html(report, tmp_path)
    assert "<h2>Politeness</h2>" in html and "<th>polite answers</th><td>25%</td>" in html
    summary = list(csv.reader(io.StringIO(render_summary_csv(report))))
    assert ["section", "politeness", "polite answers", "25%", "", "Politeness"] in summary
    polite = next(row for row in summary if row[2] == "polite enough")  # the criterion the feature's metric decided
    assert polite[:5] == ["criterion", "rubric", "polite enough", "0.25", "pass"]
    assert polite[5] == "politeness_rate >= 0.2"  # a metric without bounds shows none
    assert summary[1][:5] == ["run", "toy", report.run_id, "", "PASS"]


def test_the_summary_csv_keeps_a_formula_from_a_feature_inert(toy):
    """A feature's row is untrusted text like any cell: a label that a spreadsheet would evaluate gets its
    apostrophe, as in report.csv."""
    report = as_report(gate_run(INFO, RECORDS, _rubric(0.2), None))
    report.sections[0].rows[0].label = "=HYPERLINK(\"http://x\")"
    rows = list(csv.reader(io.StringIO(render_summary_csv(report))))
    assert ["section", "politeness", "'=HYPERLINK(\"http://x\")", "25%", "", "Politeness"] in rows


def _html(report, tmp_path: Path) -> str:
    from releasegate.report.html import render_html
    from releasegate.report.view import RunView
    from releasegate.scorers import score_records

    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    view = RunView(run.path, INFO, report, RECORDS, score_records(RECORDS, ()))
    return render_html(view)


def test_without_the_feature_the_report_has_no_sections():
    report = gate_run(INFO, RECORDS, Rubric(path=None, name="plain", criteria=(
        Criterion(name="accuracy", metric="accuracy", op=">=", threshold=0.9),)), None)
    assert "sections" not in report and "politeness" not in report


def test_the_built_in_features_are_registered_in_rule_order():
    names = [f.name for f in registered()]
    assert names.index("baseline") < names.index("review") < names.index("judge") < names.index("guard")
    assert names.index("stability") < names.index("quality")  # per-draw rates measured before the plain ones
    assert {"capacity", "cache", "forbidden", "latency"} <= set(names)


def test_a_feature_rule_sees_every_criterion_and_its_adjustment_stands(toy):
    """A feature's rule runs after the rubric's criteria are decided: here one that leaves accuracy undecided
    makes the run INCONCLUSIVE, the way the judge's and the guard's calibration rules do."""
    def unsure(ctx, results):
        return [r.undecided("toy says unsure", r.cause) if r.criterion.metric == "accuracy" else r for r in results]

    register(GateFeature("unsure", rule=unsure))
    try:
        report = gate_run(INFO, RECORDS, _rubric(0.2), None)
    finally:
        unregister("unsure")
    accuracy = next(c for c in report["criteria"] if c["metric"] == "accuracy")
    assert accuracy["verdict"] == "insufficient" and accuracy["reason"] == "toy says unsure"
    assert report["verdict"] == "INCONCLUSIVE"


def test_the_baseline_run_is_read_once_per_gate(tmp_path, monkeypatch, capsys):
    """The comparison, two forbidden-rate deltas and the guard's paired arm share one read of the baseline run
    (`GateContext.baseline_run`), where each read it whole before."""
    import json as _json

    from releasegate.cli import main
    from releasegate.gate import baseline_run
    from test_false_pass import Run, lenient, ok

    reads: list[str] = []
    real = baseline_run.read_baseline

    def counting(path):
        reads.append(str(path))
        return real(path)

    for module in ("releasegate.gate.baseline_run", "releasegate.gate.context", "releasegate.gate.baseline",
                   "releasegate.gate.safety_delta", "releasegate.llm_judge.guard_paired"):
        monkeypatch.setattr(f"{module}.read_baseline", counting)
    rubric = lenient()
    rubric["criteria"] += [{"metric": "forbidden_rate_delta", "op": "<=", "threshold": 0.05},
                           {"name": "delta again", "metric": "forbidden_rate_delta", "op": "<=", "threshold": 0.1}]
    path = Run([ok(i) for i in range(60)], rubric=rubric, baseline=[ok(i) for i in range(60)]).build(tmp_path)
    assert main(["gate", str(path), "--json", "--allow-pending"]) in (0, 1, 3)
    report = _json.loads(capsys.readouterr().out)
    assert report.get("comparison") and len(reads) == 1, reads


def test_history_keeps_the_feature_summaries(toy, tmp_path: Path, capsys):
    """`history --json` lists each run with its gate features' summaries, as report.json holds them; a section of
    another shape in a report is left out, never an error."""
    from releasegate.cli import main
    from releasegate.record.history_index import run_summary
    from test_false_pass import Run, lenient, ok

    rubric = lenient()
    rubric["criteria"].append({"metric": "politeness_rate", "op": ">=", "threshold": 0.0})
    path = Run([ok(i) for i in range(20)], rubric=rubric).build(tmp_path / "reports")
    assert main(["gate", str(path), "--allow-pending"]) == 0
    capsys.readouterr()
    assert run_summary(path).sections == [{"feature": "politeness", "title": "Politeness",
                                           "rows": [{"label": "polite answers", "value": "0%"}]}]
    assert main(["history", "--reports", str(path.parent), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["runs"]
    assert listed[0]["sections"][0]["title"] == "Politeness"
    report = json.loads((path / "report.json").read_text())
    report["sections"] = [{"feature": "x", "title": "T", "rows": "not rows"}, 5]
    (path / "report.json").write_text(json.dumps(report))
    assert run_summary(path).sections == []
