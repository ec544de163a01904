"""A budget's spend on the judge and the guards reconciled with what their replies billed (the server's usage),
hostile usage never billed below its worst case, a bill past a cap said in the report, and a load phase or a
leakage probe beside a budget on a metered model refused in one line naming both keys (their requests are not
billed). Run together with the response cache, a resume, repeats and tool cases (the composition matrix's
stub, as in test_new_features_meet)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from releasegate.inputs.config import load_config
from releasegate.inputs.rubric import load_rubric
from releasegate.pipeline.grader_spend import crossed, reconcile_graders
from releasegate.record.judge_journal import every_judgment
from releasegate.record.records import RunDir
from releasegate.run.budget import BudgetWatch, case_of
from releasegate.testing import StubBehaviour, StubServer
from test_new_features_meet import CACHE, PRICES, Stub, check, killed_after, project

PRICE = {"input_usd_per_1m": 1000, "output_usd_per_1m": 2000}
GRADED = {**PRICES, "budget": {"usd": 500}, "judge": {"price": PRICE}, "guards": {"lg": {"price": PRICE}}}
STUB_USAGE = (7, 4)
"""What the stub's usage says of every reply: 7 prompt tokens, `tokens` (4) completion tokens."""


@pytest.fixture(scope="module")
def stub():
    s = Stub()
    with s.server:
        yield s


def _calls(run: RunDir) -> dict[str, int]:
    """Judge and guard calls this run made (a cached verdict is none)."""
    out = {"judge": 0, "guard": 0}
    for j in every_judgment(run):
        if not j.cached:
            out["guard" if j.criterion.startswith("guard:") else "judge"] += j.attempts
    return out


def _billed(calls: int) -> float:
    prompt, completion = STUB_USAGE
    return calls * (prompt * PRICE["input_usd_per_1m"] + completion * PRICE["output_usd_per_1m"]) / 1e6


def test_judge_and_guard_are_charged_what_their_replies_billed(cli, tmp_path, stub):
    config = project(cli, tmp_path, stub, ("judge", "guard"), None, GRADED)
    code, report, run = check(cli, config, "r", "--allow-pending")
    calls = _calls(run)
    assert calls["judge"] >= 40 and calls["guard"] >= 40, calls
    spent = report["budget"]["spent_usd"]
    assert spent["judge"] == pytest.approx(_billed(calls["judge"]))
    assert spent["guard"] == pytest.approx(_billed(calls["guard"]))
    assert spent["total"] == pytest.approx(spent["target"] + spent["judge"] + spent["guard"])
    assert report["budget"].get("exceeded") is None
    info = json.loads((run.path / "run.json").read_text())
    assert info["budget"]["spent_usd"] == spent  # run.json says what the report says


def test_a_cached_verdict_costs_nothing_and_a_resume_counts_nothing_twice(cli, tmp_path, stub):
    config = project(cli, tmp_path, stub, ("judge", "guard"), None, {**GRADED, **CACHE})
    _, first, run = check(cli, config, "r1", "--allow-pending")
    _, again, _ = check(cli, config, "r2", "--allow-pending")
    assert again["budget"]["spent_usd"]["judge"] == 0 and again["budget"]["spent_usd"]["guard"] == 0
    killed_after(run, 25, False)
    code, out, err = cli("check", "--resume", run.path, "--no-progress", "--json", "--allow-pending")
    assert "Traceback" not in err, err
    resumed = json.loads(out)["budget"]["spent_usd"]
    # killed before judging: the verdicts are asked again, from the cache the first runs filled: no bill
    assert resumed["judge"] == pytest.approx(_billed(_calls(run)["judge"])) == 0
    assert 0 < resumed["target"] <= first["budget"]["spent_usd"]["target"]  # the rest from the cache: no bill


@pytest.mark.parametrize("hostile", ["usage-negative", "usage-string", "usage-huge", "usage-above-cap"])
def test_a_guard_whose_usage_is_hostile_is_charged_its_worst_case_never_less(cli, tmp_path, stub, hostile):
    """Hunting a silent overrun: usage that is negative, no number, past any count or past max_tokens is no bill
    the client believes (a bad response): each such call costs its worst case, and what the run spent never
    reads less than that."""
    with StubServer(StubBehaviour(hostile=hostile)) as bad:
        config = project(cli, tmp_path, stub, ("guard",), None,
                         {**PRICES, "budget": {"usd": 500},
                          "guards": {"lg": {"base_url": bad.base_url, "price": PRICE}}})
        code, report, run = check(cli, config, "r", "--allow-pending")
    assert report["verdict"] != "PASS"  # no guard verdict: the forbidden rate is unknown
    calls = _calls(run)["guard"]
    assert calls >= 40
    cfg = load_config(config)
    watch = BudgetWatch(cfg, load_rubric(cfg.rubric), None, cfg.budget)
    worst = sum(watch.call_worst(case_of(r), "lg") for r in run.read_records())
    assert report["budget"]["spent_usd"]["guard"] >= worst > _billed(calls)


