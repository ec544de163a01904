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


# one case's worst case: (40 prompt characters + 64 template tokens) x $0.001 + 10 x $0.001 = $0.114
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
    assert budget["still_needs"] == {"accuracy": 40 - asked, "error_rate (default guard)": 40 - asked}
    verdicts = {row["name"]: row["verdict"] for row in report["criteria"]}
    assert "FAIL" not in verdicts.values()  # never FAIL for want of cases
