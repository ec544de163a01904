"""releasegate's clients side by side with the load generators people compare it with, against one stub: how
exact are the TTFT and ITL each reports, how close to the ideal rate does each drive the stub, and how much CPU
does it burn doing so. Optional: `make bench` skips it; run `make bench-peers` or `python bench/peers.py`.

The peers install into their own virtual environments under build/peers/ (`python3 -m venv` and pip, versions
pinned in bench/peers-*.txt, installed with `--no-deps` so that nothing else comes in), never into .venv:

- aiperf 0.13.0 (bench/peers-aiperf.txt): its whole dependency tree, pinned; no torch (its `nvidia-ml-py` is the
  pure-Python NVML binding, no CUDA).
- guidellm 0.8.1: torch first, pinned to `torch==2.13.0` (the CPU wheel on this machine's disk; a bare `torch`
  pulls a multi-GB CUDA build), then guidellm with its dependencies under a constraint that keeps torch there
  (its only data loader is torch's, `torch.utils.data`); the install is refused if any other torch came in.

Against the stub of bench/latency_accuracy.py (its own process; TTFT 100 ms, ITL 20 ms, 64 tokens; every content
event stamped `stub_sent_ns` on `time.perf_counter_ns()`, the system-wide monotonic clock; the moment each
request was read kept apart), at 1, 64 and 256 streams, closed loop, each run interleaved over the clients
(run 1 of every client at every stream count, then run 2...), 3 runs:

- `lean/asyncio`, `lean/uvloop`: releasegate's lean client (`OpenAIBackend.run_load`, as `check` runs it) with
  RELEASEGATE_EVENT_LOOP=asyncio or uvloop;
- `openai`: releasegate's backend on the `openai` package's client (one warm-up request per stream first);
- `aiperf`: `aiperf profile` (chat endpoint, streaming, concurrency N, server token counts, the demo model's
  tokenizer from models/demo/base, `--export-level raw`): its per-request TTFT and inter-chunk latencies from
  profile_export.jsonl, matched by request id to its raw records, which keep each SSE event's own data (so the
  stub's stamps) and aiperf's receipt and send stamps on the same clock;
- `guidellm`: `guidellm run` (openai_http backend, chat, streaming; concurrent profile at N streams; max_requests;
  its prompts TAG:rI from a JSON file; JSON export with every request kept): its per-request TTFT and ITL, matched
  by prompt to the stub's receipts. It keeps no SSE events, so the stub records each request's content stamps
  itself; guidellm stamps on `time.time()`, put on the stub's clock by the offset between the two read around
  each run. Its ITL is one mean per request ((last token - first token) / (tokens - 1)), checked against the
  stub's mean gap for that request: its ITL columns are not per gap.

The stub's chunks here carry OpenAI's `"object": "chat.completion.chunk"`, as every OpenAI-compatible server
sends (aiperf drops a chunk without it); nothing else about the stub changes.

Errors are reported minus true, in ms, as in bench/latency_accuracy.py: TTFT against the stub's first content
stamp minus the request's send (the client's own send stamp, or the stub's receipt where that was earlier); ITL
per gap, |reported - the stub's gap|. req/s: requests answered / (the last answered request's last stamp - the
first receipt), as a share of the ideal streams / 1.36 s. CPU s per 1,000 requests: the client's CPU time over
the same window (releasegate: its process's `getrusage` from the window's start to its end; aiperf: every
process of its tree, sampled from /proc every 50 ms and interpolated to the window), per 1,000 answered requests.
load 1m: the machine's 1-minute load average at the end of each run (`os.getloadavg()`): the cores are shared,
with the stub and with whatever else the machine runs.

Pinning (`--pin split`, the default): the stub runs on the first core this process may use, every client on the
others (this process pins itself there before anything runs, and aiperf's and guidellm's processes inherit it),
so no tool shares a core with the stub and every tool has the same cores; the thread that samples a peer's CPU
time from /proc runs on the stub's core. `--pin none`: everything shares every core, as before. Other work on
the machine is not kept off either set.

The end: each client's TTFT error p50 and p99 (median over runs) at each stream count, with the best peer's
figure over it (how many times smaller the client's error is), and the goal: the lean client as `check` runs it
(`lean/uvloop`) at most a tenth of the best peer's TTFT error p99 at 64 streams; missed, the bench exits 1.

Request counts: `--per-stream` requests per stream (default 2) and at least `--floor` (default 8) per run; the
closed loop's first and last round are ramps, so req/s reads a little under 1.0 on a perfect client.
`--quick`: 1 run at 1 and 16 streams. `--clients lean/asyncio,aiperf`, `--streams 1,64`, `--runs N`: as given.
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import latency_accuracy as la  # noqa: E402  # the stub's settings, the recording backend, the cell format

from releasegate.backends import Request  # noqa: E402
from releasegate.inputs.target import TargetConfig  # noqa: E402
from releasegate.stats.intervals import percentile  # noqa: E402

PEERS_DIR = ROOT / "build" / "peers"
PEERS = {"aiperf": ("aiperf", "0.13.0"), "guidellm": ("guidellm", "0.8.1")}
SKIPPED: dict[str, str] = {}
TORCH = "torch==2.13.0"  # the CPU wheel on this machine's disk; a bare torch pulls a multi-GB CUDA build
CLIENTS = ["lean/asyncio", "lean/uvloop", "openai", "aiperf", "guidellm"]
LEAN = "lean/uvloop"  # the lean client as `check` runs it (uvloop's loop where it is installed): the goal's client
GOAL_STREAMS, GOAL_RATIO = 64, 10.0  # its TTFT error p99 at 64 streams: at most a tenth of the best peer's
STUB_CPUS: set[int] = set()  # the stub's cores, where the run is pinned (`pin`); empty: unpinned
TOKENIZER = ROOT / "models" / "demo" / "base"

_SERVER = r"""
import json, resource, sys, time
import releasegate.testing.stub_server as stub_server
from releasegate.testing import StubBehaviour, StubServer

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

