"""HF backend on the demo model: batching and the deployment variants (adapter, merged, int8, speculative),
as ratios against the batch-1 unmerged adapter.

Every variant runs the same cases in the same process, interleaved over several rounds, and the median of
the rounds is reported, so machine noise hits all variants alike. Baseline: adapter unmerged, batch size 1.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from pathlib import Path

from releasegate.backends import Request, create_backend
from releasegate.inputs.config import load_config
from releasegate.inputs.suites import load_suites
from releasegate.stats.intervals import percentile

ROOT = Path(__file__).resolve().parents[1]
ROUNDS = 3
CASES = 48


def main() -> None:
    config = load_config(ROOT / "releasegate.yaml")
    cases = load_suites(config.suites, config.path.parent)[:CASES]
    requests = [Request(c.id, list(c.messages) if c.messages else None, c.prompt) for c in cases]
    variants = {
        "adapter, batch 1 (baseline)": dict(batch_size=1),
        "adapter, batch 16": dict(batch_size=16),
        "merged, batch 1": dict(batch_size=1, merge=True),
        "merged, batch 16": dict(batch_size=16, merge=True),
        "int8, batch 1": dict(batch_size=1, merge=True, quantize="int8"),
        "int8, batch 16": dict(batch_size=16, merge=True, quantize="int8"),
    }
    draft = ROOT / "models" / "demo" / "draft"
    if (draft / "config.json").exists():
        variants["speculative, batch 1"] = dict(batch_size=1, merge=True, draft=draft)
    backends = {}
    for name, change in variants.items():
        backends[name] = create_backend(dataclasses.replace(config.target, **change))
        backends[name].load()
    results = {name: [] for name in variants}
    for _ in range(ROUNDS):
        for name, backend in backends.items():
            results[name].append(_measure(backend, requests, config.max_new_tokens))
    base = _summary(results["adapter, batch 1 (baseline)"])
    print(f"{len(requests)} cases x {ROUNDS} rounds, 1 torch thread; ratios vs the baseline (higher is better for tok/s)")
    print(f"{'variant':30} {'tok/s':>8} {'x base':>7} {'TTFT p50 ms':>12} {'TPOT p50 ms':>12} {'x base':>7}")
    if "speculative, batch 1" not in variants:
        print("(no models/demo/draft: speculative variant skipped)")
    for name in variants:
        s = _summary(results[name])
        print(
            f"{name:30} {s['tps']:8.0f} {s['tps'] / base['tps']:7.2f} {s['ttft']:12.2f} {s['tpot']:12.3f} "
            f"{s['tpot'] / base['tpot']:7.2f}"
        )


def _measure(backend, requests, max_new_tokens) -> dict:
    started = time.perf_counter()
    gens = []
    for i in range(0, len(requests), backend.batch_size):
        gens += backend.generate(requests[i : i + backend.batch_size], max_new_tokens=max_new_tokens)
    wall = time.perf_counter() - started
    return {
        "tps": sum(g.tokens.output for g in gens) / wall,
        "ttft": percentile([g.timing.ttft_ms for g in gens], 50),
        "tpot": percentile([g.timing.tpot_ms for g in gens if g.timing.tpot_ms], 50),
    }


def _summary(rounds: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}


if __name__ == "__main__":
    main()
