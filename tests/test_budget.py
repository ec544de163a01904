"""A spend budget (`budget:`, `check --budget-usd`): each case's worst case reserved before it is sent, dispatch
stopped before a cap would be crossed, the run judged on the completed prefix of its seeded order (decided
criteria keep their verdict, the rest INCONCLUSIVE with `budget_exhausted`, never FAIL), the spend by part,
prices required of every metered model, retries counted, a resume counting what was spent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import write_jsonl
from releasegate.testing import StubBehaviour, StubServer

PRICES = "cost: {mode: api, price_table: prices.yaml, price_model: stub}\n"


def _project(tmp: Path, url: str, cases: int = 40, extra: str = PRICES, answer: str = "yes",
             criteria: str = "  - {metric: accuracy, op: '>=', threshold: 0.5}\n", concurrency: int = 1) -> Path:
    rows = [{"id": f"c{i:03d}", "prompt": f"{i:03d}".ljust(40, "q"), "expected": answer} for i in range(cases)]
    write_jsonl(tmp / "s.jsonl", rows)
    (tmp / "prices.yaml").write_text("stub: {input_usd_per_1m: 1000, output_usd_per_1m: 1000}\n")
    (tmp / "rubric.yaml").write_text(f"name: b\ncriteria:\n{criteria}")
    (tmp / "c.yaml").write_text(
        f"target: {{backend: openai, base_url: '{url}', model: stub, concurrency: {concurrency}}}\n"
        "generation: {max_new_tokens: 10}\n"
        "suites: [{path: s.jsonl, answer: {type: normalized}}]\nrubric: rubric.yaml\noutput: {dir: reports}\n"
        f"{extra}")
    return tmp / "c.yaml"


def _half(body: dict) -> str:
    """'yes' to the even cases, 'no' to the odd: an accuracy of one half, which no prefix decides at 0.5."""
    prompt = body["messages"][-1]["content"] if "messages" in body else body.get("prompt", "")
    return "yes" if int(str(prompt)[:3]) % 2 == 0 else "no"


# one case's worst case: (40 prompt bytes + 64 template tokens) x $0.001 + 10 x $0.001 = $0.114
WORST = (40 + 64 + 10) * 1000 / 1e6


def _run(cli, config: Path, *args: str):
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress", "--json", *args)
    run = config.parent / "reports" / "r"
    report = json.loads((run / "report.json").read_text()) if (run / "report.json").is_file() else {}
    return code, report, out + err


def test_a_budget_that_runs_out_is_inconclusive_with_the_spend_split(tmp_path, cli):
    with StubServer(StubBehaviour(tokens=3, reply=_half)) as stub:
        config = _project(tmp_path, stub.base_url, criteria="  - {metric: accuracy, op: '>=', threshold: 0.5}\n")
        code, report, said = _run(cli, config, "--budget-usd", "0.2")
    assert code == 3, said
    assert report["verdict"] == "INCONCLUSIVE" and report["budget_exhausted"] is True
    budget = report["budget"]
    assert budget["exhausted"] == "usd"
    spent = budget["spent_usd"]
    assert set(spent) == {"target", "judge", "guard", "total"} and spent["judge"] == spent["guard"] == 0
    assert 0 < spent["total"] <= 0.2
    info = json.loads((tmp_path / "reports" / "r" / "run.json").read_text())
    asked = info["budget"]["asked"]
    assert 0 < asked < 40
    # the default error guard (<= 0.01) is no more decided on so few cases than accuracy at its threshold
    needs = budget["still_needs"]
    assert set(needs) == {"accuracy", "error_rate (default guard)"}
    assert all(n["at_most"] == 40 - asked for n in needs.values())
    assert needs["accuracy"]["projected"] is None  # at a rate of one half against 0.5, no e-process ever decides
    code, out, _ = cli("verify", tmp_path / "reports" / "r", "--json")
    assert json.loads(out)["unchanged"], out  # the stored run's order and stop stand
    code, out, _ = cli("gate", tmp_path / "reports" / "r", "--json")
    again = json.loads(out)
    assert code == 3 and again["budget_exhausted"] is True and again["budget"]["still_needs"] == needs
    verdicts = {row["name"]: row["verdict"] for row in report["criteria"]}
    assert "fail" not in verdicts.values()  # never FAIL for want of cases


def _yes(body: dict) -> str:
    return "yes"


DECIDABLE = ("  - {metric: accuracy, op: '>=', threshold: 0.5}\n"
             "  - {metric: error_rate, op: '<=', threshold: 0.5}\n")


def test_criteria_decided_before_the_cap_keep_their_verdict(tmp_path, cli):
    with StubServer(StubBehaviour(tokens=3, reply=_yes)) as stub:
        config = _project(tmp_path, stub.base_url, criteria=DECIDABLE)
        code, report, said = _run(cli, config, "--budget-usd", "0.5")
    assert report["budget_exhausted"] is True and report["budget"]["still_needs"] == {}, said
    assert code == 0 and report["verdict"] == "PASS", said
    assert {row["verdict"] for row in report["criteria"]} == {"pass"}


def test_a_good_looking_prefix_is_no_pass(tmp_path, cli):
    """Two answers in three right (0.67) over the cases the budget allowed: a point value over 0.6, which a
    fixed-size gate with no confidence would pass; on a prefix the data's cost chose, it stays undecided."""
    with StubServer(StubBehaviour(tokens=3, reply=lambda b: "no" if int(_half_key(b)) % 3 == 0 else "yes")) as stub:
        config = _project(tmp_path, stub.base_url, criteria="  - {metric: accuracy, op: '>=', threshold: 0.6}\n"
                                                             "  - {metric: error_rate, op: '<=', threshold: 0.5}\n")
        code, report, said = _run(cli, config, "--budget-usd", "0.2")
    accuracy = next(row for row in report["criteria"] if row["name"] == "accuracy")
    assert report["budget_exhausted"] is True and accuracy["verdict"] != "pass", said
    assert code == 3 and report["verdict"] == "INCONCLUSIVE"


