"""The judge and guard bill (`pipeline.grader_spend`) attacked through `check` with a real run against hostile
OpenAI-compatible graders: usage with a field left out, non-finite, negative, a string, huge, or past what the
call reserved. Whatever the server says, the spend a run reports is never below what its graders may have
billed: a call whose usage does not count its tokens costs its worst case."""

from __future__ import annotations

import json
import math

import pytest

from conftest import as_killed
from releasegate.inputs.config import load_config
from releasegate.inputs.rubric import load_rubric
from releasegate.record.judge_journal import every_judgment
from releasegate.run.budget import BudgetWatch, case_of
from releasegate.testing import StubBehaviour, StubServer
from releasegate.testing import composition as mx
from test_budget_spend import PRICE, _calls
from test_new_features_meet import PRICES, Stub, check, project

TOKENS = 8
"""What each hostile guard reply is: 8 tokens, sent in one chunk (a server may batch its tokens)."""


@pytest.fixture(scope="module")
def stub():
    s = Stub()
    with s.server:
        yield s


def _guarded(cli, root, stub, usage: dict, **behaviour):
    """A run whose guard answers its verdicts right, in one chunk of TOKENS tokens, with `usage` as its count."""
    guard = StubBehaviour(**{"ttft_ms": 1, "itl_ms": 0, "tokens": TOKENS, "tokens_per_chunk": TOKENS,
                             "reply": mx.GUARD, "usage": usage, **behaviour})
    with StubServer(guard) as server:
        config = project(cli, root, stub, ("guard",), None,
                         {**PRICES, "budget": {"usd": 500}, "guards": {"lg": {"base_url": server.base_url,
                                                                              "price": PRICE}}})
        code, report, run = check(cli, config, "r", "--allow-pending")
    cfg = load_config(config)
    watch = BudgetWatch(cfg, load_rubric(cfg.rubric), None, cfg.budget)
    worst = sum(watch.call_worst(case_of(r), "lg") for r in run.read_records())
    return code, report, run, worst


def test_a_guard_whose_usage_leaves_out_its_completion_tokens_is_charged_its_worst_case(cli, tmp_path, stub):
    """Hunting a spend reported lower than billed: usage with prompt_tokens alone counts no answer; the client
    counts one token a chunk (8 tokens in one chunk: 1), which is no bill."""
    code, report, run, worst = _guarded(cli, tmp_path, stub, {"prompt_tokens": 7})
    assert _calls(run)["guard"] >= 40
    assert report["budget"]["spent_usd"]["guard"] >= worst


@pytest.mark.parametrize("usage", [
    {"prompt_tokens": math.nan, "completion_tokens": TOKENS},
    {"prompt_tokens": 7, "completion_tokens": math.inf},
    {"completion_tokens": TOKENS},
    *(pytest.param(usage, marks=pytest.mark.slow) for usage in (  # more of the same path: a run each
        {"prompt_tokens": 7.5, "completion_tokens": TOKENS},
        {"prompt_tokens": None, "completion_tokens": None},
        {"prompt_tokens": True, "completion_tokens": TOKENS},
        {"prompt_tokens": -7, "completion_tokens": TOKENS},
        {"prompt_tokens": "7", "completion_tokens": TOKENS},
        {"prompt_tokens": [7], "completion_tokens": TOKENS},
    )),
])
def test_a_guard_whose_usage_counts_nothing_usable_is_charged_its_worst_case(cli, tmp_path, stub, usage):
    code, report, run, worst = _guarded(cli, tmp_path, stub, usage)
    assert _calls(run)["guard"] >= 40
    assert report["budget"]["spent_usd"]["guard"] >= worst > 0
    assert report["verdict"] != "PASS" or report["budget"]["spent_usd"]["guard"] >= worst


def _killed_with_judgments(run, edit) -> None:
    """A finished run made to look killed after its graders answered (every case and verdict journaled, no
    report yet), its judgments.jsonl's first line edited by `edit`."""
    lines = (run.path / "judgments.jsonl").read_text().splitlines()
    lines[0] = json.dumps(edit(json.loads(lines[0])))
    (run.path / "judgments.jsonl").write_text("\n".join(lines) + "\n")
    info = run.read_info()
    info.status, info.finished_at, info.sessions[-1]["status"] = "running", None, "running"
    run.write_info(info)
    for name in ("report.json", "report.md", "report.html", "report.junit.xml"):
        (run.path / name).unlink(missing_ok=True)
    as_killed(run.path)


