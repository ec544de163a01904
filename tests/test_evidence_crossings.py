"""Where two evidence rules meet: each case once reached PASS, a recommendation or an internal error where it must
not (docs/guarantees.md, "What a PASS guarantees"). Hand-built run directories, judged through the CLI."""

from __future__ import annotations

import json

import pytest

from releasegate.cli import main
from releasegate.record.judge_journal import Judgment
from releasegate.record.review_outcome import output_hash
from test_capacity_kept_up import OVERLOADED, paced_sweep
from test_false_pass import NO_REVIEW, Run, _healthy, _journal, err, lenient, ok
from test_judge_calibration_design import FINGERPRINT, JudgedRun, _judgment, judged, population


def gate(path, capsys) -> tuple[int, dict]:
    code = main(["gate", str(path), "--json"])
    return code, json.loads(capsys.readouterr().out)


def with_sessions(path, *clients: dict) -> None:
    info = json.loads((path / "run.json").read_text())
    info["sessions"] = [{"mode": "start" if i == 0 else "resume", "status": "complete", "client": c}
                        for i, c in enumerate(clients)]
    (path / "run.json").write_text(json.dumps(info))


BATCHED = {"client": "lean", "loop_lag_ms": {"p50": 0.2, "p99": 1.0, "max": 2.0, "n": 900}, "cpu_share": 0.3,
           "itl_batched_share": 0.95}
CLEAN_BUT_LATER = {"client": "lean", "loop_lag_ms": {"p50": 0.3, "p99": 2.0, "max": 3.0, "n": 100},
                   "cpu_share": 0.3, "itl_batched_share": 0.0}
TPOT = lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.8},
                         {"metric": "tpot_ms_p50", "op": "<=", "threshold": 10}])


def test_a_resume_never_hides_a_part_read_in_batches(tmp_path, capsys):
    path = Run(_healthy(), rubric=TPOT, client=CLEAN_BUT_LATER).build(tmp_path)
    with_sessions(path, BATCHED, CLEAN_BUT_LATER)
    code, report = gate(path, capsys)
    assert (code, report["verdict"]) == (3, "INCONCLUSIVE")
    assert next(c for c in report["criteria"] if c["metric"] == "tpot_ms_p50")["verdict"] == "insufficient"


def test_a_client_figure_that_is_not_a_number_says_nothing(tmp_path, capsys):
    odd = {"client": "lean", "loop_lag_ms": {"p50": "x", "p99": "12abc"}, "itl_batched_share": "0.9"}
    path = Run(_healthy(), rubric=TPOT, client=odd).build(tmp_path)
    code, report = gate(path, capsys)
    assert code in (0, 3) and report["verdict"] in ("PASS", "INCONCLUSIVE")  # judged, never an internal error


def _pairwise_run(root, *, failed_as_errors: bool):
    """100 judge-scored cases against a baseline run: 80 ties, 5 losses, and 15 more that are losses or, with
    `failed_as_errors`, failed requests (http_5xx)."""
    base_records = [judged(i, {"task": "t"}) for i in range(100)]
    base = Run(base_records).build(root / "b")
    records, judgments, labels = [], [], []
    for i in range(100):
        r = {**judged(i, {"task": "t"}), "output": f"cand {i}"}
        if i >= 85 and failed_as_errors:
            records.append({**r, "output": None, "error": "http_5xx", "error_message": "503"})
            continue
        records.append(r)
        judgments.append(_judgment(r["case_id"], True, r["output"]))
        labels.append((r["case_id"], "approve"))
        judgments += [Judgment(case_id=r["case_id"], criterion="helpful", judge=FINGERPRINT,
                               output_hash=output_hash(r["output"]), order=order,
                               preferred="tie" if i < 80 else "baseline",
                               baseline_hash=output_hash(base_records[i]["output"]), reason="r").model_dump(mode="json")
                      for order in ("candidate_first", "baseline_first")]
    rubric = {"name": "pairwise", "review": NO_REVIEW, "judge": {"min_agreement": 0.8, "min_labels": 20},
              "criteria": [{"metric": "pairwise_loss_rate", "op": "<=", "threshold": 0.1},
                           {"metric": "error_rate", "op": "<=", "threshold": 0.2}]}
    path = Run(records, rubric=rubric, labels=labels).build(root / "c")
    info = json.loads((path / "run.json").read_text())
    info["judge"] = {"backend": "replay", "model": "judge", "fingerprint": FINGERPRINT, "on_error": "insufficient",
                     "baseline": str(base)}
    (path / "run.json").write_text(json.dumps(info))
    _journal(path / "judgments.jsonl", judgments)
    return path


