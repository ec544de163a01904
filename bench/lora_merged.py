"""The good adapter served two ways on llama.cpp: per request as a LoRA (baseline) vs merged into one GGUF.

Both servers run at once (1 thread, 4 slots each); the same demo cases go through the openai backend at
concurrency 1 and 4, interleaved over several rounds, and the median of the rounds is reported, so machine
noise hits both alike. Reports output parity (identical answers) and throughput, TTFT and TPOT as ratios
merged / per-request LoRA. With --vllm and .venv-vllm (make vllm), the same for vLLM: LoRA module vs a
merged checkpoint (about a minute more: two vLLM starts).
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path

from releasegate.backends import Request, create_backend
from releasegate.export import llamacpp, vllm
from releasegate.inputs.config import load_config
from releasegate.inputs.suites import load_suites
from releasegate.stats.intervals import percentile

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "models" / "demo"
ROUNDS = 3
CASES = 48
CONCURRENCY = (1, 4)


def main() -> None:
    config = load_config(ROOT / "releasegate.yaml")
    cases = load_suites(config.suites, config.path.parent)[:CASES]
    requests = [Request(c.id, list(c.messages) if c.messages else None, c.prompt) for c in cases]
    engines = {"llama.cpp": _llamacpp_servers}
    if "--vllm" in sys.argv[1:]:
        engines["vLLM"] = _vllm_servers
    with tempfile.TemporaryDirectory() as tmp:
        for engine, start in engines.items():
            servers = start(Path(tmp))
            try:
                _report(engine, config, requests, servers)
            finally:
                for server, _, _ in servers.values():
                    server.stop()


def _llamacpp_servers(tmp: Path) -> dict:
    """name -> (server, model name, extra_body)."""
    good = DEMO / "adapters" / "good"
    model, loras = llamacpp.export_for_serving(DEMO / "base", [good], tmp / "lora")
    merged, _ = llamacpp.export_for_serving(DEMO / "base", [good], tmp / "merged", merge=True)
    dynamic = llamacpp.start_server(model, loras)
    one = llamacpp.start_server(merged, [])
    return {"per-request LoRA (baseline)": (dynamic, dynamic.model, {"lora": [{"id": 0, "scale": 1.0}]}),
            "merged": (one, one.model, {})}


def _vllm_servers(tmp: Path) -> dict:
    python = vllm.vllm_python(ROOT)
    if not python.is_file():
        raise SystemExit(f"--vllm: no vLLM environment at {python} (make vllm)")
    merged = llamacpp.merge_adapter(DEMO / "base", DEMO / "adapters" / "good", tmp / "vllm-merged")
    dynamic = vllm.start_server(DEMO / "base", {"good": DEMO / "adapters" / "good"}, python=python)
    one = vllm.start_server(merged, python=python)
    return {"LoRA module (baseline)": (dynamic, "good", {}), "merged": (one, one.model, {})}


def _report(server_name: str, config, requests, servers: dict) -> None:
    results = {(name, c): [] for name in servers for c in CONCURRENCY}
    texts = {}
    for _ in range(ROUNDS):
        for concurrency in CONCURRENCY:
            for name, (server, model, extra) in servers.items():
                target = dataclasses.replace(config.target, backend="openai", base_url=server.base_url, model=model,
                                             extra_body=extra, concurrency=concurrency, tokenizer=DEMO / "base" / "tokenizer.json")
                measured, texts[name] = _measure(create_backend(target), requests, config.max_new_tokens)
                results[(name, concurrency)].append(measured)
    base_name, other = list(servers)
    same = sum(a == b for a, b in zip(texts[base_name], texts[other]))
    print(f"{server_name}: {len(requests)} cases x {ROUNDS} rounds; identical answers {same}/{len(requests)}; "
          "ratios merged / baseline (tok/s: higher is better; TTFT, TPOT: lower is better)")
    print(f"{'variant':28} {'conc':>4} {'tok/s':>7} {'x base':>7} {'TTFT p50':>9} {'x base':>7} {'TPOT p50':>9} {'x base':>7}")
    for concurrency in CONCURRENCY:
        base = _summary(results[(base_name, concurrency)])
        for name in servers:
            s = _summary(results[(name, concurrency)])
            print(f"{name:28} {concurrency:4d} {s['tps']:7.0f} {s['tps'] / base['tps']:7.2f} {s['ttft']:9.2f} "
                  f"{s['ttft'] / base['ttft']:7.2f} {s['tpot']:9.3f} {s['tpot'] / base['tpot']:7.2f}")


def _measure(backend, requests, max_new_tokens) -> tuple[dict, list]:
    backend.load()
    try:
        started = time.perf_counter()
        gens = backend.generate(requests, max_new_tokens=max_new_tokens)
        wall = time.perf_counter() - started
    finally:
        backend.close()
    failed = [g.error_message for g in gens if g.error]
    if failed:
        raise SystemExit(f"{len(failed)} requests failed: {failed[:3]}")
    return {
        "tps": sum(g.tokens.output for g in gens) / wall,
        "ttft": percentile([g.timing.ttft_ms for g in gens], 50),
        "tpot": percentile([g.timing.tpot_ms for g in gens if g.timing.tpot_ms], 50),
    }, [g.text for g in gens]


def _summary(rounds: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}


if __name__ == "__main__":
    main()