_event = stub_server._event


async def event(writer, payload):
    # OpenAI's chunk type, as every OpenAI-compatible server sends it (aiperf drops chunks without it)
    if "stub_sent_ns" in payload and writer in stub.current:  # the stamps each request was sent, kept here too
        stub.current[writer].append(payload["stub_sent_ns"])
    await _event(writer, {"object": "chat.completion.chunk", **payload})


stub_server._event = event


class Stamped(StubServer):
    received = None  # (perf_counter_ns when the request had been read, its body, the stamps of its content events)
    current = None  # writer -> the stamps list of the request it is answering

    async def _route(self, method, path, body, reader, writer):
        if method == "POST":
            self.received.append((time.perf_counter_ns(), body, stamps := []))
            self.current[writer] = stamps
        return await super()._route(method, path, body, reader, writer)


def text(content):
    # a string, or OpenAI's content parts (guidellm sends [{"type": "text", "text": ...}])
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


ttft, itl, tokens = map(float, sys.argv[1:4])
stub = Stamped(StubBehaviour(ttft_ms=ttft, itl_ms=itl, tokens=int(tokens)))
stub.received, stub.current = [], {}
with stub:
    print(stub.port, flush=True)
    for _ in sys.stdin:  # each line asks for the receipts since the last one: [[content, ns, stamps], ...]
        got, stub.received = stub.received, []
        print(json.dumps([[text(json.loads(b)["messages"][0]["content"]), ns, st] for ns, b, st in got]), flush=True)