def test_a_bill_past_the_cap_is_said_never_silent(cli, tmp_path, stub):
    """A judge that billed more than its reservation (a server counting a prompt of 10^9 tokens: whole numbers
    the client takes) carries the spend past the cap: run.json and the report name the cap it crossed."""
    config = project(cli, tmp_path, stub, ("judge",), None,
                     {**PRICES, "budget": {"usd": 50, "judge_usd": 5}, "judge": {"price": PRICE}})
    _, report, run = check(cli, config, "r", "--allow-pending")
    assert report["budget"].get("exceeded") is None
    lines = (run.path / "judgments.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    lines[0] = json.dumps({**first, "tokens": {"input": 10**9, "output": 4}})
    (run.path / "judgments.jsonl").write_text("\n".join(lines) + "\n")
    cfg = load_config(config)
    info = run.read_info()
    reconcile_graders(run, info, cfg, load_rubric(cfg.rubric))
    budget = run.read_info().budget
    assert budget["exceeded"] == ["judge_usd", "usd"] and budget["spent_usd"]["judge"] > 1000
    code, out, _ = cli("gate", run.path, "--json")
    gated = json.loads(out)
    assert gated["budget"]["exceeded"] == ["judge_usd", "usd"]
    rows = {r["label"]: r["value"] for s in gated["sections"] for r in s["rows"]}
    assert "judge_usd" in rows["over the cap"]


@pytest.mark.parametrize("spent, caps, over", [
    ({"target": 1, "judge": 2, "guard": 0, "total": 3}, {"usd": 3}, None),
    ({"target": 1, "judge": 2.5, "guard": 0, "total": 3.5}, {"usd": 3, "judge_usd": 2}, ["judge_usd", "usd"]),
    ({"target": None, "judge": 0, "guard": 0, "total": 0}, {"target_usd": 0}, None),
])
def test_crossed_names_each_cap_past(spent, caps, over):
    assert crossed(spent, caps) == over


def _budgeted(root: Path, extra: str) -> Path:
    (root / "s.jsonl").write_text('{"id": "a", "prompt": "p", "expected": "e"}\n')
    (root / "rubric.yaml").write_text("name: r\ncriteria:\n  - {metric: accuracy, op: '>=', threshold: 0.5}\n")
    (root / "c.yaml").write_text(
        "target: {backend: openai, base_url: 'http://127.0.0.1:9/v1', model: m}\n"
        "cost: {mode: api, input_usd_per_1m: 1, output_usd_per_1m: 1}\nbudget: {usd: 1}\n"
        "suites: [{path: s.jsonl, answer: {type: exact}}]\nrubric: rubric.yaml\n" + extra)
    return root / "c.yaml"


@pytest.mark.parametrize("command", ["validate", "check"])
@pytest.mark.parametrize("extra, key", [
    ("load: {requests: 10, concurrency: 2}\n", "load"),
    ("load: {duration_s: 5, concurrency: 2}\n", "load"),
])
def test_a_load_phase_beside_a_budget_on_a_metered_target_is_refused(tmp_path, cli, command, extra, key):
    code, out, err = cli(command, "-c", _budgeted(tmp_path, extra))
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert "budget" in lines[0] and key in lines[0] and "c.yaml" in lines[0]


def test_a_leakage_probe_beside_a_budget_is_refused_by_validate(cli, tmp_path, stub):
    config = project(cli, tmp_path, stub, ("leakage", "quality"), None, {**PRICES, "budget": {"usd": 50}})
    code, out, err = cli("validate", "-c", config)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "budget" in lines[0] and "leakage" in lines[0], err


def test_a_budget_with_repeats_and_tools_on_the_judge_stays_within_its_cap(cli, tmp_path, stub):
    """The new features together: repeated draws and tool cases beside a priced judge under a cap that cuts the
    run: INCONCLUSIVE, never PASS, and the reconciled spend stays within every cap."""
    config = project(cli, tmp_path, stub, ("judge", "tools"), None,
                     {**PRICES, "judge": {"price": PRICE}, "generation": {"repeats": 2}, "budget": {"usd": 2.0}})
    code, report, run = check(cli, config, "r", "--allow-pending")
    assert report["verdict"] != "PASS" or not report["budget_exhausted"]
    spent = report["budget"]["spent_usd"]
    assert spent["total"] <= 2.0 and report["budget"].get("exceeded") is None
