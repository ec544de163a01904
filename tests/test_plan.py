"""`releasegate plan`: the counts before the first request, from the suites alone and from a run of the same
target; the budget warning; bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import write_jsonl
from releasegate.testing import StubBehaviour, StubServer


def _project(tmp: Path, cases: int = 12, extra: str = "", backend: str = "backend: replay, responses: r.jsonl") -> Path:
    rows = [{"id": f"c{i}", "prompt": "x" * 40, "expected": "yes"} for i in range(cases)]
    write_jsonl(tmp / "s.jsonl", rows)
    write_jsonl(tmp / "r.jsonl", [{"id": r["id"], "output": "yes"} for r in rows])
    (tmp / "rubric.yaml").write_text("name: p\ncriteria:\n  - {metric: accuracy, op: '>=', threshold: 0.5}\n")
    (tmp / "c.yaml").write_text(
        f"target: {{{backend}}}\ngeneration: {{max_new_tokens: 10}}\n"
        f"suites: [{{path: s.jsonl, answer: {{type: exact}}}}]\nrubric: rubric.yaml\noutput: {{dir: reports}}\n{extra}")
    return tmp / "c.yaml"


def test_counts_from_the_suites_alone(tmp_path, cli):
    config = _project(tmp_path, extra="cost: {mode: api, input_usd_per_1m: 1.0, output_usd_per_1m: 2.0}\n")
    code, out, err = cli("plan", "-c", config, "--json")
    plan = json.loads(out)
    assert code == 0, err
    assert (plan["cases"], plan["draws"], plan["requests"], plan["judge_calls"]) == (12, 12, 12, 0)
    assert plan["output_tokens"] == 12 * 10 and plan["tokens_from"] == "worst case"
    assert plan["input_tokens"] == 12 * 10  # 40 characters a prompt, about 4 a token
    assert plan["spend_usd"]["target"] == pytest.approx((120 * 1.0 + 120 * 2.0) / 1e6)
    assert plan["wall_s"] is None


def test_repeats_multiply_the_draws(tmp_path, cli):
    config = _project(tmp_path)
    config.write_text(config.read_text().replace("max_new_tokens: 10}", "max_new_tokens: 10, repeats: 3}"))
    plan = json.loads(cli("plan", "-c", config, "--json")[1])
    assert plan["draws"] == plan["requests"] == 36 and plan["output_tokens"] == 360


def test_a_run_of_the_same_target_gives_measured_tokens_and_time(tmp_path, cli):
    with StubServer(StubBehaviour(tokens=3)) as stub:
        config = _project(tmp_path, backend=f"backend: openai, base_url: '{stub.base_url}', model: stub")
        code, out, err = cli("check", "-c", config, "--run-id", "before", "--no-progress")
    assert (tmp_path / "reports" / "before" / "report.json").is_file(), out + err
    plan = json.loads(cli("plan", "-c", config, "--json")[1])
    assert plan["tokens_from"] == "history before"
    assert plan["output_tokens"] == 12 * 3  # the stub's 3 tokens an answer, not max_new_tokens
    assert plan["wall_s"] is not None and plan["wall_s"] > 0
    other = _project(tmp_path, backend=f"backend: openai, base_url: '{stub.base_url}', model: another")
    assert json.loads(cli("plan", "-c", other, "--json")[1])["tokens_from"] == "worst case"


def test_the_budget_warning(tmp_path, cli):
    config = _project(tmp_path, extra="cost: {mode: api, input_usd_per_1m: 1000, output_usd_per_1m: 1000}\n")
    code, out, _ = cli("plan", "-c", config, "--budget-usd", "0.01")
    assert code == 0 and "may exceed the budget of $0.01" in out
    code, out, _ = cli("plan", "-c", config, "--budget-usd", "100")
    assert "exceed" not in out


def test_an_endpoint_with_no_price_has_an_unknown_spend(tmp_path, cli):
    config = _project(tmp_path, backend="backend: openai, base_url: 'http://127.0.0.1:9/v1', model: m")
    code, out, err = cli("plan", "-c", config, "--budget-usd", "5")
    assert code == 0, err
    assert "no price (cost:)" in out and "spend (unknown) may exceed" in out


@pytest.mark.parametrize("budget", ["-1", "nan", "inf", "ten"])
def test_a_budget_that_is_no_amount_is_refused(tmp_path, cli, budget):
    code, out, err = cli("plan", "-c", _project(tmp_path), "--budget-usd", budget)
    assert code == 2 and "--budget-usd" in err and "Traceback" not in err


def test_a_missing_config_is_one_line(tmp_path, cli):
    code, _, err = cli("plan", "-c", tmp_path / "nope.yaml")
    assert code == 2 and len(err.strip().splitlines()) <= 2