"""


class _Server(la._Server):
    """The stub in its own process; `receipts()`: request content -> the moments the stub read one (ns, sorted):
    aiperf's synthetic prompts can repeat."""

    def __enter__(self) -> _Server:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
        cpus = STUB_CPUS  # read now: the child sets its own affinity before it runs anything
        self.proc = subprocess.Popen([sys.executable, "-c", _SERVER, str(la.TTFT_MS), str(la.ITL_MS), str(la.TOKENS)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                                     preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
        port = self.proc.stdout.readline().strip()
        if not port:
            raise RuntimeError(f"the stub server did not start (exit {self.proc.wait(10)})")
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self.root_url = f"http://127.0.0.1:{port}"
        return self

    def receipts(self) -> dict[str, list[int]]:
        got: dict[str, list[int]] = {}
        self.sent = {}  # (content, receipt ns) -> the stub's stamps of that request's content events
        for content, ns, stamps in super().receipts():
            got.setdefault(content, []).append(ns)
            self.sent[(content, ns)] = stamps
        return {k: sorted(v) for k, v in got.items()}


def _receipt(received: dict[str, list[int]], content: str, sent: int) -> int | None:
    """The stub's receipt of this content nearest to the client's send stamp."""
    times = received.get(content)
    if not times:
        return None
    i = bisect.bisect_left(times, sent)
    return min(times[max(0, i - 1):i + 1], key=lambda t: abs(t - sent))


class _Sample:
    """One request as measured: the client's send stamp, reported TTFT and gaps; the stub's receipt and stamps."""

    def __init__(self, sent: int, recv: int | None, stamps: list[int], ttft_ms: float, itl_ms: list[float],
                 mean_itl: bool = False):
        self.sent, self.recv, self.stamps, self.ttft_ms, self.itl_ms = sent, recv, stamps, ttft_ms, itl_ms
        self.mean_itl = mean_itl  # itl_ms is one figure, the request's mean gap (guidellm reports no other)


def _figures(samples: list[_Sample], failed: dict[str, int], n: int, streams: int, cpu_s: float | None,
             first_recv: int | None) -> dict:
    ttft_err, itl_err = [], []
    for s in samples:
        start = min(s.sent, s.recv) if s.recv is not None else s.sent
        ttft_err.append(s.ttft_ms - (s.stamps[0] - start) / 1e6)
        gaps = [(b - a) / 1e6 for a, b in zip(s.stamps, s.stamps[1:])]
        if s.mean_itl:
            gaps = [sum(gaps) / len(gaps)] if gaps else []
        if len(gaps) != len(s.itl_ms):
            failed[f"{len(s.itl_ms)} gaps reported for {len(gaps)}"] = failed.get(f"{len(s.itl_ms)} gaps reported for {len(gaps)}", 0) + 1
            continue
        itl_err += [abs(r - g) for r, g in zip(s.itl_ms, gaps)]
    rate = None
    if samples and first_recv is not None:
        window_s = (max(s.stamps[-1] for s in samples) - first_recv) / 1e9
        rate = len(samples) / window_s / (streams / la.IDEAL_S) if window_s > 0 else None
    return {
        "ok": len(samples), "n": n, "failed": failed,
        "ttft_p50": percentile(ttft_err, 50), "ttft_p99": percentile(ttft_err, 99),
        "itl_p50": percentile(itl_err, 50), "itl_p99": percentile(itl_err, 99),
        "rate": rate, "cpu": cpu_s / len(samples) * 1000 if samples and cpu_s is not None else None,
        "load": os.getloadavg()[0],
    }


def run_releasegate(server: _Server, client: str, streams: int, requests: int, tag: str) -> dict:
    kind, _, loop = client.partition("/")
    os.environ["RELEASEGATE_EVENT_LOOP"] = loop or "auto"  # read when the backend is made
    target = TargetConfig(backend="openai", base_url=server.base_url, model="stub", concurrency=streams,
                          timeout_s=120, client=kind)
    backend = la._Recording(target, {})
    backend.load()
    server.receipts()  # drop the probe's and earlier runs' receipts

    def make(k: str, i: int) -> Request:
        return Request(f"{tag}:{k}{i}", [{"role": "user", "content": f"{tag}:{k}{i}"}])

    cpu_at: list[float] = []

    def cpu() -> None:
        r = resource.getrusage(resource.RUSAGE_SELF)
        cpu_at.append(r.ru_utime + r.ru_stime)

    warmup = [make("w", i) for i in range(streams)] if kind == "openai" else []
    done = backend.run_load([make("r", i) for i in range(requests)], offsets=None, concurrency=streams,
                            max_new_tokens=la.TOKENS, warmup=warmup, on_start=cpu)
    cpu()
    received = server.receipts()
    measured = {k: v for k, v in received.items() if ":r" in k}
    samples, failed = [], {}
    for request, gen in done.results:
        if gen.error is not None or not hasattr(gen, "raw"):
            failed[gen.error or "unrecorded"] = failed.get(gen.error or "unrecorded", 0) + 1
            continue
        lines, sent = gen.raw
        content = request.messages[0]["content"]
        samples.append(_Sample(sent, _receipt(received, content, sent), la._server_stamps(lines),
                               gen.timing.ttft_ms, list(gen.timing.itl_ms)))
    first = min((t[0] for t in measured.values()), default=None)
    return _figures(samples, failed, len(done.results), streams, cpu_at[-1] - cpu_at[0], first)


def peer_python(name: str) -> Path:
    return PEERS_DIR / name / "bin" / "python"


def install_peer(name: str) -> str | None:
    """Installs a peer into build/peers/NAME (once; a stamp file records what it came from); None when it is
    ready, else one line saying why it is not. aiperf: its pins, `--no-deps`, and no torch may come in. guidellm:
    torch pinned first (TORCH, the CPU wheel), then guidellm with a constraint that keeps torch at that pin."""
    if name in SKIPPED:
        return SKIPPED[name]
    package, version = PEERS[name]
    venv = PEERS_DIR / name
    py = str(venv / "bin" / "python")
    stamp = venv / ".installed"
    if name == "guidellm":
        recipe = f"{TORCH}\n{package}=={version} -c {TORCH}\n"
        constraint = venv / "constraint-torch.txt"
        steps = [[py, "-m", "pip", "install", "-q", TORCH],
                 [py, "-m", "pip", "install", "-q", "-c", str(constraint), f"{package}=={version}"]]
        how = f"{TORCH} first, then {package}=={version} constrained to it"
    else:
        pins = HERE / f"peers-{name}.txt"
        recipe = pins.read_text()
        steps = [[py, "-m", "pip", "install", "-q", "--no-deps", "-r", str(pins)]]
        how = "pinned, --no-deps"
    if stamp.exists() and stamp.read_text() == recipe:
        return None
    print(f"{name}: installing {package}=={version} into {venv.relative_to(ROOT)} ({how})", flush=True)
    shutil.rmtree(venv, ignore_errors=True)
    made = subprocess.run([sys.executable if shutil.which("python3") is None else "python3", "-m", "venv", str(venv)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        return f"{name}: could not make {venv.relative_to(ROOT)}: exit {made.returncode}"
    if name == "guidellm":
        constraint.write_text(TORCH + "\n")
    for step in steps:
        got = subprocess.run(step, capture_output=True, text=True)
        if got.returncode != 0:
            tail = [ln for ln in (got.stderr or got.stdout).splitlines() if ln.strip() and not ln.startswith("WARNING: Location")]
            return f"{name}: install failed ({' '.join(step[3:6])}...): {tail[-1] if tail else f'exit {got.returncode}'}"
    torch = subprocess.run([py, "-c", "import importlib.util as u, importlib.metadata as m\n"
                            "print(m.version('torch') if u.find_spec('torch') else None)"],
                           capture_output=True, text=True).stdout.strip()
    if name == "guidellm" and torch != TORCH.split("==")[1] + "+cpu":
        return f"{name}: torch {torch} came in, not {TORCH}+cpu; refusing to run it"
    if name != "guidellm" and torch != "None":
        return f"{name}: torch came in with the install; refusing to run it"
    stamp.write_text(recipe)
    return None


class _TreeCPU:
    """CPU seconds of a process and all its descendants over time: /proc sampled every `every_s` in a thread,
    (perf_counter_ns, the tree's utime + stime) per sample; a process that has exited keeps its last figure."""

    TICK = os.sysconf("SC_CLK_TCK")

    def __init__(self, pid: int, every_s: float = 0.05) -> None:
        self.pid, self.every_s = pid, every_s
        self.samples: list[tuple[int, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._seen: dict[int, float] = {}  # pid -> its last CPU, kept when it exits unreaped by a live parent

    def __enter__(self) -> _TreeCPU:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)

    def _stats(self) -> dict[int, tuple[int, float]]:
        got = {}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            got[int(entry.name)] = (int(fields[1]), sum(int(x) for x in fields[11:13]) / self.TICK)
        return got

    def _run(self) -> None:
        if STUB_CPUS:  # pinned: this thread reads all of /proc every 50 ms; on the peer's own core it would delay it
            os.sched_setaffinity(0, STUB_CPUS)  # 0: this thread alone
        while not self._stop.is_set():
            stats = self._stats()
            tree, grew = {self.pid}, True
            while grew:
                grew = False
                for pid, (ppid, _) in stats.items():
                    if ppid in tree and pid not in tree:
                        tree.add(pid)
                        grew = True
            for pid in tree:
                if pid in stats:
                    self._seen[pid] = stats[pid][1]
            self.samples.append((time.perf_counter_ns(), sum(self._seen.values())))
            self._stop.wait(self.every_s)

    def between(self, a: int, b: int) -> float | None:
        """CPU seconds from perf_counter_ns a to b, interpolated between samples."""
        if len(self.samples) < 2:
            return None
        ts = [t for t, _ in self.samples]

        def at(t: int) -> float:
            i = min(max(bisect.bisect_left(ts, t), 1), len(ts) - 1)
            (t0, c0), (t1, c1) = self.samples[i - 1], self.samples[i]
            return c0 + (c1 - c0) * min(max((t - t0) / (t1 - t0), 0.0), 1.0) if t1 > t0 else c1

        return at(b) - at(a)


def run_aiperf(server: _Server, streams: int, requests: int, tag: str) -> dict:
    server.receipts()
    out = Path(tempfile.mkdtemp(prefix=f"peers-aiperf-{tag}-"))
    cmd = [str(PEERS_DIR / "aiperf" / "bin" / "aiperf"), "profile", "-m", "stub", "--url", server.root_url,
           "--endpoint-type", "chat", "--streaming", "--tokenizer", str(TOKENIZER), "--use-server-token-count",
           "--concurrency", str(streams), "--request-count", str(requests), "--num-dataset-entries", str(requests),
           "--synthetic-input-tokens-mean", "16", "--synthetic-input-tokens-stddev", "0",
           "--output-tokens-mean", str(la.TOKENS), "--ui", "none", "--no-gpu-telemetry", "--no-auto-plot",
           "--artifact-dir", str(out), "--export-level", "raw", "--random-seed", "1"]
    # a local tokenizer path loads only with the hub on: offline, aiperf asks the hub cache for it by repo id
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "PYTHONPATH")}
    try:
        with open(out / "stdout.log", "w") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=out)
            with _TreeCPU(proc.pid) as tree:
                rc = proc.wait(600)
        if rc != 0:
            lines = [ln for ln in (out / "stdout.log").read_text().splitlines() if "ERROR" in ln]
            raise RuntimeError(f"aiperf exited {rc}: {lines[-1][:200] if lines else 'see ' + str(out)}")
        received = server.receipts()
        metrics = {}
        for line in (out / "profile_export.jsonl").read_text().splitlines():
            rec = json.loads(line)
            metrics[rec["metadata"]["x_request_id"]] = rec
        samples, failed, n = [], {}, 0
        raw_files = [out / "profile_export_raw.jsonl"] if (out / "profile_export_raw.jsonl").exists() else \
            sorted((out / "raw_records").glob("*.jsonl"))
        for raw_file in raw_files:
            for line in raw_file.read_text().splitlines():
                raw = json.loads(line)
                if raw["metadata"].get("benchmark_phase") != "profiling":
                    continue
                n += 1
                rec = metrics.get(raw["metadata"]["x_request_id"])
                if raw.get("error") or rec is None or rec.get("error"):
                    why = (raw.get("error") or (rec or {}).get("error") or {}).get("type", "unrecorded")
                    failed[why] = failed.get(why, 0) + 1
                    continue
                stamps = [json.loads(p["value"])["stub_sent_ns"] for r in raw["responses"] for p in r["packets"]
                          if p.get("name") == "data" and "stub_sent_ns" in p.get("value", "")]
                m = rec["metrics"]
                itl = m.get("inter_chunk_latency", {}).get("value")
                sent = raw["start_perf_ns"]
                content = raw["payload"]["messages"][0]["content"]
                samples.append(_Sample(sent, _receipt(received, content, sent), stamps,
                                       _ms(m["time_to_first_token"]), [_ms({"value": v, "unit": m["inter_chunk_latency"]["unit"]}) for v in itl or []]))
        first = min((t for v in received.values() for t in v), default=None)
        cpu = tree.between(first, max(s.stamps[-1] for s in samples)) if samples and first is not None else None
        return _figures(samples, failed, n, streams, cpu, first)
    finally:
        if not os.environ.get("PEERS_KEEP"):
            shutil.rmtree(out, ignore_errors=True)


def run_guidellm(server: _Server, streams: int, requests: int, tag: str) -> dict:
    """`guidellm run`: openai_http backend (chat, streaming), concurrent profile at `streams`, `requests` prompts
    of its own (TAG:rI) from a JSON file, every request's data kept (sample_size unset) in its JSON export. Its
    TTFT and ITL are its own per-request figures; its ITL is one mean per request ((last token - first token) /
    (tokens - 1)), so it is checked against the stub's mean gap for that request, not gap by gap. Its stamps are
    time.time(); they are put on perf_counter_ns by the offset between the two clocks read around the run."""
    server.receipts()
    out = Path(tempfile.mkdtemp(prefix=f"peers-guidellm-{tag}-"))
    (out / "data.json").write_text(json.dumps([{"prompt": f"{tag}:r{i}", "output_tokens_count": la.TOKENS}
                                               for i in range(requests)]))
    cmd = [str(PEERS_DIR / "guidellm" / "bin" / "guidellm"), "run",
           "--backend", f"kind=openai_http,target={server.root_url},model=stub,max_tokens={la.TOKENS}",
           "--profile", f"kind=concurrent,streams={streams}",
           "--constraint", f"kind=max_requests,count={requests}",
           "--data", f"kind=json_file,path={out / 'data.json'}",
           "--output", f"kind=json,path={out / 'benchmarks.json'}", "--disable-console"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def offset() -> int:  # time.time_ns() - perf_counter_ns(), the read of time.time() taken mid-way
        a = time.perf_counter_ns()
        w = time.time_ns()
        b = time.perf_counter_ns()
        return w - (a + b) // 2

    try:
        before = offset()
        with open(out / "stdout.log", "w") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=out)
            with _TreeCPU(proc.pid) as tree:
                rc = proc.wait(600)
        after = offset()
        if rc != 0:
            lines = [ln for ln in (out / "stdout.log").read_text().splitlines() if ln.strip()]
            raise RuntimeError(f"guidellm exited {rc}: {lines[-1][:200] if lines else 'see ' + str(out)}")
        shift = (before + after) // 2
        if abs(after - before) > 1_000_000:
            print(f"guidellm {tag}: the wall clock moved {abs(after - before) / 1e6:.1f} ms against the monotonic "
                  f"one during the run", flush=True)
        received = server.receipts()
        bench = json.loads((out / "benchmarks.json").read_text())["benchmarks"][0]["requests"]
        samples, failed, n = [], {}, 0
        for status in ("successful", "errored", "incomplete"):
            for rec in bench.get(status) or []:
                n += 1
                if status != "successful":
                    why = f"{status}: {(rec['info'].get('error') or '').splitlines()[0][:80] if rec['info'].get('error') else ''}"
                    failed[why] = failed.get(why, 0) + 1
                    continue
                body = json.loads(rec["request_args"])["body"]
                content = body["messages"][0]["content"]
                content = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
                sent = round(rec["info"]["timings"]["request_start"] * 1e9) - shift
                samples.append((rec, content, sent, _receipt(received, content, sent)))
        # guidellm keeps no SSE events: the stub's stamps come from the stub's own record of what it sent
        sent_stamps = server.sent
        out_samples = []
        for rec, content, sent, recv in samples:
            stamps = sent_stamps.get((content, recv))
            if not stamps or rec.get("time_to_first_token_ms") is None:
                failed["no stub stamps"] = failed.get("no stub stamps", 0) + 1
                continue
            itl = rec.get("inter_token_latency_ms")
            out_samples.append(_Sample(sent, recv, stamps, rec["time_to_first_token_ms"],
                                       [itl] if itl is not None else [], mean_itl=True))
        first = min((t for v in received.values() for t in v), default=None)
        cpu = tree.between(first, max(s.stamps[-1] for s in out_samples)) if out_samples and first is not None else None
        return _figures(out_samples, failed, n, streams, cpu, first)
    finally:
        if not os.environ.get("PEERS_KEEP"):
            shutil.rmtree(out, ignore_errors=True)


def _ms(metric: dict) -> float:
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3, "sec": 1e3}[metric.get("unit", "ms")]
    return metric["value"] * scale


COLUMNS = [("client", 12), ("streams", 7), ("ok/sent", 9), ("TTFT err p50", 17), ("TTFT err p99", 17),
           ("ITL |err| p50", 17), ("ITL |err| p99", 17), ("req/s / ideal", 17), ("CPU s / 1k req", 17),
           ("load 1m", 17)]


def _row(cells: list[str]) -> str:
    return "  ".join(f"{c:>{w}}" for c, (_, w) in zip(cells, COLUMNS))


def print_row(client: str, streams: int, runs: list[dict]) -> None:
    ok, n = sum(r["ok"] for r in runs), sum(r["n"] for r in runs)
    cells = [client, str(streams), f"{ok}/{n}"] + [la._cell(runs, k) for k in (
        "ttft_p50", "ttft_p99", "itl_p50", "itl_p99", "rate", "cpu", "load")]
    print(_row(cells), flush=True)
    failed: dict[str, int] = {}
    for r in runs:
        for k, v in r["failed"].items():
            failed[k] = failed.get(k, 0) + v
    if failed:
        print(f"{'':>14}failed: " + ", ".join(f"{k} {v}" for k, v in sorted(failed.items())), flush=True)


def pin(how: str) -> str:
    """Pins the stub and the clients apart (`--pin split`, the default): the stub gets the first core this process
    may run on, and this process the others, which every client inherits (the lean and openai clients run in this
    process; aiperf's and guidellm's processes are its children), so every tool is pinned the same way and none
    shares a core with the stub. Other work on the machine is not kept off these cores. Returns how it pinned."""
    cpus = sorted(os.sched_getaffinity(0))
    if how == "none" or len(cpus) < 2:
        return f"unpinned ({len(cpus)} cores, shared by the stub and the client)"
    STUB_CPUS.update(cpus[:1])
    os.sched_setaffinity(0, cpus[1:])
    return f"pinned: the stub on core {cpus[0]}, each client on core(s) {','.join(map(str, cpus[1:]))}"


def _median(runs: list[dict], key: str) -> float | None:
    xs = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(xs) if xs else None


def _ratio(best: float | None, own: float | None) -> str:
    """How many times smaller `own` is than the best peer's; '-' where either is missing or not above zero."""
    return f"{best / own:.1f}x" if best is not None and own is not None and best > 0 and own > 0 else "-"


def ttft_ratios(results: dict[tuple[str, int], list[dict]], clients: list[str], streams_list: list[int]) -> bool | None:
    """Prints each client's TTFT error p50 and p99 (median over runs) per stream count with how many times
    smaller it is than the best peer's (the peer with the smaller figure, per stream count and percentile), then
    the goal: `LEAN`'s p99 at GOAL_STREAMS at most 1/GOAL_RATIO of the best peer's. Returns whether it was met
    (None: not measured: a client or the stream count missing)."""
    peers = [c for c in clients if c in PEERS]
    print(f"\nTTFT error (ms, median over runs) and the best peer's figure / the client's (the peer with the smaller "
          f"figure at that stream count: {', '.join(peers) or 'none ran'})")
    print("  ".join(f"{h:>{w}}" for h, w in [("client", 12), ("streams", 7), ("p50", 8), ("vs best", 8), ("p99", 8),
                                               ("vs best", 8)]))
    best: dict[tuple[int, str], float] = {}
    for streams in streams_list:
        for key in ("ttft_p50", "ttft_p99"):
            got = [v for c in peers if (v := _median(results.get((c, streams), []), key)) is not None and v > 0]
            if got:
                best[(streams, key)] = min(got)
    for client in clients:
        for streams in streams_list:
            runs = results.get((client, streams))
            if not runs:
                continue
            p50, p99 = _median(runs, "ttft_p50"), _median(runs, "ttft_p99")
            cells = [client, str(streams), la._num(p50) if p50 is not None else "-", _ratio(best.get((streams, "ttft_p50")), p50),
                     la._num(p99) if p99 is not None else "-", _ratio(best.get((streams, "ttft_p99")), p99)]
            print("  ".join(f"{c:>{w}}" for c, w in zip(cells, (12, 7, 8, 8, 8, 8))))
    own, peer = _median(results.get((LEAN, GOAL_STREAMS), []), "ttft_p99"), best.get((GOAL_STREAMS, "ttft_p99"))
    if own is None or peer is None:
        print(f"goal ({LEAN}: TTFT error p99 at {GOAL_STREAMS} streams at most 1/{GOAL_RATIO:g} of the best peer's): "
              f"not measured in this run")
        return None
    met = own <= peer / GOAL_RATIO
    print(f"goal ({LEAN}: TTFT error p99 at {GOAL_STREAMS} streams at most 1/{GOAL_RATIO:g} of the best peer's): "
          f"{'met' if met else 'MISSED'}: {la._num(own)} ms against {la._num(peer)} ms, {_ratio(peer, own)}")
    return met


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 run, 1 and 16 streams")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--streams", type=lambda s: [int(x) for x in s.split(",")], default=None)
    parser.add_argument("--clients", type=lambda s: s.split(","), default=CLIENTS)
    parser.add_argument("--per-stream", type=int, default=2)
    parser.add_argument("--floor", type=int, default=8)
    parser.add_argument("--pin", choices=("split", "none"), default="split",
                        help="split (default): the stub on one core, every client on the others; none: unpinned")
    args, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    runs = args.runs or (1 if args.quick else 3)
    streams_list = args.streams or ([1, 16] if args.quick else [1, 64, 256])

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    started = time.perf_counter()
    pinned = pin(args.pin)
    clients = []
    for client in args.clients:
        if client in PEERS or client in SKIPPED:
            why = install_peer(client)
            if why is not None:
                print(why, flush=True)
                continue
        clients.append(client)
    print(f"stub (own process): TTFT {la.TTFT_MS:.0f} ms, ITL {la.ITL_MS:.0f} ms, {la.TOKENS} tokens; closed loop, "
          f"{args.per_stream} requests per stream (at least {args.floor}); {runs} interleaved run(s); cells: median "
          f"[min..max] over runs; errors in ms, reported - true; load average at start {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} cores; {pinned}", flush=True)
    results: dict[tuple[str, int], list[dict]] = {}
    with _Server() as server:
        for run in range(runs):
            for streams in streams_list:
                for client in clients:
                    tag = f"{client.replace('/', '-')}{streams}.{run}"
                    requests = max(args.floor, args.per_stream * streams)
                    try:
                        got = (run_aiperf(server, streams, requests, tag) if client == "aiperf"
                               else run_guidellm(server, streams, requests, tag) if client == "guidellm"
                               else run_releasegate(server, client, streams, requests, tag))
                        results.setdefault((client, streams), []).append(got)
                    except Exception as exc:  # noqa: BLE001  # a client that cannot run says why, the rest go on
                        print(f"{client} at {streams} streams, run {run + 1} could not run: {type(exc).__name__}: "
                              f"{str(exc).splitlines()[0] if str(exc) else ''}", flush=True)
            print(f"run {run + 1} of {runs} done at {time.perf_counter() - started:.0f} s, load average "
                  f"{os.getloadavg()[0]:.2f}", flush=True)
    print(_row([name for name, _ in COLUMNS]))
    for client in clients:
        for streams in streams_list:
            if (client, streams) in results:
                print_row(client, streams, results[(client, streams)])
    met = ttft_ratios(results, clients, streams_list)
    print(f"load average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}; runtime "
          f"{time.perf_counter() - started:.0f} s")
    if met is False:
        sys.exit(1)


if __name__ == "__main__":
    main()