def _half_key(body: dict) -> str:
    prompt = body["messages"][-1]["content"] if "messages" in body else body.get("prompt", "")
    return str(prompt)[:3]


def test_a_budget_never_crossed_with_requests_in_flight_and_retries(tmp_path, cli):
    """Four in flight, and the first requests fail and are retried: every attempt is billed, and the spend stays
    under the cap (each batch is reserved at its worst before it is sent)."""
    with StubServer(StubBehaviour(tokens=3, reply=_yes, fail_status=503, fail_count=3, retry_after=0.01)) as stub:
        config = _project(tmp_path, stub.base_url, criteria=DECIDABLE, concurrency=4)
        code, report, said = _run(cli, config, "--budget-usd", "0.6")
    spent = report["budget"]["spent_usd"]
    assert report["budget_exhausted"] is True and spent["total"] <= 0.6, said
    records = [json.loads(line) for line in (tmp_path / "reports" / "r" / "records.jsonl").read_text().splitlines()]
    retried = sum((r["timing"].get("attempts") or 1) - 1 for r in records)
    assert retried == 3, said
    billed = sum(r["tokens"]["input"] + r["tokens"]["output"] for r in records) * 1000 / 1e6
    assert spent["target"] == pytest.approx(billed + retried * WORST)  # a failed attempt at its worst case


def test_a_resumed_run_counts_what_was_spent(tmp_path, cli):
    from conftest import as_killed
    from releasegate.record.records import RunDir

    with StubServer(StubBehaviour(tokens=3, reply=_half)) as stub:
        config = _project(tmp_path, stub.base_url)
        _run(cli, config, "--budget-usd", "0.2")
        run = RunDir(tmp_path / "reports" / "r")
        first = run.read_info().budget
        order = run.read_info().stopping["order"]
        lines = run.records_path.read_bytes().splitlines(keepends=True)
        run.records_path.write_bytes(b"".join(lines[:4]))  # as if killed after four cases
        info = run.read_info()
        info.status, info.finished_at, info.sessions[-1]["status"] = "running", None, "running"
        run.write_info(info)
        for name in ("report.json", "report.md"):
            (run.path / name).unlink(missing_ok=True)
        as_killed(run.path)
        code, out, err = cli("check", "--resume", run.path, "--no-progress")
    again = run.read_info().budget
    assert code == 3, out + err
    # the resume stopped where the first session did: it counted the four cases' spend, never started at 0
    assert again["asked"] == first["asked"] and again["spent_usd"]["total"] == pytest.approx(first["spent_usd"]["total"])
    assert [r.case_id for r in run.read_records()] == order[:first["asked"]]


def test_a_metered_target_with_no_price_refuses_to_start(tmp_path, cli):
    with StubServer(StubBehaviour(tokens=3)) as stub:
        config = _project(tmp_path, stub.base_url, extra="")
        code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress", "--budget-usd", "1")
    assert code == 2 and "has no price" in err and "cost" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) <= 2
    assert not (tmp_path / "reports" / "r").exists()  # nothing sent, no run left


