"""The newer features (leakage probes, tool-call cases, the spend budget) met with the features the composition
matrix does not pair them with: the response cache, a resume after a kill, served variants, a blessed baseline,
double-labelled review with `--allow-pending`, and repeats, a guard and probes under a budget (a leakage probe or a
load phase beside a budget on a metered target is refused: their requests are not billed).

Each project is built from the composition matrix's parts (`releasegate.testing.composition`) with one stub
(target, leakage base, guard, judge) whose answers follow a planted truth: all good the run must PASS, with one
part set to fail it must FAIL (a budget that runs out: INCONCLUSIVE, never PASS nor FAIL for want of cases)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import as_killed
from releasegate.record.records import RunDir
from releasegate.testing import StubBehaviour, StubServer
from releasegate.testing import composition as mx

PRICES = {"cost": {"mode": "api", "input_usd_per_1m": 1000, "output_usd_per_1m": 1000}}
"""$0.001 a token: one main-suite case costs at most about $0.09 (its prompt's bytes, a template, 16 out)."""
AMPLE = {**PRICES, "budget": {"usd": 50}}
SHORT = {**PRICES, "budget": {"usd": 1.0}}
"""A cap that stops dispatch before the 40 main cases are all asked."""
CACHE = {"cache": {"path": "cache.sqlite"}}


class Stub:
    """One stub for every role, answering by `mode`; `bodies`: every request body it got, in order."""

    def __init__(self) -> None:
        self.mode = mx.Mode()
        self.bodies: list[dict] = []
        answer = mx.reply_for(self.mode)

        def reply(body: dict) -> str:
            self.bodies.append(body)
            return answer(body)

        def calls(body: dict) -> list[dict]:
            self.bodies.append(body)
            return mx.tool_calls(body)

        self.server = StubServer(StubBehaviour(ttft_ms=mx.TTFT_MS, itl_ms=0, tokens=4, reply=reply,
                                               tool_reply=calls))

    def asked(self, model: str | None = None, tools: bool | None = None) -> int:
        """Requests the stub answered (one model's; with or without tools)."""
        return sum(1 for b in self.bodies if (model is None or b.get("model") == model)
                   and (tools is None or bool(b.get("tools")) == tools))


@pytest.fixture(scope="module")
def stub():
    s = Stub()
    with s.server:
        yield s


def _edit(path: Path, part: dict[str, Any]) -> None:
    data = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump(mx._merge(data, json.loads(json.dumps(part))), sort_keys=False))


def project(cli, root: Path, stub: Stub, features: tuple[str, ...], bad: str | None, config: dict | None = None,
            rubric: dict | None = None, *, baseline_run: bool = False) -> Path:
    """The composition matrix's project of `features` (one set to fail: `bad`) with `config` and `rubric` merged
    in; the commands its parts need (the leakage suite's build) run; the stub answering by `bad`."""
    stub.mode.bad, stub.mode.baseline_run = bad, baseline_run
    path = mx.build(root, stub.server.base_url, features, bad, baseline_run=baseline_run)
    _edit(path, config or {})
    _edit(root / "rubric.yaml", rubric or {})
    for command in mx.commands(features):
        code, _, err = cli(*[str(root / w) if (root / w).suffix in (".jsonl", ".json") else w for w in command])
        assert code == 0, err
    return path


def check(cli, config: Path, run_id: str, *args: str) -> tuple[int, dict, RunDir]:
    code, out, err = cli("check", "-c", config, "--run-id", run_id, "--no-progress", "--json", *args)
    assert "Traceback" not in err and out.strip(), err
    return code, json.loads(out), RunDir(config.parent / "reports" / run_id)


def verdicts(report: dict) -> dict[str, str]:
    return {c["name"]: c["verdict"] for c in report["criteria"]}


EXIT = {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 3, "NEEDS_REVIEW": 3}