@pytest.mark.parametrize("failed_as_errors", [False, True])
def test_a_failed_candidate_request_is_a_pairwise_loss(failed_as_errors, tmp_path, capsys):
    code, report = gate(_pairwise_run(tmp_path, failed_as_errors=failed_as_errors), capsys)
    loss = next(c for c in report["criteria"] if c["metric"] == "pairwise_loss_rate")
    assert (code, report["verdict"], loss["value"]) == (1, "FAIL", pytest.approx(0.2))


def test_cached_cases_never_dilute_the_error_rate(tmp_path, capsys):
    records = [ok(i) for i in range(990)] + [err(i, "http_5xx") for i in range(990, 1000)]
    for r in records[:950]:
        r["cached"] = True
    code, report = gate(Run(records).build(tmp_path), capsys)
    assert (code, report["verdict"]) == (1, "FAIL")
    guard = next(c for c in report["criteria"] if c["metric"] == "error_rate")
    assert guard["value"] == pytest.approx(10 / 50) and guard["n"] == 50
    assert report["counts"]["phases"]["quality"]["requests"] == 50


def test_a_run_answered_wholly_from_the_cache_carries_the_requests_that_produced_it(tmp_path, capsys):
    records = [ok(i) for i in range(100)]
    for r in records:
        r["cached"] = True  # entries that do not know the requests behind them: no error rate to decide on
    code, report = gate(Run(records).build(tmp_path / "unknown"), capsys)
    assert (code, report["verdict"]) == (3, "INCONCLUSIVE")
    for r in records:
        r["produced_by"] = [None]  # each answered on its first request, in the session that cached it
    code, report = gate(Run(records).build(tmp_path), capsys)
    assert (code, report["verdict"]) == (0, "PASS")
    own = lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.8},
                            {"metric": "error_rate", "op": "<=", "threshold": 0.05}])
    unknown = [{**r, "produced_by": None} for r in records]
    code, report = gate(Run(unknown, rubric=own).build(tmp_path / "own"), capsys)
    assert (code, report["verdict"]) == (3, "INCONCLUSIVE")  # the rubric's own error criterion: nothing known sent


def test_reviewer_correction_counts_empty_answers_as_wrong(tmp_path, capsys):
    recs, grades, labels = population((80, {"task": "t"}, True, 80, 0))
    empty, _, _ = population((20, {"task": "t"}, True, 0, 0), start=500)
    for r in empty:
        r["output"] = ""
    rubric = {"name": "judged", "review": NO_REVIEW, "judge": {"min_agreement": 0.8, "min_labels": 20},
              "criteria": [{"metric": "accuracy", "op": ">=", "threshold": 0.9},
                           {"metric": "error_rate", "op": "<=", "threshold": 0.25}]}
    code, report = gate(JudgedRun(recs + empty, rubric=rubric, labels=labels, grades=grades).build(tmp_path), capsys)
    assert report["verdict"] != "PASS" and code != 0
    accuracy = next(c for c in report["criteria"] if c["metric"] == "accuracy")
    assert accuracy["value"] is None or accuracy["value"] <= 0.8 + 1e-9