@pytest.mark.parametrize("flag", ["-1", "nan", "inf", "ten"])
def test_a_budget_flag_that_is_no_amount_is_refused(tmp_path, cli, flag):
    config = _project(tmp_path, "http://127.0.0.1:9/v1")
    code, _, err = cli("check", "-c", config, "--no-progress", "--budget-usd", flag)
    assert code == 2 and "--budget-usd" in err and "Traceback" not in err


@pytest.mark.parametrize("section", ["{usd: -1}", "{usd: .nan}", "{usd: '5'}", "{tokens: true}", "{usd: .inf}",
                                     "{dollars: 5}", "{}", "5"])
def test_a_budget_section_that_is_no_amount_is_refused(tmp_path, cli, section):
    config = _project(tmp_path, "http://127.0.0.1:9/v1", extra=PRICES + f"budget: {section}\n")
    code, _, err = cli("check", "-c", config, "--no-progress")
    assert code == 2 and "budget" in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) <= 3, err


def _graded(tmp: Path, judge: str = "", guard: str = "") -> Path:
    """A replayed target (not metered) with a judge and a guard behind endpoints."""
    write_jsonl(tmp / "s.jsonl", [{"id": f"c{i}", "prompt": "p", "expected": "e"} for i in range(4)])
    write_jsonl(tmp / "r.jsonl", [{"id": f"c{i}", "output": "fine"} for i in range(4)])
    (tmp / "rubric.yaml").write_text(
        "name: g\nreview: {required_domains: []}\ncriteria:\n  - {name: helpful, metric: accuracy, op: '>=', threshold: 0.5}\n"
        "forbidden:\n  - {category: violence, kind: guard, guard: lg, codes: [S1]}\n")
    (tmp / "c.yaml").write_text(
        "target: {backend: replay, responses: r.jsonl}\n"
        f"judge: {{base_url: 'http://127.0.0.1:9/v1', model: j, criteria: {{helpful: {{instructions: Helps.}}}}{judge}}}\n"
        f"guards:\n  lg: {{base_url: 'http://127.0.0.1:9/v1', model: lg, categories: {{S1: Violence}}{guard}}}\n"
        "suites: [{path: s.jsonl, answer: {type: judge, criterion: helpful}}]\nrubric: rubric.yaml\n")
    return tmp / "c.yaml"


PRICE = ", price: {input_usd_per_1m: 1, output_usd_per_1m: 2}"


@pytest.mark.parametrize("judge, guard, named", [("", PRICE, "judge.price"), (PRICE, "", "guards.lg.price")])
def test_a_metered_judge_or_guard_with_no_price_refuses_to_start(tmp_path, cli, judge, guard, named):
    code, _, err = cli("check", "-c", _graded(tmp_path, judge, guard), "--no-progress", "--budget-usd", "1")
    assert code == 2 and "has no price" in err and named in err.replace("'", "").replace("field ", ""), err


def test_priced_judge_and_guard_start(tmp_path, cli):
    """Priced, they start; they are asked after generation, and their reservations then give way to what they
    billed (`pipeline.grader_spend`; tests/test_budget_spend.py): a judge and a guard no request reached (nothing
    listens on port 9) billed nothing, and a call that failed is charged its worst case."""
    config = _graded(tmp_path, PRICE, PRICE)
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress", "--budget-usd", "1", "--json")
    assert "has no price" not in err and "Traceback" not in err, err
    spent = json.loads((tmp_path / "reports" / "r" / "report.json").read_text())["budget"]["spent_usd"]
    journal = tmp_path / "reports" / "r" / "judgments.jsonl"
    calls = len(journal.read_text().splitlines()) if journal.exists() else 0
    assert spent["target"] == 0 and (spent["judge"] + spent["guard"] > 0) == (calls > 0)
    assert spent["total"] == pytest.approx(spent["judge"] + spent["guard"])