def assert_verdict(code: int, report: dict, truth: str) -> None:
    """The run's verdict is `truth`, or the machine was too busy to measure its latency (`load_bound`)."""
    from test_composition import as_known

    assert as_known(report["verdict"], report, truth) and code == EXIT[report["verdict"]], (
        code, report["verdict"], report["verdict_reason"], verdicts(report))


# --- the response cache ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [None, "leakage", "quality"])
def test_leakage_with_the_response_cache_probes_again_and_caches_no_probe_prompt(cli, tmp_path, stub, bad):
    """The second run is served from the cache, yet its leakage probe asks the candidate and the base again (the
    probe's evidence is never a cached answer) and the cache holds none of the leakage records' prompts."""
    config = project(cli, tmp_path, stub, ("leakage", "quality"), bad, CACHE)
    truth = "FAIL" if bad else "PASS"
    code, first, _ = check(cli, config, "r1")
    assert_verdict(code, first, truth)
    stub.bodies.clear()
    code, second, run = check(cli, config, "r2")
    assert_verdict(code, second, truth)
    assert all(r.cached for r in run.read_records())  # every suite answer from the cache
    assert stub.asked("base") >= 2 * mx.TWINS and stub.asked("stub") >= 2 * mx.TWINS  # the probe, both arms, again
    assert second["leakage"]["shares"] == first["leakage"]["shares"]
    prefixes = [json.loads(line)["messages"][-1]["content"] if "messages" in json.loads(line) else
                json.loads(line)["prompt"] for line in (tmp_path / "train.jsonl").read_text().splitlines()]
    dump = "\n".join(str(row) for row in sqlite3.connect(tmp_path / "cache.sqlite").iterdump())
    assert not [p for p in prefixes if p in dump]


@pytest.mark.parametrize("bad", [None, "tools"])
def test_tool_cases_are_asked_again_on_a_cached_run(cli, tmp_path, stub, bad):
    """A second run serves the plain cases from the cache and asks every tool case of the server again: a tool
    case's evidence is its calls, which the cache never holds."""
    config = project(cli, tmp_path, stub, ("tools", "quality"), bad, CACHE)
    truth = "FAIL" if bad else "PASS"
    assert_verdict(*check(cli, config, "r1")[:2], truth)
    stub.bodies.clear()
    code, report, run = check(cli, config, "r2")
    assert_verdict(code, report, truth)
    records = run.read_records()
    assert {r.case_id for r in records if r.cached} == {f"m{i:02d}" for i in range(mx.CASES)}
    assert stub.asked(tools=True) >= mx.TWINS  # each tool case (plus the served tool path's checks)


@pytest.mark.parametrize("bad", [None, "quality"])
def test_cached_answers_spend_nothing_and_a_cap_then_covers_the_suite(cli, tmp_path, stub, bad):
    """The first run fills the cache under an ample cap; the second, under a cap that cannot pay for the suite
    fresh, asks nothing of the target and is decided on the whole suite: cached answers cost no dollar."""
    config = project(cli, tmp_path, stub, ("quality",), bad, {**CACHE, **AMPLE})
    truth = "FAIL" if bad else "PASS"
    code, first, _ = check(cli, config, "r1")
    assert_verdict(code, first, truth)
    cap = str(SHORT["budget"]["usd"])
    stub.bodies.clear()
    code, second, _ = check(cli, config, "r2", "--budget-usd", cap)
    assert_verdict(code, second, truth)
    assert second["budget_exhausted"] is False and second["budget"]["spent_usd"]["target"] == 0
    assert stub.asked("stub") == 0
    code, fresh, _ = check(cli, config, "r3", "--budget-usd", cap, "--no-cache")  # the same cap, asked fresh
    assert fresh["budget_exhausted"] is True and code == 3  # unknown on a cut prefix: never PASS, never FAIL for it


# --- the spend budget with the other new features ----------------------------------------------------------------


