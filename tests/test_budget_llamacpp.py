"""A spend budget against a real llama.cpp server (the demo exported to GGUF): four requests in flight, the
server's own usage billed, dispatch stopped before the cap, the spend under it, and the run judged on the
prefix asked."""

from __future__ import annotations

import json

import pytest

from test_llamacpp_check import config

pytestmark = pytest.mark.slow

PRICED = "cost: {mode: api, input_usd_per_1m: 100, output_usd_per_1m: 300}\n"


def test_a_served_model_stops_at_its_budget(llamacpp_server, cli, tmp_path):
    cfg = config(tmp_path, llamacpp_server)
    cfg.write_text(cfg.read_text().replace("cost: {mode: self_hosted, hourly_usd: 0.1}\n", PRICED))
    code, out, err = cli("check", "-c", cfg, "--run-id", "b", "--no-progress", "--json", "--allow-pending",
                         "--budget-usd", "0.5")
    report = json.loads(out)
    run = tmp_path / "reports" / "b"
    records = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines() if line.strip()]
    budget = report["budget"]
    assert report["budget_exhausted"] is True and 0 < len(records) < 100, err  # of the demo's 100 tickets
    assert {r["tokens"]["source"] for r in records} == {"usage"}  # the server's own counts are what is billed
    billed = sum(r["tokens"]["input"] * 100 + r["tokens"]["output"] * 300 for r in records) / 1e6
    retried = sum((r["timing"].get("attempts") or 1) - 1 for r in records)
    assert retried or budget["spent_usd"]["target"] == pytest.approx(billed)
    assert budget["spent_usd"]["total"] <= 0.5
    # the rubric's latency criterion has no anytime method: a run cut by its budget leaves it undecided
    latency = next(c for c in report["criteria"] if c["metric"].startswith("ttft"))
    assert latency["verdict"] == "insufficient" and "ttft_ms_p95" in budget["still_needs"]
    assert code == 3 and report["verdict"] == "INCONCLUSIVE"