def test_a_resume_with_a_higher_cap_goes_on_in_the_same_order(tmp_path, cli):
    with StubServer(StubBehaviour(tokens=3, reply=_half)) as stub:
        config = _project(tmp_path, stub.base_url)
        _run(cli, config, "--budget-usd", "0.2")
        run = tmp_path / "reports" / "r"
        first = json.loads((run / "run.json").read_text())
        code, out, err = cli("check", "--resume", run, "--no-progress", "--budget-usd", "0.4")
    again = json.loads((run / "run.json").read_text())
    assert "Traceback" not in err and again["budget"]["caps"] == {"usd": 0.4}, out + err
    assert first["budget"]["asked"] < again["budget"]["asked"] < 40
    assert first["budget"]["spent_usd"]["total"] < again["budget"]["spent_usd"]["total"] <= 0.4
    ids = [json.loads(line)["case_id"] for line in (run / "records.jsonl").read_text().splitlines()]
    assert ids == first["stopping"]["order"][:again["budget"]["asked"]]


def test_a_resume_cannot_add_a_budget_to_a_run_that_had_none(tmp_path, cli):
    with StubServer(StubBehaviour(tokens=3, reply=_yes)) as stub:
        config = _project(tmp_path, stub.base_url, cases=4)
        cli("check", "-c", config, "--run-id", "r", "--no-progress")
    code, _, err = cli("check", "--resume", tmp_path / "reports" / "r", "--no-progress", "--budget-usd", "1")
    assert code == 2 and "started with a budget" in err and "Traceback" not in err


def test_a_token_cap_needs_no_price(tmp_path, cli):
    """`tokens` caps the target's tokens: no dollars, so no price is asked; each case reserves its prompt's bytes
    and max_new_tokens, and its counted tokens replace them."""
    with StubServer(StubBehaviour(tokens=3, reply=_half)) as stub:
        config = _project(tmp_path, stub.base_url, extra="budget: {tokens: 300}\n")
        code, report, said = _run(cli, config)
    assert code == 3 and report["budget"]["exhausted"] == "tokens", said
    assert 0 < report["budget"]["tokens"] <= 300


def test_still_needs_projects_the_cases_at_the_rate_so_far(tmp_path, cli):
    """Every answer right but too few asked to decide: the report says how many more cases the e-process would
    need at that rate, a figure within the cases left."""
    with StubServer(StubBehaviour(tokens=3, reply=_yes)) as stub:
        config = _project(tmp_path, stub.base_url, criteria=DECIDABLE)
        code, report, said = _run(cli, config, "--budget-usd", "0.15")
    needs = report["budget"]["still_needs"]["accuracy"]
    assert code == 3 and isinstance(needs["projected"], int), said
    assert 0 < needs["projected"] <= needs["at_most"] < 40
    assert next(r for r in report["criteria"] if r["name"] == "accuracy")["verdict"] != "pass"


def test_plan_reads_the_config_budget_and_prices_the_guards(tmp_path, cli):
    config = _graded(tmp_path, PRICE, PRICE)
    config.write_text(config.read_text() + "budget: {usd: 0.000001}\n")
    code, out, err = cli("plan", "-c", config, "--json")
    plan = json.loads(out)
    assert code == 0 and plan["spend_usd"]["guard"] > 0 and plan["spend_usd"]["judge"] > 0, err
    assert any("may exceed the budget of $1e-06" in w for w in plan["warnings"])
    unpriced = _graded(tmp_path, PRICE, "")
    plan = json.loads(cli("plan", "-c", unpriced, "--json")[1])
    assert plan["spend_usd"]["guard"] is None and plan["spend_usd"]["total"] is None
    assert any("guards.NAME.price" in w for w in plan["warnings"])


@pytest.mark.parametrize("section, cap", [("{usd: 0.000000001}", "usd"), ("{tokens: 5}", "tokens")])
def test_a_cap_that_pays_for_no_case_refuses_to_start(tmp_path, cli, section, cap):
    config = _project(tmp_path, "http://127.0.0.1:9/v1", extra=PRICES + f"budget: {section}\n")
    code, _, err = cli("check", "-c", config, "--run-id", "r", "--no-progress")
    assert code == 2 and f"budget.{cap}" in err and "does not cover one case" in err and "Traceback" not in err, err
    assert not (tmp_path / "reports" / "r").exists()


def test_a_cap_on_the_target_alone_stops_dispatch(tmp_path, cli):
    with StubServer(StubBehaviour(tokens=3, reply=_half)) as stub:
        config = _project(tmp_path, stub.base_url, extra=PRICES + "budget: {target_usd: 0.2, judge_usd: 1}\n")
        code, report, said = _run(cli, config)
    assert code == 3 and report["budget"]["exhausted"] == "target_usd", said
    assert 0 < report["budget"]["spent_usd"]["target"] <= 0.2
