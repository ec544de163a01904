"""`check --stop-when-decided` against a real llama.cpp server (the demo exported to GGUF): requests in flight
finish, nothing more is sent once every criterion is decided, and the gate agrees."""

from __future__ import annotations

import json

import pytest

from test_llamacpp_check import config

pytestmark = pytest.mark.slow

STOP_RUBRIC = """\
confidence: 0.95
stop_when_decided: true
criteria:
  - {metric: accuracy, op: ">=", threshold: 0.6}
  - {metric: format_compliance, op: ">=", threshold: 0.6}
  - {metric: error_rate, op: "<=", threshold: 0.3}
"""


def test_a_served_model_stops_when_decided(llamacpp_server, cli, tmp_path):
    cfg = config(tmp_path, llamacpp_server)
    (tmp_path / "rubric.yaml").write_text(STOP_RUBRIC)
    code, out, err = cli("check", "-c", cfg, "--run-id", "stop", "--no-progress", "--json", "--allow-pending")
    report = json.loads(out)
    assert code == 0, (report["verdict_reason"], err)
    run = tmp_path / "reports" / "stop"
    info = json.loads((run / "run.json").read_text())
    records = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines() if line.strip()]
    assert info["stopping"]["stopped_at"] == len(records) <= 50  # of the demo's 100 tickets
    assert report["counts"]["phases"]["quality"]["requests"] == len(records)
    assert all("e-process" in c["reason"] for c in report["criteria"])
