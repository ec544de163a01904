"""Does the lateness the gate widens latency bounds by cover the client's real TTFT error on a starved CPU?

The lean client (`OpenAIBackend.run_load`, closed loop, as `check` runs it) drives the stub SSE server of
`latency_accuracy.py` (its own process, pinned to another core; TTFT 50 ms, ITL 5 ms, 16 tokens), the client
pinned to one core (`os.sched_setaffinity`), in runs of two kinds interleaved: quiet (the core is the client's)
and hogged (a busy-looping process pinned to the client's core). Truth is the stub's: TTFT = its first content
stamp - the request's actual send (the client's send stamp, or the stub's receipt when that came first: see
`latency_accuracy.py`). Per run:

- TTFT error: reported minus true, per request; `p99 |err|` is the 99th percentile of its absolute value, `p99
  shift` the reported TTFT p99 minus the true TTFT p99 (what a `ttft_ms_p99` criterion reads);
- the lateness the gate widens by, two ways: the event-loop lag p99 alone (what the lean client counted before),
  and the loop lag p99 plus the send lag p99 (scheduled send -> request written; `health.client_lateness_ms`);
- covered: the error fits within the lateness (|p99 shift| <= lateness, and p99 |err| <= lateness).

Prints, per kind, how many runs each lateness covered, and the hogged coverage over the quiet one (a ratio in
the same run); `flagged`: runs the gate calls client-saturated (`health.client_saturation`, loop lag p99 over 10%
of the TTFT p50). `--runs N` (default 15 hogged, a third as many quiet), `--streams`, `--requests`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from latency_accuracy import _Recording, _Server, _server_stamps

from releasegate.backends import Request
from releasegate.gate.health import client_saturation
from releasegate.inputs.target import TargetConfig
from releasegate.stats.intervals import percentile

STUB = (50.0, 5.0, 16)  # TTFT ms, ITL ms, tokens
_HOG = "while True: pass"


def one_run(server: _Server, streams: int, requests: int, tag: str) -> dict:
    target = TargetConfig(backend="openai", base_url=server.base_url, model="stub", concurrency=streams,
                          timeout_s=60, client="lean")
    backend = _Recording(target, {})
    backend.load()
    server.receipts()  # drop the probe's and earlier runs' receipts
    made = [Request(f"{tag}:{i}", [{"role": "user", "content": f"{tag}:{i}"}]) for i in range(requests)]
    done = backend.run_load(made, offsets=None, concurrency=streams, max_new_tokens=STUB[2])
    received = server.receipts()
    reported, true, send = [], [], []
    for request, gen in done.results:
        if gen.error is not None or not hasattr(gen, "raw"):
            continue
        lines, sent = gen.raw
        recv = received[request.messages[0]["content"]]
        reported.append(gen.timing.ttft_ms)
        true.append((_server_stamps(lines)[0] - min(sent, recv)) / 1e6)
        if gen.timing.send_lag_ms is not None:
            send.append(gen.timing.send_lag_ms)
    stats = backend.last_run_stats or {}
    lag = (stats.get("loop_lag_ms") or {}).get("p99") or 0.0
    send_p99 = max(percentile(send, 99), 0.0) if send else 0.0
    return {
        "n": len(reported), "lag": lag, "send": send_p99,
        "err": percentile([abs(r - t) for r, t in zip(reported, true)], 99),
        "shift": percentile(reported, 99) - percentile(true, 99),
        "flagged": client_saturation(lag, percentile(reported, 50), 0.1, cpu_share=stats.get("cpu_share")) is not None,
    }


def _covered(runs: list[dict], key: str, with_send: bool) -> int:
    return sum(abs(r[key]) <= r["lag"] + (r["send"] if with_send else 0.0) for r in runs)


def _report(kind: str, runs: list[dict]) -> dict[str, float]:
    """Prints the coverage of each lateness; returns its share of runs whose p99 |err| it covered."""
    n = len(runs)
    shares = {}
    for label, with_send in (("loop lag", False), ("loop lag + send lag", True)):
        shift, err = _covered(runs, "shift", with_send), _covered(runs, "err", with_send)
        shares[label] = err / n
        print(f"  {kind:>6}  {label:<20} covers p99 shift in {shift:>2} of {n}, p99 |err| in {err:>2} of {n}")
    med = sorted(runs, key=lambda r: r["err"])[n // 2]
    print(f"  {kind:>6}  median run: p99 |err| {med['err']:.2f} ms, loop lag p99 {med['lag']:.2f} ms, "
          f"send lag p99 {med['send']:.2f} ms; flagged saturated in {sum(r['flagged'] for r in runs)} of {n}")
    return shares


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="hogged runs (quiet: a third as many)")
    parser.add_argument("--streams", type=int, default=4)
    parser.add_argument("--requests", type=int, default=32)
    args, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)  # bench/run.py passes its names
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        print(f"needs 2 cores to keep the stub off the client's core; this process may use {len(cores)}: skipped")
        return
    client_core, stub_core = cores[0], cores[1]
    started = time.perf_counter()
    before = os.sched_getaffinity(0)
    print(f"lean client on core {client_core}, stub on core {stub_core} (TTFT {STUB[0]:.0f} ms, ITL {STUB[1]:.0f} ms, "
          f"{STUB[2]} tokens); {args.streams} streams, {args.requests} requests a run; errors in ms, reported - true")
    quiet_runs, hog_runs = [], []
    with _Server(*STUB) as server:
        os.sched_setaffinity(server.proc.pid, {stub_core})
        os.sched_setaffinity(0, {client_core})
        try:
            for i in range(args.runs):
                if i % 3 == 0:
                    quiet_runs.append(one_run(server, args.streams, args.requests, f"q{i}"))
                hog = subprocess.Popen([sys.executable, "-c", _HOG])
                try:
                    os.sched_setaffinity(hog.pid, {client_core})
                    time.sleep(0.05)  # the hog is running before the window opens
                    hog_runs.append(one_run(server, args.streams, args.requests, f"h{i}"))
                finally:
                    hog.kill()
                    hog.wait()
        finally:
            os.sched_setaffinity(0, before)
    quiet = _report("quiet", quiet_runs)
    hogged = _report("hogged", hog_runs)
    for label in quiet:
        ratio = hogged[label] / quiet[label] if quiet[label] else float("nan")
        print(f"  p99 |err| coverage hogged / quiet, {label}: {ratio:.2f}")
    base = hogged["loop lag"]
    print(f"  p99 |err| coverage hogged, loop lag + send lag / loop lag alone: "
          f"{hogged['loop lag + send lag'] / base if base else float('nan'):.2f}")
    print(f"runtime {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