@pytest.mark.parametrize("edit, extra", [
    (lambda j: {**j, "tokens": {"input": 10**400, "output": 4}}, "worst"),
    (lambda j: {**j, "attempts": 10**400}, "retries"),
    (lambda j: {**j, "attempts": -10**6}, "none"),
    (lambda j: {**j, "criterion": "guard:renamed"}, "asked-again"),
], ids=["prompt-tokens-past-any-count", "attempts-past-any-retries",
        "attempts-negative", "a-guard-the-run-lacks"])
def test_a_judge_journal_line_no_client_writes_is_billed_its_most_never_a_crash(cli, tmp_path, stub, edit, extra):
    """judgments.jsonl edited in a killed run, then `check --resume`: a count past any the client takes, or more
    attempts than any retries allow, was exit 70 (an OverflowError); a verdict by a guard the config lacks was
    billed nothing (the resume asks lg again for that case: a call of its own). Each now costs the most it can,
    and the resume ends with the run's verdict."""
    config = project(cli, tmp_path, stub, ("guard",), None,
                     {**PRICES, "budget": {"usd": 5000}, "guards": {"lg": {"price": PRICE}}})
    _, whole, run = check(cli, config, "r", "--allow-pending")
    first = json.loads((run.path / "judgments.jsonl").read_text().splitlines()[0])
    cfg = load_config(config)
    worst = BudgetWatch(cfg, load_rubric(cfg.rubric), None, cfg.budget).call_worst(
        case_of(next(r for r in run.read_records() if r.case_id == first["case_id"])), "lg")
    honest = (first["tokens"]["input"] * PRICE["input_usd_per_1m"] + first["tokens"]["output"]
              * PRICE["output_usd_per_1m"]) / 1e6
    _killed_with_judgments(run, edit)
    code, out, err = cli("check", "--resume", run.path, "--no-progress", "--json", "--allow-pending")
    assert code in (0, 1, 3) and "Traceback" not in err and "internal error" not in err, err
    spent = json.loads(out)["budget"]["spent_usd"]["guard"]
    before = whole["budget"]["spent_usd"]["guard"]
    added = {"worst": worst - honest, "retries": 20 * worst, "none": 0.0, "asked-again": honest}[extra]
    assert spent == pytest.approx(before + added)


def test_a_guard_stream_that_stops_before_its_usage_is_charged_its_worst_case_and_never_passes(cli, tmp_path, stub):
    """The guard's stream is cut after its first token, before its finish and usage: no verdict (the forbidden rate
    is unknown, never PASS) and no count (each call costs its worst case)."""
    code, report, run, worst = _guarded(cli, tmp_path, stub, {"prompt_tokens": 7, "completion_tokens": TOKENS},
                                        drop_after=1, tokens_per_chunk=1)
    assert report["verdict"] != "PASS" and code != 0
    assert _calls(run)["guard"] >= 40
    assert report["budget"]["spent_usd"]["guard"] >= worst > 0


def test_a_verdict_appended_to_the_judge_journal_after_sealing_is_an_edit_the_gate_and_verify_say(cli, tmp_path,
                                                                                                 stub):
    """A guard verdict line appended after the run was sealed (a flagged reply called safe): gate says the run was
    edited (INCONCLUSIVE, never PASS), verify names judgments.jsonl, and run.json's bill is left as billed."""
    config = project(cli, tmp_path, stub, ("guard",), "guard",
                     {**PRICES, "budget": {"usd": 5000}, "guards": {"lg": {"price": PRICE}}})
    code, whole, run = check(cli, config, "r", "--allow-pending")
    assert whole["verdict"] in ("FAIL", "NEEDS_REVIEW"), whole["verdict_reason"]  # flagged by an uncalibrated guard
    lines = (run.path / "judgments.jsonl").read_text().splitlines()
    flagged = [json.loads(line) for line in lines if json.loads(line)["passed"] is False]
    assert flagged
    with (run.path / "judgments.jsonl").open("a") as fh:
        fh.writelines(json.dumps({**j, "passed": True, "raw": "safe"}) + "\n" for j in flagged)
    code, out, err = cli("gate", run.path, "--json", "--allow-pending")
    assert "Traceback" not in err and json.loads(out)["verdict"] not in ("PASS",), err
    code, out, err = cli("verify", run.path)
    assert code != 0 and "judgments.jsonl" in out + err
    assert run.read_info().budget["spent_usd"] == whole["budget"]["spent_usd"]


