"""How exact is releasegate's streaming clock? A stub SSE server with injected, known TTFT and ITL stamps every
event with its own send time; releasegate's openai client drives it at concurrency 1, 64 and 256.

Printed: measured-minus-true TTFT and ITL at p50 and p99 (true = the server's own stamps), and achieved vs
target request rate for an open-loop Poisson run. The stub runs in a separate process so that its work does not
hide inside the client's figures; both read the same system-wide monotonic clock.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import time

from releasegate.backends import Request
from releasegate.backends.openai import OpenAIBackend, Scheduled
from releasegate.config import TargetConfig
from releasegate.stats import percentile
from releasegate.testing import StubBehaviour, StubServer

TTFT_MS, ITL_MS, TOKENS = 50.0, 10.0, 16


def _serve(port_queue, stop_event):
    with StubServer(StubBehaviour(ttft_ms=TTFT_MS, itl_ms=ITL_MS, tokens=TOKENS)) as stub:
        port_queue.put(stub.port)
        stop_event.wait()


class _Recording(OpenAIBackend):
    """Keeps the raw lines so the server's stamps can be compared with the client's."""

    def _finish(self, lines, stamps, sent, end, scheduled, attempt):
        gen = super()._finish(lines, stamps, sent, end, scheduled, attempt)
        gen.raw = (lines, stamps, sent)
        return gen


def errors(gens) -> tuple[list[float], list[float]]:
    """Client-minus-server arrival error of the first event (TTFT error) and of each gap (ITL error)."""
    ttft_err, itl_err = [], []
    for g in gens:
        lines, stamps, _ = g.raw
        events = [(json.loads(line[5:]), t) for line, t in zip(lines, stamps) if line.startswith("data: {")]
        content = [(e["stub_sent_ns"], t) for e, t in events if "stub_sent_ns" in e]
        ttft_err.append((content[0][1] - content[0][0]) / 1e6)
        for (s0, c0), (s1, c1) in zip(content, content[1:]):
            itl_err.append(((c1 - c0) - (s1 - s0)) / 1e6)
    return ttft_err, itl_err


def main() -> None:
    ctx = mp.get_context("spawn")
    ports, stop = ctx.Queue(), ctx.Event()
    server = ctx.Process(target=_serve, args=(ports, stop), daemon=True)
    server.start()
    port = ports.get(timeout=30)
    try:
        _run(f"http://127.0.0.1:{port}/v1")
    finally:
        stop.set()
        server.join(10)


def _run(base_url: str) -> None:
    print(f"stub: TTFT {TTFT_MS} ms, ITL {ITL_MS} ms, {TOKENS} tokens per response")
    print(f"{'client':>7} {'concurrency':>11} {'requests':>8} {'TTFT err p50':>13} {'p99':>8} {'ITL err p50':>12} {'p99':>8}  (ms, client - server)")
    for client, concurrency in [(c, n) for c in ("lean", "openai") for n in (1, 64, 256)]:
        target = TargetConfig(backend="openai", base_url=base_url, model="stub", concurrency=concurrency, timeout_s=60,
                              client=client)
        backend = _Recording(target, {})
        backend.load()
        n = max(32, concurrency * 2)
        requests = [Request(f"r{i}", [{"role": "user", "content": "hi"}]) for i in range(n)]
        backend.generate(requests[: min(n, concurrency)], max_new_tokens=TOKENS)  # warm-up: connections
        gens = backend.generate(requests, max_new_tokens=TOKENS)
        ok = [g for g in gens if g.error is None]
        ttft_err, itl_err = errors(ok)
        print(
            f"{client:>7} {concurrency:>11} {len(ok):>8} {percentile(ttft_err, 50):>13.3f} {percentile(ttft_err, 99):>8.3f} "
            f"{percentile(itl_err, 50):>12.3f} {percentile(itl_err, 99):>8.3f}"
        )
    _rate(base_url)


def _rate(base_url: str, rate: float = 50.0, n: int = 200) -> None:
    from releasegate.load import arrival_offsets

    target = TargetConfig(backend="openai", base_url=base_url, model="stub", concurrency=256)
    backend = OpenAIBackend(target, {})
    backend.load()
    offsets = arrival_offsets(n, rate=rate, arrival="poisson", burstiness=1.0, seed=0)
    start = time.perf_counter_ns() + 50_000_000
    items = [Scheduled(Request(f"r{i}", [{"role": "user", "content": "hi"}]), start + int(o * 1e9)) for i, o in enumerate(offsets)]
    gens = backend.run_scheduled(items, max_new_tokens=TOKENS, concurrency=256)
    lags = [g.timing.send_lag_ms for g in gens]
    span = offsets[-1]
    achieved = (n - 1) / ((max(i.at_ns + g.timing.send_lag_ms * 1e6 for i, g in zip(items, gens)) - start) / 1e9)
    print(f"open loop Poisson: target {rate:.0f} req/s (schedule {n / span:.1f} req/s), achieved {achieved:.1f} req/s; "
          f"send lag p50 {percentile(lags, 50):.3f} ms, p99 {percentile(lags, 99):.3f} ms")


if __name__ == "__main__":
    main()
