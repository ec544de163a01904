"""The flip probe against a real llama.cpp server (xllamacpp, the demo as GGUF, greedy): the demo suites' 100
cases answered one at a time (the quality phase, concurrency 1), then each asked again under a closed loop of 4
in flight, on a server with 4 slots (batched decoding) and on one with 1 slot (the same load queued, one answer
at a time). What the probe measures is whatever the server does: nothing here asserts a flip rate, only that it
is measured on every case, named, paired and gated as the rubric asks. The figures are printed (`-s`) and
recorded in docs/stability.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import llamacpp
from conftest import ROOT

pytestmark = pytest.mark.slow

RUBRIC = """\
review: {required_domains: []}
criteria:
  - {metric: accuracy, op: ">=", threshold: 0}
  - {metric: load_flip_rate, op: "<=", threshold: 0.02, confidence: 0.95}
  - {metric: load_accuracy_delta, op: ">=", threshold: -0.05, confidence: 0.95}
  - {metric: accuracy, op: ">=", threshold: 0, phase: load}
"""
CASES = 100  # tickets (60) and tickets_shifted (40)


def project(tmp: Path, server) -> Path:
    (tmp / "rubric.yaml").write_text(RUBRIC)
    suites = "".join(
        f"  - {{path: {ROOT / 'suites/demo' / name}, answer: {{type: json_fields, fields: [intent, priority]}}}}\n"
        for name in ("tickets.jsonl", "tickets_shifted.jsonl"))
    config = tmp / "c.yaml"
    config.write_text(
        f"target:\n  backend: openai\n  base_url: {server.base_url}\n  model: {server.model}\n  concurrency: 1\n"
        "  timeout_s: 60\n  extra_body: {lora: [{id: 0, scale: 1.0}]}\n"
        "generation: {max_new_tokens: 32, temperature: 0}\n"
        f"suites:\n{suites}rubric: rubric.yaml\nload: {{concurrency: 4, requests: {CASES}, warmup: 4}}\n")
    return config


@pytest.fixture(scope="module")
def demo_gguf(tmp_path_factory):
    pytest.importorskip("xllamacpp", reason="llama.cpp bindings (pip install xllamacpp) not installed")
    pytest.importorskip("gguf", reason="gguf (pip install gguf) not installed")
    if not llamacpp.demo_available():
        pytest.skip(f"demo model not built: {llamacpp.DEMO}")
    return llamacpp.export_demo(tmp_path_factory.mktemp("flip"))


@pytest.mark.parametrize(("slots", "exact"), [(4, True), (1, True), (4, False)],
                         ids=["4-slots", "1-slot", "4-slots-flash-attention"])
def test_the_load_flip_rate_of_a_real_server_is_measured_on_every_case(demo_gguf, cli, tmp_path, slots, exact):
    """exact: f32 attention without flash attention (releasegate's launcher default); False: llama.cpp's own
    default, CPU flash attention in f16, whose rounding depends on the batch."""
    model, loras = demo_gguf
    server = llamacpp.start_server(model, loras, n_parallel=slots, exact_attention=exact)
    try:
        code, out, err = cli("check", "-c", project(tmp_path, server), "--run-id", "r", "--no-progress", "--json")
    finally:
        server.stop()
    assert "Traceback" not in err
    report = json.loads(out)
    rows = {(c["metric"], c.get("phase")): c for c in report["criteria"]}
    flip = rows[("load_flip_rate", None)]
    delta = rows[("load_accuracy_delta", None)]
    under_load = rows[("accuracy", "load")]
    print(f"\nllama.cpp {slots} slot(s){'' if exact else ', flash attention'}, 4 in flight: load_flip_rate {flip['value']:.4f} "
          f"(n {flip['n']}, bounds {flip['bounds']}, {flip['verdict']}); load_accuracy_delta {delta['value']:+.4f} "
          f"(bounds {delta['bounds']}, {delta['verdict']}); accuracy alone {rows[('accuracy', None)]['value']:.3f}, "
          f"under load {under_load['value']:.3f}; flipped: {[f['case_id'] for f in report['stability']['flips']]}")
    assert flip["n"] == CASES and flip["value"] is not None and flip["bounds"][1] is not None
    assert delta["n"] == CASES and under_load["n"] == CASES
    assert len(report["stability"]["flips"]) == round(flip["value"] * CASES)
    assert (flip["verdict"] == "fail") == (flip["bounds"][0] > 0.02)
    assert code == report["exit_code"]