@pytest.mark.parametrize(("features", "bad", "cap", "truth"), [
    (("leakage", "quality"), None, AMPLE, "PASS"),
    (("leakage", "quality"), "leakage", AMPLE, "FAIL"),
    (("leakage", "quality"), "quality", AMPLE, "FAIL"),
    (("leakage", "quality"), None, SHORT, "INCONCLUSIVE"),  # accuracy on a cut prefix: unknown
    (("leakage", "quality"), "leakage", SHORT, "FAIL"),  # the probe ran on its whole suite: its FAIL stands
    (("tools", "quality"), None, AMPLE, "PASS"),
    (("tools", "quality"), "tools", AMPLE, "FAIL"),
    (("tools", "quality"), None, SHORT, "INCONCLUSIVE"),
])
def test_a_budget_with_leakage_and_tools(cli, tmp_path, stub, features, bad, cap, truth):
    config = project(cli, tmp_path, stub, features, bad, cap)
    if "leakage" in features:  # the probe's requests are not billed: refused on a metered target, never unseen
        code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress")
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 2 and len(lines) == 1 and "budget" in lines[0] and "leakage" in lines[0], err
        return
    code, report, _ = check(cli, config, "r")
    assert_verdict(code, report, truth)
    assert report["budget_exhausted"] is (cap is SHORT)
    assert report["budget"]["spent_usd"]["total"] <= cap["budget"]["usd"]


# --- a resume after a kill ---------------------------------------------------------------------------------------


def killed_after(run: RunDir, cases: int, probed: bool) -> None:
    """Make a finished run look killed after its first `cases` records were journaled, before (`probed` False)
    or after its leakage probe was recorded."""
    lines = run.records_path.read_bytes().splitlines(keepends=True)
    run.records_path.write_bytes(b"".join(lines[:cases]))
    info = run.read_info()
    info.status, info.finished_at, info.sessions[-1]["status"] = "running", None, "running"
    if not probed:
        info.leakage = None
    run.write_info(info)
    for name in ("report.json", "report.md", "report.html", "report.junit.xml", "judgments.jsonl"):
        (run.path / name).unlink(missing_ok=True)
    as_killed(run.path)


