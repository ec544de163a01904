"""Scaling on Ray (`scale: {engine: ray}`): demo evaluation throughput with 1 vs 2 workers, and the client's TTFT
error at 256 and 1024 streams from one process vs two Ray workers against the stub server.

1. The demo evaluation (models/demo base + good adapter, suites/demo, batch size 16, 1 torch thread per process)
   through `run_check`, the code `releasegate check` runs: in this process, then sharded over 1 and 2 Ray actors
   of a local cluster (2 CPUs, started once, not timed). tok/s = output tokens / generation seconds (run.json,
   the report's output_tokens_per_s; model load excluded), `load s` = loading the model (on Ray: starting the
   actors, each importing torch and loading its copy), `wall s` = run_check end to end. `same`: records whose
   output and token counts equal the one-process run's (must be all). Median over `--rounds` (default 2).
2. The load phase's closed loop against the stub in its own process (TTFT 100 ms, ITL 20 ms, 64 tokens), as in
   bench/latency_accuracy.py (see its docstring for the error's definition: reported TTFT - the stub's first
   content stamp + the request's actual send), at 256 and 1024 streams, 4 requests per stream, lean client:
   from this process (`OpenAIBackend.run_load`) and split across 2 Ray workers (`scale.load.DistributedLoad`:
   two processes, each its own event loop, each half the streams). Both processes and the stub read the same
   system-wide monotonic clock. loop lag p99 = the worst worker's; ratio = 2 workers / 1 process. Cells are
   medians over runs, the two ways alternating which goes first, with a pause after each run (`SETTLE_S`).
On a 2-core machine the stub and the clients share the cores: the figures say what this machine gives.
`--quick`: 1 round, 64 and 256 streams. `--streams 256,1024`, `--runs N` (load runs per row, default 3),
`--parts demo,load`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import latency_accuracy as la  # noqa: E402  # the stub-in-its-own-process and error definitions, shared

from releasegate.backends import Request  # noqa: E402
from releasegate.inputs.scale_config import ScaleConfig  # noqa: E402
from releasegate.inputs.target import TargetConfig  # noqa: E402
from releasegate.pipeline.check_options import CheckOptions  # noqa: E402
from releasegate.scale._ray import normal_priority  # noqa: E402
from releasegate.scale.load import DistributedLoad, LoadWorker  # noqa: E402
from releasegate.stats.intervals import percentile  # noqa: E402

SETTLE_S = 5.0
"""Pause after every run: when actors end, Ray's raylet starts fresh idle worker processes (importing Ray, about
a CPU-second each), which would otherwise land in the next run's window on 2 cores."""


class RecordingWorker(LoadWorker):
    """A load worker whose backend keeps each stream's raw lines and send stamp (bench/latency_accuracy.py)."""

    def __init__(self, target, generation, env) -> None:
        os.environ.update(env)
        self.niceness = normal_priority()
        self.backend = la._Recording(target, generation)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--streams", type=lambda s: [int(x) for x in s.split(",")], default=None)
    parser.add_argument("--parts", type=lambda s: s.split(","), default=["demo", "load"])
    args, _ = parser.parse_known_args()
    rounds = args.rounds or (1 if args.quick else 2)
    streams = args.streams or ([64, 256] if args.quick else [256, 1024])
    import ray

    ray.cloudpickle.register_pickle_by_value(la)  # the workers cannot import bench/ modules by name
    started = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR", address="local")
    print(f"local Ray cluster up in {time.perf_counter() - started:.1f} s (2 CPUs, not counted below)")
    try:
        if "demo" in args.parts:
            demo(rounds)
        if "load" in args.parts:
            load(streams, args.runs or (1 if args.quick else 3))
    finally:
        ray.shutdown()
    print(f"runtime {time.perf_counter() - started:.0f} s")


# -- 1. demo evaluation -----------------------------------------------------------------------------------

def demo(rounds: int) -> None:
    from rich.console import Console

    from releasegate.inputs.validation import load_inputs
    from releasegate.pipeline.check import run_check

    config, rubric, cases = load_inputs(ROOT / "releasegate.yaml")
    ways = {"one process": None, "ray 1 worker": ScaleConfig(workers=1), "ray 2 workers": ScaleConfig(workers=2)}
    runs: dict[str, list[dict]] = {name: [] for name in ways}
    with tempfile.TemporaryDirectory(prefix="rg-scale-") as tmp:
        for round_ in range(rounds):
            for name in (list(ways) if round_ % 2 == 0 else list(ways)[::-1]):
                cfg = dataclasses.replace(config, scale=ways[name], output_dir=Path(tmp) / f"{round_}")
                begun = time.perf_counter()
                run, _ = run_check(cfg, rubric, cases, CheckOptions(
                    Console(quiet=True), progress=False, run_id=name.replace(" ", "-"), allow_pending=True,
                    use_cache=False))
                wall = time.perf_counter() - begun
                time.sleep(SETTLE_S)
                info = json.loads((run.path / "run.json").read_text())
                records = run.read_records()
                runs[name].append({"tps": sum(r.tokens.output for r in records) / info["generation_seconds"],
                                   "gen": info["generation_seconds"], "load": info["load_seconds"], "wall": wall,
                                   "outputs": [(r.case_id, r.output, r.tokens.output, r.tokens.input) for r in records]})
    base = runs["one process"][0]["outputs"]
    med = {n: {k: statistics.median(r[k] for r in rs) for k in ("tps", "gen", "load", "wall")} for n, rs in runs.items()}
    print(f"\n1. demo evaluation, 100 cases, batch size 16, median of {rounds} round(s)")
    print(f"{'':14} {'tok/s':>7} {'gen s':>6} {'load s':>7} {'wall s':>7} {'tok/s vs 1 proc':>16} {'same':>8}")
    for name, m in med.items():
        same = min(sum(a == b for a, b in zip(r["outputs"], base)) for r in runs[name])
        print(f"{name:14} {m['tps']:7.0f} {m['gen']:6.2f} {m['load']:7.1f} {m['wall']:7.1f} "
              f"{m['tps'] / med['one process']['tps']:16.2f} {same:>4}/{len(base)}")
    print(f"2 workers / 1 worker, tok/s: {med['ray 2 workers']['tps'] / med['ray 1 worker']['tps']:.2f}")


