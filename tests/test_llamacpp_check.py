"""`releasegate check` against a real llama.cpp server (xllamacpp, the demo exported to GGUF)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ROOT
from releasegate.record import RunDir

pytestmark = pytest.mark.slow

SUITES = ROOT / "suites" / "demo"
RUBRIC = """\
criteria:
  - {metric: error_rate, op: "<=", threshold: 0.0}
  - {metric: ttft_ms_p95, op: "<=", threshold: 10000}
  - {name: shifted accuracy, metric: accuracy, op: ">=", threshold: 0.85, slice: {task: shifted}}
"""


def config(tmp: Path, server, *, scale=1.0, load="", suites=("tickets", "tickets_shifted"), backend_lines=None) -> Path:
    (tmp / "rubric.yaml").write_text(RUBRIC)
    suite_lines = "".join(
        f"  - {{path: {SUITES / (s + '.jsonl')}, answer: {{type: json_fields, fields: [intent, priority]}}, "
        f"format: [{{type: json_schema, schema: {SUITES / 'ticket.schema.json'}}}]}}\n" for s in suites
    )
    target = backend_lines or (
        f"  backend: openai\n  base_url: {server.base_url}\n  model: {server.model}\n  concurrency: 4\n"
        f"  tokenizer: {ROOT / 'models/demo/base'}\n  extra_body: {{lora: [{{id: 0, scale: {scale}}}]}}\n"
    )
    path = tmp / f"c-{scale}.yaml"
    path.write_text(f"target:\n{target}generation: {{max_new_tokens: 32}}\nsuites:\n{suite_lines}rubric: rubric.yaml\n{load}"
                    "cost: {mode: self_hosted, hourly_usd: 0.1}\n")
    return path


def run(cli, cfg: Path, run_id: str):
    code, out, err = cli("check", "-c", cfg, "--run-id", run_id, "--no-progress", "--json", "--allow-pending")
    return code, json.loads(out), RunDir(cfg.parent / "reports" / run_id)


def test_check_reports_latency_tokens_and_server_metrics(llamacpp_server, cli, tmp_path):
    cfg = config(tmp_path, llamacpp_server, load="load: {concurrency: 4, requests: 24, warmup: 2}\n")
    code, report, rundir = run(cli, cfg, "lcpp")
    assert code == 0, [c for c in report["criteria"] if c["verdict"] != "pass"]
    for base in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"):
        for q in ("p50", "p95", "p99"):
            metric = report["metrics"][f"{base}_{q}"]
            assert metric["value"] > 0 and metric["n"] > 0, (base, q)
    assert report["latency_from"] == "load" and report["metrics"]["ttft_ms_p50"]["n"] == 24
    assert {r.tokens.source for r in rundir.read_records()} == {"usage"}
    # a healthy server needs no retries: a reused keep-alive connection the server closed is not a failure
    every = rundir.read_records() + rundir.read_records("load.jsonl")
    assert all(r.timing.attempts == 1 for r in every), sorted({r.timing.attempts for r in every})
    server = report["load_phase"]["server_metrics"]
    assert server["server"] == "llama.cpp" and server["samples"] >= 2
    assert "queue" in server and "running" in server and server["reading"]
    assert (rundir.path / "server_metrics.jsonl").read_text().count("llamacpp") == 0  # normalised samples
    assert report["metrics"]["cost_per_1m_output_tokens"]["value"] > 0


def test_lora_scale_zero_is_the_base_model(llamacpp_server, cli, tmp_path):
    _, adapted, _ = run(cli, config(tmp_path, llamacpp_server, scale=1.0, suites=("tickets_shifted",)), "s1")
    _, base, _ = run(cli, config(tmp_path, llamacpp_server, scale=0.0, suites=("tickets_shifted",)), "s0")
    acc = {name: next(c for c in r["criteria"] if c["name"] == "shifted accuracy")["value"] for name, r in (("1", adapted), ("0", base))}
    assert acc["1"] >= 0.85 and acc["0"] <= 0.3, acc


def test_same_greedy_answers_as_the_hf_backend(llamacpp_server, cli, tmp_path):
    hf_target = (f"  backend: hf\n  base: {ROOT / 'models/demo/base'}\n  adapter: {ROOT / 'models/demo/adapters/good'}\n"
                 "  batch_size: 16\n")
    _, _, hf_run = run(cli, config(tmp_path, llamacpp_server, backend_lines=hf_target), "hf")
    _, _, lcpp_run = run(cli, config(tmp_path, llamacpp_server), "lcpp")
    hf = {r.case_id: r for r in hf_run.read_records()}
    lcpp = {r.case_id: r for r in lcpp_run.read_records()}
    assert hf.keys() == lcpp.keys() and len(hf) == 100
    differences = {cid: (hf[cid].output, lcpp[cid].output) for cid in hf if hf[cid].output != lcpp[cid].output}
    assert not differences, f"{len(differences)} answers differ: {list(differences.items())[:5]}"
    # llama.cpp's usage counts the end-of-sequence token; the hf backend does not
    extra = {lcpp[cid].tokens.output - hf[cid].tokens.output for cid in hf}
    assert extra <= {0, 1}
