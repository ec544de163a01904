"""`releasegate servers`: the demo on the local hf backend and on a real llama.cpp server, compared in one report
in every format, with a recommendation made only among targets whose gate passed."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow

SUITES = ROOT / "suites" / "demo"
LIMIT = 60
"""The demo's tickets suite, run whole (a run on part of a suite speaks for that part only)."""
MARGIN = ("--margin", "0.05")  # the demo's 60 cases cannot show parity within compare's 0.02 (81+ needed)
RUBRIC = """\
review: {required_domains: []}
criteria:
  - {metric: accuracy, op: ">=", threshold: 0.5}
  - {metric: error_rate, op: "<=", threshold: 0.0}
  - {metric: ttft_ms_p50, op: "<=", threshold: 60000}
"""


def _config(tmp: Path, name: str, target: str, rubric: str = RUBRIC) -> Path:
    (tmp / f"{name}.rubric.yaml").write_text(rubric)
    suites = "".join(f"  - {{path: {SUITES / s}, answer: {{type: json_fields, fields: [intent, priority]}}}}\n"
                     for s in ("tickets.jsonl",))
    path = tmp / f"{name}.yaml"
    path.write_text(f"target:\n{target}generation: {{max_new_tokens: 32}}\nsuites:\n{suites}"
                    f"rubric: {name}.rubric.yaml\ncost: {{mode: self_hosted, hourly_usd: 0.1}}\n")
    return path


def _check(cli, config: Path, run_id: str) -> Path:
    code, out, err = cli("check", "-c", config, "--run-id", run_id, "--no-progress", "--json")
    assert "Traceback" not in err
    return config.parent / "reports" / run_id


@pytest.fixture(scope="module")
def runs(llamacpp_server, tmp_path_factory):
    from releasegate.cli import main

    tmp = tmp_path_factory.mktemp("servers")
    hf = _config(tmp, "hf", f"  backend: hf\n  base: {ROOT / 'models/demo/base'}\n  adapter: {ROOT / 'models/demo/adapters/good'}\n"
                             "  threads: 1\n  batch_size: 8\n")
    lcpp = _config(tmp, "lcpp", f"  backend: openai\n  base_url: {llamacpp_server.base_url}\n  model: {llamacpp_server.model}\n"
                                f"  concurrency: 4\n  tokenizer: {ROOT / 'models/demo/base'}\n"
                                "  extra_body: {lora: [{id: 0, scale: 1.0}]}\n")
    strict = _config(tmp, "strict", lcpp.read_text().split("generation:")[0].split("target:\n")[1],
                     RUBRIC.replace("threshold: 60000", "threshold: 0.001"))  # TTFT p50 under 1 us: fails
    out = {}
    for name, cfg in (("hf", hf), ("lcpp", lcpp), ("strict", strict)):
        code = main(["check", "-c", str(cfg), "--run-id", name, "--no-progress"])
        out[name] = (tmp / "reports" / name, code)
    return out


def test_hf_and_llamacpp_compared_in_every_format(runs, cli, tmp_path):
    (hf, hf_code), (lcpp, lcpp_code) = runs["hf"], runs["lcpp"]
    assert hf_code == 0 and lcpp_code == 0
    code, out, err = cli("servers", hf, lcpp, "--json", *MARGIN)
    assert code == 0 and "Traceback" not in err
    result = json.loads(out)
    ref, other = result["targets"]
    assert ref["run_id"] == "hf" and other["backend"] == "openai"
    assert other["parity"]["shared_cases"] == LIMIT
    assert other["parity"]["identical_outputs"] == LIMIT  # greedy parity, llama.cpp f32 vs HF float32
    assert other["parity"]["quality_verdict"] == "PASS" and other["parity"]["shared_share"] == 1.0
    for t in result["targets"]:
        assert t["bottleneck"] in ("prefill", "decode") and 0 < t["prefill_share"] <= 1
        assert t["ttft_ms_p95"] > 0 and t["tpot_ms_p95"] > 0 and t["cost_per_1m_output_tokens"] > 0
    # no sweep and no cost interval: ranked on the E2E p95 bounds; the reference stays unless another's lie
    # wholly below its own
    assert result["verdict"] == "PASS" and result["recommended"] in ("hf", "lcpp")
    assert ("lies wholly below" if result["recommended"] == "lcpp" else "reference stays") in result["recommendation"]
    for fmt in ("md", "html", "json", "csv"):
        target = tmp_path / f"servers.{fmt}"
        code, _, err = cli("servers", hf, lcpp, "--format", fmt, "-o", target, *MARGIN)
        assert code == 0 and "Traceback" not in err
        text = target.read_text()
        assert "lcpp" in text and ("recommend" in text.lower() or fmt == "csv")
    rows = list(csv.reader(io.StringIO((tmp_path / "servers.csv").read_text())))
    assert len(rows) == 3 and rows[0][0] == "run"
    assert "<table>" in (tmp_path / "servers.html").read_text()