# -- 2. client TTFT error ---------------------------------------------------------------------------------

def load(streams_list: list[int], runs: int) -> None:
    print("\n2. client TTFT error (ms, reported - true), lean client, closed loop, stub TTFT 100 ms ITL 20 ms "
          "64 tokens in its own process")
    print(f"{'streams':>7} {'clients':14} {'ok/sent':>11} {'TTFT err p50':>13} {'TTFT err p99':>13} "
          f"{'send late p99':>14} {'loop lag p99':>13} {'req/s / ideal':>14}")
    with la._Server() as server:
        for streams in streams_list:
            ways = (("1 process", None), ("2 Ray workers", 2))
            results: dict[str, list[dict]] = {name: [] for name, _ in ways}
            for i in range(runs):  # alternating which goes first
                for name, workers in (ways if i % 2 == 0 else ways[::-1]):
                    results[name].append(one_load(server, streams, workers, f"{streams}.{workers}.{i}"))
                    time.sleep(SETTLE_S)
            rows = {}
            for name, _ in ways:
                rs = results[name]
                rows[name] = {k: statistics.median(r[k] for r in rs) for k in rs[0] if k not in ("ok", "n")}
                ok, n = sum(r["ok"] for r in rs), sum(r["n"] for r in rs)
                m = rows[name]
                print(f"{streams:7d} {name:14} {f'{ok}/{n}':>11} {m['ttft_p50']:13.2f} {m['ttft_p99']:13.2f} "
                      f"{m['send_p99']:14.2f} {m['lag_p99']:13.2f} {m['rate']:14.2f}", flush=True)
            one, two = rows["1 process"], rows["2 Ray workers"]
            print(f"{streams:7d} {'ratio 2w / 1p':14} {'':>11} {_ratio(two['ttft_p50'], one['ttft_p50']):>13} "
                  f"{_ratio(two['ttft_p99'], one['ttft_p99']):>13} {_ratio(two['send_p99'], one['send_p99']):>14} "
                  f"{_ratio(two['lag_p99'], one['lag_p99']):>13} {_ratio(two['rate'], one['rate']):>14}")


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


def one_load(server, streams: int, workers: int | None, tag: str) -> dict:
    target = TargetConfig(backend="openai", base_url=server.base_url, model="stub", concurrency=streams,
                          timeout_s=300, client="lean")
    backend = la._Recording(target, {})
    backend.load()
    server.receipts()  # drop the probe's receipts
    requests = [Request(f"{tag}:r{i}", [{"role": "user", "content": f"{tag}:r{i}"}]) for i in range(4 * streams)]
    if workers is None:
        done = backend.run_load(requests, offsets=None, concurrency=streams, max_new_tokens=la.TOKENS)
    else:
        plan = _Plan(requests)
        spread = DistributedLoad(backend, ScaleConfig(workers=workers), plan)
        spread.worker = RecordingWorker
        done = spread.run_load(requests, offsets=None, concurrency=streams, max_new_tokens=la.TOKENS)
    received = server.receipts()
    ttft_err, send_late = [], []
    for request, gen in done.results:
        if gen.error is not None or not hasattr(gen, "raw"):
            continue
        lines, sent = gen.raw
        first = la._server_stamps(lines)[0]
        recv = received[request.messages[0]["content"]]
        ttft_err.append(gen.timing.ttft_ms - (first - min(sent, recv)) / 1e6)
        send_late.append(max(0, sent - recv) / 1e6)
    lag = ((done.client or {}).get("loop_lag_ms") or {}).get("p99")
    return {"ok": len(ttft_err), "n": len(done.results), "ttft_p50": percentile(ttft_err, 50),
            "ttft_p99": percentile(ttft_err, 99), "send_p99": percentile(send_late, 99), "lag_p99": lag,
            "rate": len(ttft_err) / done.seconds / (streams / la.IDEAL_S)}


@dataclasses.dataclass
class _Plan:
    """The parts of a LoadPlan that DistributedLoad reads: a closed loop over a fixed list."""

    requests: list
    offsets: None = None
    warmup: list = dataclasses.field(default_factory=list)
    pool: list = dataclasses.field(default_factory=list)


if __name__ == "__main__":
    main()
