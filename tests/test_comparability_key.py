"""The comparability key: stored in run.json when a run starts, derivable from an older run's snapshots, and
blind to what does not change the run (defaults written out, the rubric's name and baseline pointer)."""

from __future__ import annotations

import json

from releasegate.gate.comparability import differences, saved_settings_key, settings_key
from releasegate.record.records import RunDir
from test_compare import _runs


def test_a_new_run_stores_the_key_its_snapshots_give(project, cli):
    base, cand = _runs(project, cli)
    info = RunDir(base).read_info()
    assert set(info.comparability) == {"generation", "load", "slo", "rubric"} and all(info.comparability.values())
    derived = saved_settings_key(base, info.model_copy(update={"comparability": None}))  # as for an older run
    assert derived == info.comparability
    assert saved_settings_key(cand, RunDir(cand).read_info()) == info.comparability  # one config, two runs


def test_the_key_names_what_differs_and_ignores_what_does_not():
    base = settings_key({"generation": {"max_new_tokens": 32}, "load": {"sweep": {"slo": {"ttft_ms_p95": 500}}}},
                        {"name": "a", "criteria": [], "baseline": {"run": "/x"}})
    same = settings_key({"generation": {"max_new_tokens": 32, "temperature": 0}, "load": {"sweep": {"slo": {"ttft_ms_p95": 500}}}},
                        {"name": "b", "criteria": []})
    assert differences(base, same) == ([], [])
    other = settings_key({"generation": {"max_new_tokens": 32}, "load": {"sweep": {"slo": {"ttft_ms_p95": 900}}}},
                         {"criteria": [{"metric": "accuracy"}]})
    assert differences(base, other)[0] == ["slo", "rubric"]
    assert differences(base, settings_key(None, None)) == ([], ["generation", "load", "slo", "rubric"])


def test_runs_against_the_stub_server_compare_only_with_the_same_settings(tmp_path, cli):
    """End to end: `check` against the stub server, then `compare` and `servers` on the runs it left."""
    from releasegate.testing.stub_server import StubBehaviour, StubServer
    from test_cache import check, make_project

    with StubServer(StubBehaviour(ttft_ms=2, itl_ms=1, tokens=4)) as stub:
        config = make_project(tmp_path, stub.base_url, cases=8, cache="")
        check(cli, config, "a")
        check(cli, config, "b")
        make_project(tmp_path, stub.base_url, cases=8, cache="", generation="max_new_tokens: 2")
        check(cli, config, "short")
    reports = tmp_path / "reports"
    code, out, _ = cli("compare", reports / "a", reports / "b", "--json")
    assert code == 3 and json.loads(out)["verdict"] == "INCONCLUSIVE"  # 8 shared cases show no 0.02 margin
    code, _, err = cli("compare", reports / "a", reports / "short")
    assert code == 2 and "generation settings" in err
    code, _, err = cli("servers", reports / "a", reports / "short")
    assert code == 2 and "generation settings" in err
    code, out, _ = cli("servers", reports / "a", reports / "b", "--json")
    assert json.loads(out)["targets"][1]["parity"]["quality_verdict"] == "INCONCLUSIVE"