def test_a_judge_whose_usage_leaves_out_its_completion_tokens_is_charged_its_worst_case(cli, tmp_path, stub):
    judge = StubBehaviour(ttft_ms=1, itl_ms=0, tokens=TOKENS, tokens_per_chunk=TOKENS, reply=mx.reply_for(mx.Mode()),
                          usage={"prompt_tokens": 7})
    with StubServer(judge) as server:
        config = project(cli, tmp_path, stub, ("judge",), None,
                         {**PRICES, "budget": {"usd": 5000}, "judge": {"base_url": server.base_url, "price": PRICE}})
        code, report, run = check(cli, config, "r", "--allow-pending")
    cfg = load_config(config)
    watch = BudgetWatch(cfg, load_rubric(cfg.rubric), None, cfg.budget)
    judged = {j.case_id for j in every_judgment(run) if not j.cached}
    worst = sum(watch.call_worst(case_of(r)) for r in run.read_records() if r.case_id in judged)
    assert len(judged) >= 40
    assert report["budget"]["spent_usd"]["judge"] >= worst


def test_a_guard_billing_past_its_reservation_is_said_over_the_cap_alike_by_gate_and_report(cli, tmp_path, stub):
    """A guard server counting 10^8 prompt tokens a call (a whole number the client takes): the bill crosses the
    caps the reservations kept to; run.json, `gate --json` and `report` all say which, with the same spend."""
    code, report, run, worst = _guarded(cli, tmp_path, stub, {"prompt_tokens": 10**8, "completion_tokens": TOKENS})
    calls = _calls(run)["guard"]
    assert report["budget"]["spent_usd"]["guard"] == pytest.approx(
        calls * (10**8 * PRICE["input_usd_per_1m"] + TOKENS * PRICE["output_usd_per_1m"]) / 1e6)
    assert "usd" in report["budget"]["exceeded"]
    _, out, err = cli("gate", run.path, "--json", "--allow-pending")
    gated = json.loads(out)
    _, out, _ = cli("report", run.path, "--format", "json")
    assert gated["budget"] == json.loads(out)["budget"] == {**report["budget"]}
    _, md, _ = cli("report", run.path, "--format", "md")
    assert "over the cap" in md and "usd" in md


def _capped(cli, root, stub, caps: str):
    config = project(cli, root, stub, ("judge", "guard"), None,
                     {**PRICES, "judge": {"price": PRICE}, "guards": {"lg": {"price": PRICE}}})
    config.write_text(config.read_text() + f"budget: {caps}\n")
    return config


@pytest.mark.parametrize("caps, key", [("{usd: -1}", "budget.usd"), ("{usd: .nan}", "budget.usd"),
                                       ("{usd: .inf}", "budget.usd"), ("{usd: 50, guard_usd: .nan}", "budget.guard_usd"),
                                       ("{usd: 50, tokens: -5}", "budget.tokens"), ("{usd: true}", "budget.usd")])
def test_a_cap_that_is_no_amount_is_refused_in_one_line(cli, tmp_path, stub, caps, key):
    code, _, err = cli("validate", "-c", _capped(cli, tmp_path, stub, caps))
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and key in lines[0] and "Traceback" not in err, err


def test_a_huge_cap_runs_and_bills_what_was_billed(cli, tmp_path, stub):
    config = _capped(cli, tmp_path, stub, "{usd: 1.0e+308, judge_usd: 1.0e+308}")
    code, report, run = check(cli, config, "r", "--allow-pending")
    spent = report["budget"]["spent_usd"]
    assert report["budget"]["exceeded"] is None and not report["budget_exhausted"]
    assert 0 < spent["judge"] and 0 < spent["guard"] and spent["total"] == pytest.approx(
        spent["target"] + spent["judge"] + spent["guard"])


@pytest.mark.parametrize("caps, key", [("{usd: 0}", "budget.usd"), ("{usd: 50, judge_usd: 0}", "budget.judge_usd"),
                                       ("{usd: 50, wall_s: 0}", "budget.wall_s")])
def test_a_cap_that_covers_no_case_is_refused_by_validate_as_by_check(cli, tmp_path, stub, caps, key):
    config = _capped(cli, tmp_path, stub, caps)
    code, _, err = cli("check", "-c", config, "--run-id", "r", "--no-progress", "--json")
    assert code == 2 and key in err, err
    if key == "budget.wall_s":
        assert "$" not in err, err
    code, _, err = cli("validate", "-c", config)
    assert code == 2 and key in err, err