def test_a_target_whose_gate_failed_is_never_recommended(runs, cli):
    (lcpp, _), (strict, strict_code) = runs["lcpp"], runs["strict"]
    assert strict_code == 1
    code, out, _ = cli("servers", lcpp, strict, "--json", *MARGIN)
    result = json.loads(out)
    assert result["recommended"] == "lcpp" and code == 0
    assert result["targets"][1]["comparable"] == "judged by another rubric than the reference"
    code, out, _ = cli("servers", strict, lcpp, "--json", *MARGIN)  # a passing target judged by another bar
    result = json.loads(out)
    assert result["recommended"] is None and "does not qualify" in result["recommendation"] and code == 3
    code, _, err = cli("servers", strict, strict, "--json")
    assert code == 2 and "given twice" in err


def test_servers_needs_two_judged_runs(cli, tmp_path):
    code, _, err = cli("servers", tmp_path)
    assert code == 2 and "two or more" in err
    code, _, err = cli("servers", tmp_path, tmp_path)
    assert code == 2 and "Traceback" not in err


@pytest.mark.vllm
def test_hf_llamacpp_and_vllm_in_one_comparison(runs, vllm_server, cli, tmp_path):
    target = f"  backend: openai\n  base_url: {vllm_server.base_url}\n  model: good\n  concurrency: 4\n"
    cfg = _config(tmp_path, "vllm", target)
    code, out, err = cli("check", "-c", cfg, "--run-id", "vllm", "--no-progress", "--json")
    assert "Traceback" not in err
    vllm = tmp_path / "reports" / "vllm"
    code, out, _ = cli("servers", runs["hf"][0], runs["lcpp"][0], vllm, "--json")
    result = json.loads(out)
    assert [t["run_id"] for t in result["targets"]] == ["hf", "lcpp", "vllm"]
    assert result["targets"][2]["parity"]["identical_outputs"] == LIMIT
    for fmt in ("md", "html", "json", "csv"):
        code, _, err = cli("servers", runs["hf"][0], runs["lcpp"][0], vllm, "--format", fmt, "-o", tmp_path / f"s.{fmt}")
        assert "Traceback" not in err and (tmp_path / f"s.{fmt}").read_text()


def test_a_target_with_undecided_quality_parity_is_not_recommended():
    from releasegate.pipeline.server_ranking import recommend as _recommend

    base = {"run_id": "ref", "target": "t", "verdict": "PASS", "capacity_rps": None, "cost_per_1m_output_tokens": 2.0,
            "cost_mode": "api",
            "ttft_ms_p95": 1.0, "bottleneck": "decode", "capacity_at_least": None, "cost_per_1m_at_capacity": None}
    cheap = {**base, "run_id": "cheap", "cost_per_1m_output_tokens": 1.0,
             "parity": {"quality_verdict": "INCONCLUSIVE"}}
    assert _recommend([base, cheap])["recommended"] == "ref"
    assert _recommend([base, {**cheap, "parity": {"quality_verdict": "PASS"}}])["recommended"] == "cheap"