@pytest.mark.parametrize(("features", "bad", "cap", "probed"), [
    (("leakage", "quality"), None, {}, False),
    (("leakage", "quality"), "leakage", {}, True),
    (("leakage", "quality"), "quality", {}, False),
    (("tools", "quality"), None, {}, False),
    (("tools", "quality"), "tools", {}, False),
    (("tools", "quality"), None, AMPLE, False),
])
def test_a_resume_after_a_kill_loses_nothing_and_counts_nothing_twice(cli, tmp_path, stub, features, bad, cap,
                                                                      probed):
    config = project(cli, tmp_path, stub, features, bad, cap)
    truth = "FAIL" if bad else "PASS"
    code, whole, run = check(cli, config, "r")
    assert_verdict(code, whole, truth)
    killed_after(run, 25, probed)
    stub.bodies.clear()
    code, out, err = cli("check", "--resume", run.path, "--no-progress", "--json")
    assert "Traceback" not in err and out.strip(), err
    report = json.loads(out)
    assert_verdict(code, report, truth)
    ids = [json.loads(line)["case_id"] for line in run.records_path.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == whole["counts"]["cases"]  # each case journaled once, none lost
    quality = ("cases", "requests", "succeeded", "failed")
    assert ({k: report["counts"]["phases"]["quality"][k] for k in quality}
            == {k: whole["counts"]["phases"]["quality"][k] for k in quality})
    if "leakage" in features:  # the probe is asked again whole, or not at all: never half
        assert stub.asked("base") in (0, 2 * mx.TWINS)
        assert report["leakage"]["shares"] == whole["leakage"]["shares"]
    if cap:
        assert report["budget"]["spent_usd"]["total"] == pytest.approx(whole["budget"]["spent_usd"]["total"])


# --- a blessed baseline, and review left pending -----------------------------------------------------------------

BLESSED = {"baseline": {"blessed": "prod", "reports": "reports", "metrics": ["accuracy"], "margins": {"accuracy": 0.1}}}


def replayed(root: Path, config: Path, bad: str | None) -> None:
    """Switch the project's target to the replay of what the stub answers by `bad`: a blessed run must be
    verifiable whole, which no endpoint is (its weights are not visible)."""
    answer = mx.reply_for(mx.Mode(bad))
    rows = []
    for line in (root / "main.jsonl").read_text().splitlines() + (root / "tools.jsonl").read_text().splitlines():
        case = json.loads(line)
        calls = mx.tool_calls(case) if case.get("tools") else None
        rows.append({"id": case["id"], **({"tool_calls": [calls]} if calls else {"output": answer(case)})})
    (root / "responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = yaml.safe_load(config.read_text())
    data["target"] = {"backend": "replay", "responses": "responses.jsonl"}
    config.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.mark.parametrize("bad", [None, "tools", "quality"])
def test_a_blessed_baseline_with_tool_cases(cli, tmp_path, stub, bad):
    """The blessed run is the same project all good; the candidate regresses (quality: half its answers wrong,
    more than the margin) or its tool calls fail."""
    features = ("tools", "quality")
    config = project(cli, tmp_path, stub, features, None, baseline_run=True)
    replayed(tmp_path, config, None)
    code, base, run = check(cli, config, "base")
    assert_verdict(code, base, "PASS")
    code, _, err = cli("bless", run.path, "--as", "prod", "--reason", "shipped", "--by", "ana")
    assert code == 0, err
    config = project(cli, tmp_path, stub, features, bad, rubric=BLESSED)
    replayed(tmp_path, config, bad)
    code, report, _ = check(cli, config, "cand")
    assert_verdict(code, report, "FAIL" if bad else "PASS")
    assert report["comparison"], report["verdict_reason"]


@pytest.mark.parametrize(("feature", "bad"), [("leakage", None), ("leakage", "leakage"), ("tools", None),
                                              ("tools", "tools")])
def test_double_labelled_review_pending_and_allowed(cli, tmp_path, stub, feature, bad):
    """Review of two labels a case left pending: NEEDS_REVIEW all good, FAIL when the other feature fails;
    `--allow-pending` lets the other criteria decide (PASS waived, or FAIL), never an unreviewed PASS unsaid."""
    config = project(cli, tmp_path, stub, (feature, "review"), bad)
    code, held, _ = check(cli, config, "held")
    assert_verdict(code, held, "FAIL" if bad else "NEEDS_REVIEW")
    code, waived, _ = check(cli, config, "waived", "--allow-pending")
    assert_verdict(code, waived, "FAIL" if bad else "PASS")
    assert waived["obligations"]["review_waived"] is True


# --- served variants ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("feature", "bad"), [("leakage", None), ("leakage", "leakage"), ("tools", None),
                                              ("tools", "tools")])
def test_served_variants_with_leakage_and_tool_cases(cli, tmp_path, stub, feature, bad):
    """Two endpoint variants of the same stub: each runs the feature, and the matrix exits with the worst
    variant's verdict; a leaking or miscalling model is FAIL in every row, so none qualifies (exit 3, no choice)."""
    url = stub.server.base_url
    variants = {"variants": [{"name": "a", "server": "endpoint", "base_url": url, "model": "stub"},
                             {"name": "b", "server": "endpoint", "base_url": url, "model": "stub"}]}
    config = project(cli, tmp_path, stub, (feature, "quality"), bad, variants)
    code, _, err = cli("validate", "-c", config)
    if code == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and "variants" in lines[0] and feature in lines[0], err
        return
    code, out, err = cli("matrix", "-c", config, "--json")
    assert "Traceback" not in err and out.strip(), err
    result = json.loads(out)
    rows = {v.get("variant") or v.get("name"): v.get("verdict") for v in result["variants"]}
    assert set(rows.values()) == {"FAIL" if bad else "PASS"}, (rows, result.get("reason"))
    assert code == (3 if bad else 0), (code, rows, result.get("reason"))  # no variant qualifies: no choice, exit 3
