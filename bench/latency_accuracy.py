"""How exact are the TTFT and ITL that releasegate reports? Its load phase (`OpenAIBackend.run_load`, closed loop,
as `check` runs it) drives a stub SSE server with a known TTFT (100 ms), ITL (20 ms) and 64 tokens per stream,
with both clients (`lean`, `openai`) at 1, 64, 256 and 1024 streams in flight, 4 requests per stream (at least
32), 3 runs each. `--quick`: a smoke run, 1 run at 1 and 16 streams (at least 8 requests); `--runs N`,
`--streams 1,64`, `--clients lean`: as given.

The stub runs in its own process (`python -c`), so its work never shares the client's GIL; both read
`time.perf_counter_ns()`, one system-wide monotonic clock on Linux. The stub stamps every content event with
`stub_sent_ns` (just before it writes the event) and, in this bench only, the moment each request reached it
(`_route` entered, the whole request read), handed over on its stdout after each run. The client keeps the raw
SSE lines of each stream and its own send stamp (the record's TTFT clock); nothing else in the measured path
changes. Errors are the reported figure minus the true one, in ms:

- true TTFT = the server's first content stamp - the request's actual send. The actual send is the client's send
  stamp (its last request byte written: where `ttft_ms` starts), unless the server had read the request before
  that stamp: then the stamp is late by at least that much, and the server's receipt stands in for the send (it
  can only be later than the real one: a conservative bound). So TTFT error = (client's arrival stamp of the first
  token - the server's send of it) - (how late the send stamp was, at least). It is not `ttft_ms - 100`: the
  time the request spent reaching the server and waiting to be read, and the stub's own lateness past its 100 ms,
  are latency the user really waits, which the client rightly counts (the stub's TTFT as served, receipt -> first
  token, is shown apart: `stub TTFT p50`). A loopback hop of tens of microseconds is taken as zero.
  `send late p99` shows the send-side part alone (client send stamp - server receipt, where positive).
- ITL error = each reported gap (`itl_ms[i]`, one token per chunk here) - the gap between the server's stamps of
  the same two events; its p99 is taken of the absolute value (a stamp read late lengthens one gap and shortens
  the next).

Each cell of the table is the median over runs, with [min..max] over runs. req/s: requests answered / the
window's wall time, against the ideal streams / (TTFT + 63 ITL) = streams / 1.36 s. Loop lag p99 and CPU share
are the client's own lateness summary (`OpenAIBackend.last_run_stats`, run.json `load_phase.client`); saturated:
loop lag p99 > 10% of the reported TTFT p50 (`health.client_saturation`, the rubric's default
`max_client_lag_share`), in how many runs. The `openai` client gets one warm-up request per stream first (opening
its connections, as `load.warmup` does); the lean client opens its own before the window. Both the client and
the stub share this machine's cores: at high stream counts the stub's lateness shows in `stub TTFT` and req/s.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

from releasegate.backends import Request
from releasegate.backends.openai import OpenAIBackend
from releasegate.gate.health import client_saturation
from releasegate.inputs.target import TargetConfig
from releasegate.stats.intervals import percentile

TTFT_MS, ITL_MS, TOKENS = 100.0, 20.0, 64
IDEAL_S = (TTFT_MS + (TOKENS - 1) * ITL_MS) / 1000  # one request, start to end, on a perfect client and server
MAX_LAG_SHARE = 0.1  # the rubric's default max_client_lag_share

_SERVER = r"""
import json, resource, sys, time
from releasegate.testing import StubBehaviour, StubServer

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class Stamped(StubServer):
    # when each request was read, kept unparsed: (perf_counter_ns, body)
    received = None

    async def _route(self, method, path, body, reader, writer):
        if method == "POST":
            self.received.append((time.perf_counter_ns(), body))
        return await super()._route(method, path, body, reader, writer)


