"""`releasegate compare` says PASS only for two whole runs whose target was run (docs/guarantees.md, "What a PASS
guarantees", 1 and 2): the shared cases of a cut-short or failed run are not the run."""

from __future__ import annotations

import json

from releasegate.record.records import RunDir
from test_false_pass import Run, _healthy, err


def built(run: Run, path, run_id: str):
    """`run` built under `path`, with its own run id (two hand-built runs are otherwise copies of one run)."""
    built_path = run.build(path)
    info = RunDir(built_path).read_info()
    RunDir(built_path).write_info(info.model_copy(update={"run_id": run_id}))
    return built_path


def test_compare_with_an_interrupted_candidate_is_inconclusive(tmp_path, cli):
    base = built(Run(_healthy(100)), tmp_path / "a", "a")
    cand = built(Run(_healthy(60), status="interrupted", cases=100), tmp_path / "b", "b")
    code, out, _ = cli("compare", base, cand, "--json")
    result = json.loads(out)
    assert code == 3 and result["verdict"] == "INCONCLUSIVE"
    assert "candidate run" in result["incomplete"] and "40 of 100 cases have no record" in result["incomplete"]


def test_compare_with_an_incomplete_baseline_is_inconclusive(tmp_path, cli):
    base = built(Run(_healthy(100)[:50], cases=100), tmp_path / "a", "a")
    cand = built(Run(_healthy(100)), tmp_path / "b", "b")
    code, out, _ = cli("compare", base, cand, "--json")
    assert code == 3 and "baseline run" in json.loads(out)["incomplete"]


def test_compare_with_a_candidate_that_failed_most_requests_is_a_target_error(tmp_path, cli):
    # cases with no answer or format check: the failed ones compare on nothing, so only health can catch them
    bare = [{**r, "answer": None, "format": []} for r in _healthy(100)]
    failed = [{**r, "answer": None, "format": []} for r in (_healthy(10) + [err(i) for i in range(10, 100)])]
    base = built(Run(bare), tmp_path / "a", "a")
    cand = built(Run(failed), tmp_path / "b", "b")
    code, out, _ = cli("compare", base, cand, "--json")
    result = json.loads(out)
    assert code == 4 and result["verdict"] == "TARGET_ERROR" and "failed 90 of 100" in result["target_error"]


def test_compare_of_two_whole_runs_still_passes(tmp_path, cli):
    base = built(Run(_healthy(200)), tmp_path / "a", "a")
    cand = built(Run(_healthy(200)), tmp_path / "b", "b")
    code, out, _ = cli("compare", base, cand, "--json")
    result = json.loads(out)
    assert code == 0 and result["verdict"] == "PASS" and result["incomplete"] is None