def _two_targets(tmp_path):
    accuracy_only = lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.8}])
    broken, good = paced_sweep([(16, OVERLOADED)]), paced_sweep([(16, {}), (32, {}), (64, {})])
    broken.rubric = good.rubric = accuracy_only
    broken.records = good.records = _healthy(200)  # parity at a 0.02 margin needs 155 shared cases
    a, b = broken.build(tmp_path / "a"), good.build(tmp_path / "b")
    info = json.loads((b / "run.json").read_text())
    info.update(run_id="b", created_at="2026-12-01T01:00:00+00:00")
    (b / "run.json").write_text(json.dumps(info))
    return a, b


def test_servers_never_recommends_a_target_whose_sweep_found_no_capacity(tmp_path, capsys):
    a, b = _two_targets(tmp_path)
    code = main(["servers", str(a), str(b), "--json"])
    result = json.loads(capsys.readouterr().out)  # nothing is chosen over a reference that does not qualify
    assert code == 3 and result["recommended"] is None and "does not qualify" in result["recommendation"]
    code = main(["servers", str(b), str(a), "--json"])
    result = json.loads(capsys.readouterr().out)
    assert result["recommended"] == "b"


def test_compare_on_a_corner_of_the_baseline_speaks_for_no_run(tmp_path, capsys):
    base = Run([ok(i) for i in range(1000)]).build(tmp_path / "base")
    cand = Run([ok(i) for i in range(150)], cases=150).build(tmp_path / "cand")
    info = json.loads((cand / "run.json").read_text())
    info.update(run_id="cand", created_at="2026-12-01T01:00:00+00:00")
    (cand / "run.json").write_text(json.dumps(info))
    code = main(["compare", str(base), str(cand), "--json"])
    result = json.loads(capsys.readouterr().out)
    assert (code, result["verdict"]) == (3, "INCONCLUSIVE")
    assert "cover 15% of the reference's 1000 cases" in result["incomplete"]


def test_a_sampling_override_in_extra_body_is_another_generation_setting():
    from releasegate.gate.comparability import settings_key

    plain = settings_key({"generation": {"max_new_tokens": 64}, "target": {"backend": "openai"}}, None)
    hot = settings_key({"generation": {"max_new_tokens": 64},
                        "target": {"backend": "openai", "extra_body": {"temperature": 1.2}}}, None)
    lora = settings_key({"generation": {"max_new_tokens": 64},
                         "target": {"backend": "openai", "extra_body": {"lora": [{"id": 0, "scale": 1}]}}}, None)
    assert hot["generation"] != plain["generation"] == lora["generation"]


def test_a_stratum_of_no_rows_is_a_corrupt_record_not_an_internal_error(tmp_path, capsys):
    records = _healthy(10)
    records[0]["stratum"] = {"name": "risk=high", "population": 0}
    path = Run(records).build(tmp_path)
    _journal(path / "records.jsonl", records)
    assert main(["gate", str(path), "--json"]) == 2


def test_a_limited_run_speaks_for_its_part_only(tmp_path, capsys):
    path = Run([ok(i) for i in range(100)]).build(tmp_path)
    info = json.loads((path / "run.json").read_text())
    (path / "run.json").write_text(json.dumps({**info, "limit": 100}))  # a run from before cuts were recorded
    code, report = gate(path, capsys)
    assert code == 3 and "part of the suites only (--limit 100)" in report["verdict_reason"]


def test_a_corpus_value_is_computed_again_when_a_scorer_library_changes(monkeypatch):
    from types import SimpleNamespace

    from releasegate.scorers import evaluate_metric

    spec = SimpleNamespace(module="releasegate:bleu", key=None, name="bleu")
    records = [SimpleNamespace(output="a b c", expected="a b c")]
    before = evaluate_metric.corpus_fingerprint(spec, records)
    monkeypatch.setattr(evaluate_metric, "scorer_code", lambda: "sacrebleu upgraded")
    assert evaluate_metric.corpus_fingerprint(spec, records) != before