ttft, itl, tokens = map(float, sys.argv[1:4])
stub = Stamped(StubBehaviour(ttft_ms=ttft, itl_ms=itl, tokens=int(tokens)))
stub.received = []
with stub:
    print(stub.port, flush=True)
    for _ in sys.stdin:  # each line asks for the receipts since the last one
        got, stub.received = stub.received, []
        print(json.dumps({json.loads(b)["messages"][0]["content"]: ns for ns, b in got}), flush=True)
"""


class _Server:
    """The stub in its own process (TTFT, ITL, tokens as given); `receipts()`: request content -> when the stub read
    it (ns)."""

    def __init__(self, ttft_ms: float = TTFT_MS, itl_ms: float = ITL_MS, tokens: int = TOKENS) -> None:
        self.delays = (ttft_ms, itl_ms, tokens)

    def __enter__(self) -> _Server:
        self.proc = subprocess.Popen([sys.executable, "-c", _SERVER, *map(str, self.delays)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        port = self.proc.stdout.readline().strip()
        if not port:
            raise RuntimeError(f"the stub server did not start (exit {self.proc.wait(10)})")
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    def receipts(self) -> dict[str, int]:
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the stub server died (exit {self.proc.poll()})")
        return json.loads(line)

    def __exit__(self, *exc) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class _Recording(OpenAIBackend):
    """The product's backend; keeps each stream's raw lines and its send stamp (where `ttft_ms` starts)."""

    def _finish(self, lines, stamps, clock, *rest):
        gen = super()._finish(lines, stamps, clock, *rest)
        gen.raw = (lines, clock.first)
        return gen


def _server_stamps(lines: list[str]) -> list[int]:
    return [json.loads(line[5:])["stub_sent_ns"] for line in lines
            if line.startswith("data:") and "stub_sent_ns" in line]


def one_run(server: _Server, client: str, streams: int, requests: int, tag: str) -> dict:
    target = TargetConfig(backend="openai", base_url=server.base_url, model="stub", concurrency=streams,
                          timeout_s=120, client=client)
    backend = _Recording(target, {})
    backend.load()
    server.receipts()  # drop the probe's and earlier runs' receipts

    def make(kind: str, i: int) -> Request:
        return Request(f"{tag}:{kind}{i}", [{"role": "user", "content": f"{tag}:{kind}{i}"}])

    warmup = [make("w", i) for i in range(streams)] if client == "openai" else []
    done = backend.run_load([make("r", i) for i in range(requests)], offsets=None, concurrency=streams,
                            max_new_tokens=TOKENS, warmup=warmup)
    received = server.receipts()
    ttft_err, send_late, stub_ttft, itl_err, ttft = [], [], [], [], []
    failed: dict[str, int] = {}
    for request, gen in done.results:
        if gen.error is not None or not hasattr(gen, "raw"):
            failed[gen.error or "unrecorded"] = failed.get(gen.error or "unrecorded", 0) + 1
            continue
        lines, sent = gen.raw
        stamps = _server_stamps(lines)
        recv = received[request.messages[0]["content"]]
        true_ttft = (stamps[0] - min(sent, recv)) / 1e6
        ttft.append(gen.timing.ttft_ms)
        ttft_err.append(gen.timing.ttft_ms - true_ttft)
        send_late.append(max(0, sent - recv) / 1e6)
        stub_ttft.append((stamps[0] - recv) / 1e6)
        gaps = [(b - a) / 1e6 for a, b in zip(stamps, stamps[1:])]
        if len(gaps) != len(gen.timing.itl_ms):
            raise RuntimeError(f"{len(gen.timing.itl_ms)} reported gaps for {len(gaps)} stamped ones")
        itl_err += [abs(r - g) for r, g in zip(gen.timing.itl_ms, gaps)]
    stats = backend.last_run_stats or {}
    lag = (stats.get("loop_lag_ms") or {}).get("p99")
    ttft_p50 = percentile(ttft, 50)
    return {
        "ok": len(ttft), "n": len(done.results), "failed": failed,
        "ttft_p50": percentile(ttft_err, 50), "ttft_p99": percentile(ttft_err, 99),
        "send_p99": percentile(send_late, 99), "itl_p99": percentile(itl_err, 99),
        "stub_ttft_p50": percentile(stub_ttft, 50),
        "rate": len(ttft) / done.seconds / (streams / IDEAL_S) if done.seconds else None,
        "lag_p99": lag, "cpu": stats.get("cpu_share"),
        "saturated": client_saturation(lag, ttft_p50, MAX_LAG_SHARE) is not None,
    }


def _num(x: float) -> str:
    return f"{x:.2f}" if abs(x) < 10 else f"{x:.1f}" if abs(x) < 100 else f"{x:.0f}"


def _cell(runs: list[dict], key: str) -> str:
    xs = [r[key] for r in runs if r[key] is not None]
    if not xs:
        return "-"
    if len(xs) == 1:
        return _num(xs[0])
    return f"{_num(statistics.median(xs))} [{_num(min(xs))}..{_num(max(xs))}]"


COLUMNS = [("client", 6), ("streams", 7), ("ok/sent", 11), ("TTFT err p50", 17), ("TTFT err p99", 17),
           ("send late p99", 17), ("ITL |err| p99", 17), ("stub TTFT p50", 17), ("req/s / ideal", 17),
           ("loop lag p99", 17), ("cpu_share", 17), ("saturated", 9)]


def _row(cells: list[str]) -> str:
    return "  ".join(f"{c:>{w}}" for c, (_, w) in zip(cells, COLUMNS))


def print_row(client: str, streams: int, runs: list[dict]) -> None:
    ok, n = sum(r["ok"] for r in runs), sum(r["n"] for r in runs)
    sat = sum(r["saturated"] for r in runs)
    cells = [client, str(streams), f"{ok}/{n}"] + [_cell(runs, k) for k in (
        "ttft_p50", "ttft_p99", "send_p99", "itl_p99", "stub_ttft_p50", "rate", "lag_p99", "cpu")]
    print(_row(cells + [f"{sat} of {len(runs)}" if sat else "no"]), flush=True)
    failed: dict[str, int] = {}
    for r in runs:
        for k, v in r["failed"].items():
            failed[k] = failed.get(k, 0) + v
    if failed:
        print(f"{'':>15}failed: " + ", ".join(f"{k} {v}" for k, v in sorted(failed.items())), flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 run, 1 and 16 streams")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--streams", type=lambda s: [int(x) for x in s.split(",")], default=None)
    parser.add_argument("--clients", type=lambda s: s.split(","), default=["lean", "openai"])
    args, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)  # bench/run.py passes its names
    runs = args.runs or (1 if args.quick else 3)
    streams_list = args.streams or ([1, 16] if args.quick else [1, 64, 256, 1024])
    floor = 8 if args.quick else 32  # requests per row at least

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # 1024 streams: a socket each, in both processes
    started = time.perf_counter()
    print(f"stub (own process): TTFT {TTFT_MS:.0f} ms, ITL {ITL_MS:.0f} ms, {TOKENS} tokens; closed loop, "
          f"{runs} run(s) per row; cells: median [min..max] over runs; errors in ms, reported - true "
          f"(see the module docstring); open files limit {hard}")
    print(_row([name for name, _ in COLUMNS]))
    with _Server() as server:
        for client in args.clients:
            for streams in streams_list:
                results = []
                for run in range(runs):
                    try:
                        results.append(one_run(server, client, streams, max(floor, 4 * streams), f"{client}{streams}.{run}"))
                    except Exception as exc:  # noqa: BLE001  # a configuration that cannot run says why, and the rest go on
                        print(_row([client, str(streams)]) + f"  run {run + 1} could not run: "
                              f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", flush=True)
                if results:
                    print_row(client, streams, results)
    print("peers (aiperf; guidellm): bench/peers.py, run apart (make bench-peers)")
    print(f"runtime {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
