"""Paired baseline comparison: McNemar on discordant pairs, margins, per-slice deltas, the gate and the CLI."""

import json

import pytest

from conftest import write_jsonl
from releasegate.gate.paired_comparison import Margins, compare_records
from releasegate.record.records import CaseRecord, Timing
from releasegate.stats.intervals import mcnemar_exact

SPEC = {"type": "exact"}


def recs(outcomes, *, ttft=100.0, task="t"):
    """outcomes: list of bools (answer right?)."""
    return [
        CaseRecord(case_id=f"c{i}", suite="s", tags={"task": task}, input={"prompt": "p"}, expected="yes", answer=SPEC,
                   output="yes" if ok else "no", timing=Timing(ttft_ms=ttft + i % 3, tpot_ms=5.0, e2e_ms=ttft + 50))
        for i, ok in enumerate(outcomes)
    ]


def row(result, metric):
    return next(r for r in result["rows"] if r["metric"] == metric)


def test_regression_is_detected_with_mcnemar():
    base = recs([True] * 40)
    cand = recs([True] * 28 + [False] * 12)
    result = compare_records(base, cand, ())
    acc = row(result, "accuracy")
    assert (acc["worse"], acc["better"]) == (12, 0)
    assert acc["p_value"] == pytest.approx(mcnemar_exact(12, 0)) and acc["p_value"] < 0.001
    assert acc["delta"] == pytest.approx(-0.3) and acc["verdict"] == "fail"


def test_identical_runs_are_non_inferior():
    base = recs([True] * 150 + [False] * 50)
    result = compare_records(base, recs([True] * 150 + [False] * 50), ())
    assert row(result, "accuracy")["verdict"] == "pass" and row(result, "accuracy")["p_value"] == 1.0


def test_identical_runs_of_too_few_cases_decide_nothing():
    # 40 ties cannot tell "the same" from "0.02 worse": the score bound needs 155 shared cases at 0.95, whatever the split
    result = compare_records(recs([True] * 30 + [False] * 10), recs([True] * 30 + [False] * 10), ())
    acc = row(result, "accuracy")
    assert acc["verdict"] == "insufficient" and acc["needed_n"] == 155 and "at least 155" in acc["note"]


def test_small_noisy_difference_is_inconclusive():
    base = recs([True] * 8 + [False] * 2)
    cand = recs([True] * 7 + [False] * 3)
    assert row(compare_records(base, cand, ()), "accuracy")["verdict"] == "insufficient"


def test_only_shared_cases_are_compared():
    result = compare_records(recs([True] * 10), recs([True] * 6), ())
    assert result["shared_cases"] == 6 and result["only_in_baseline"] == 4 and result["only_in_candidate"] == 0


def test_latency_regression_beyond_relative_margin():
    result = compare_records(recs([True] * 30, ttft=100), recs([True] * 30, ttft=200), (), Margins(confidence=0.95))
    ttft = row(result, "ttft_ms")
    assert ttft["delta"] == pytest.approx(100.0) and ttft["verdict"] == "fail"
    assert row(compare_records(recs([True] * 30), recs([True] * 30, ttft=101), ()), "ttft_ms")["verdict"] == "pass"


def test_per_slice_deltas():
    base = recs([True] * 20, task="a")
    cand = recs([True] * 10 + [False] * 10, task="a")
    slices = {r["slice"]: r for r in compare_records(base, cand, ())["slices"]}
    assert slices["task=a"]["delta"] == pytest.approx(-0.5) and slices["task=a"]["verdict"] == "fail"


def _runs(project, cli, good_n=30, bad_n=12):
    suite = [{"id": f"q{i}", "prompt": f"q{i}", "expected": "yes", "tags": {"domain": "customer_support"}} for i in range(good_n)]
    write_jsonl(project / "suites/example.jsonl", suite)
    cfg = project / "releasegate.yaml"
    cfg.write_text(cfg.read_text().replace("{type: json_fields, fields: [intent, priority]}", "{type: exact}").replace("      - {type: json}\n", "      - {type: max_length, max_chars: 10}\n"))
    (project / "rubrics/example.yaml").write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.5}\n")
    write_jsonl(project / "responses.jsonl", [{"id": f"q{i}", "output": "yes"} for i in range(good_n)])
    cli("check", "-c", cfg, "--run-id", "base", "--no-progress")
    write_jsonl(project / "responses.jsonl", [{"id": f"q{i}", "output": "yes" if i >= bad_n else "no"} for i in range(good_n)])
    cli("check", "-c", cfg, "--run-id", "cand", "--no-progress")
    return project / "reports" / "base", project / "reports" / "cand"


def test_compare_cli_fails_the_regression(project, cli):
    base, cand = _runs(project, cli)
    code, out, _ = cli("compare", base, cand, "--json")
    result = json.loads(out)
    assert code == 1 and result["verdict"] == "FAIL"
    acc = row(result, "accuracy")
    assert acc["verdict"] == "fail" and acc["p_value"] == pytest.approx(mcnemar_exact(12, 0))
    code, _, err = cli("compare", base, base)
    assert code == 2 and "the same run" in err


def test_baseline_in_the_rubric_fails_check(project, cli):
    base, cand = _runs(project, cli)
    rubric = project / "rubrics/example.yaml"
    rubric.write_text(rubric.read_text() + f"baseline: {{run: {base}, margins: {{accuracy: 0.05}}}}\n")
    code, out, _ = cli("gate", cand, "--rubric", rubric, "--json")
    report = json.loads(out)
    regression = next(c for c in report["criteria"] if c["name"] == "accuracy vs baseline")
    assert code == 1 and regression["verdict"] == "fail" and "McNemar p=" in regression["reason"]
    assert report["comparison"]["rows"][0]["worse"] == 12


def test_identical_outputs_counts_the_same_text_case_by_case():
    base = recs([True] * 6)
    cand = recs([True] * 4 + [False] * 2)
    cand[0] = cand[0].model_copy(update={"output": "yes "})  # passes the scorer, but is not the same text
    base[5] = base[5].model_copy(update={"output": None})  # a failed request matches nothing
    assert compare_records(base, cand, ())["identical_outputs"] == 3
