"""The load phase from several Ray workers: one schedule, split, each share sent by its own client and event loop.

One client process holds only so many streams before its event loop runs late and every stamp with it (run.json
`load_phase.client`, the gate's saturated-client check). Here the planned requests are dealt round-robin to
`scale.workers` Ray actors (request i to worker i mod N, at its planned offset; a closed loop's concurrency
shared out), each an OpenAIBackend of its own:

1. every worker sends its share of the warm-up (own connections, own loop), then waits;
2. the driver names a start instant on the wall clock, a little ahead; each worker sleeps until it (outside any
   timed window) and starts its window with `run_load`: the lean client opens its connections, then the
   window opens, so the workers' windows open together to within their pre-connects (`start_skew_ms`);
3. the results are merged back into the plan's order as one load record. The window is first start -> last
   end; the client summary is the worst worker's (the largest loop lag, so a saturated worker cannot be
   averaged away), with every worker's own summary and send lag under `workers`.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ..backends import Backend, Generation, Request
from ..backends.openai import LoadRun, OpenAIBackend
from ..data_classes import dataclass
from ..errors import ErrorKind
from ..inputs.scale_config import ScaleConfig
from ..inputs.target import TargetConfig
from ..stats.intervals import percentile
from ._ray import Cluster, normal_priority, worker_env
from .traffic import LoadPlan, nth_request

__all__ = ["DistributedLoad", "Share", "WorkerPart"]

ClientSummary = dict[str, Any]
"""The lean client's lateness summary over a window (`LoadRun.client`), written to run.json as it is."""


@dataclass(frozen=True)
class Share:
    """One worker's part of the plan: requests w, w + N, w + 2N, ... (or the pool to make them from)."""

    worker: int
    workers: int
    concurrency: int
    max_new_tokens: int
    duration_s: float | None
    pool: list[Request] | None
    requests: list[Request] | None
    offsets: list[float] | None
    warmup: list[Request]


@dataclass(frozen=True)
class WorkerPart:
    """What one worker sent and measured: its results in its own order, its window and its client summary."""

    results: list[tuple[Request, Generation]]
    seconds: float
    client: ClientSummary | None
    started_at: float
    niceness: int | None

_START_AHEAD_S = 0.5
"""How far ahead the driver sets the common start: long enough for the call to reach every worker."""


class LoadWorker:
    """One Ray actor: an OpenAIBackend sending its share of the schedule."""

    def __init__(self, target: TargetConfig, generation: dict[str, Any], env: dict[str, str]) -> None:
        os.environ.update(env)  # the API key and header variables, read where the requests are sent

        self.niceness = normal_priority()
        self.backend = OpenAIBackend(target, generation)

    def warm_up(self, warmup: list[Request], max_new_tokens: int) -> int:
        """Check the endpoint answers from here (and load `target.tokenizer`), then send the share's warm-up."""
        self.backend.load()
        if warmup:
            self.backend.generate(warmup, max_new_tokens=max_new_tokens)
        return len(warmup)

    def run(self, share: Share, start_at: float) -> WorkerPart:
        """Sleep until `start_at` (wall clock), then run the share's window; the results and when it started."""
        delay = start_at - time.time()
        if delay > 0:
            time.sleep(delay)
        started: dict[str, float] = {}
        done = self.backend.run_load(
            _requests(share), offsets=share.offsets, concurrency=share.concurrency,
            max_new_tokens=share.max_new_tokens, duration_s=share.duration_s,
            on_start=lambda: started.setdefault("at", time.time()),
        )
        return WorkerPart(done.results, done.seconds, done.client, started.get("at", start_at),
                          getattr(self, "niceness", None))


def _requests(share: Share) -> Iterable[Request]:
    """A share's requests: its list, or (a closed loop bounded by duration) made on demand from the pool as the
    plan would make its requests w, w + N, w + 2N, ... (unique ids across workers)."""
    if share.requests is not None:
        return share.requests
    pool, w, n = share.pool or [], share.worker, share.workers
    return _made(pool, w, n)


def _made(pool: list[Request], w: int, n: int) -> Iterator[Request]:
    return (nth_request(pool, w + k * n, "load") for k in itertools.count())


class DistributedLoad:
    """`run_load` with OpenAIBackend's signature, spread over Ray workers (see the module doc)."""

    worker = LoadWorker
    """The actor class (a benchmark's subclass keeps more of each stream)."""

    def __init__(self, backend: Backend | None, scale: ScaleConfig, plan: LoadPlan) -> None:
        self.backend, self.scale, self.plan = backend, scale, plan

    def shares(self, concurrency: int, max_new_tokens: int, duration_s: float | None) -> list[Share]:
        plan, n = self.plan, self.scale.workers
        n = min(n, concurrency) if plan.offsets is None else n  # a closed loop needs a stream per worker
        out: list[Share] = []
        for w in range(n):
            streams = concurrency // n + (w < concurrency % n) if plan.offsets is None else -(-concurrency // n)
            out.append(Share(
                worker=w, workers=n, concurrency=max(1, streams), max_new_tokens=max_new_tokens,
                duration_s=duration_s, pool=plan.pool if plan.requests is None else None,
                requests=plan.requests[w::n] if plan.requests is not None else None,
                offsets=plan.offsets[w::n] if plan.offsets is not None else None,
                warmup=plan.warmup[w::n],
            ))
        return out

    def run_load(self, requests: Iterable[Request], *, offsets: Sequence[float] | None, concurrency: int,
                 max_new_tokens: int, duration_s: float | None = None, warmup: Sequence[Request] = (),
                 on_start: Callable[[], object] | None = None, on_done: Callable[[Generation], object] | None = None,
                 lead_s: float = 0.05) -> LoadRun:
        """The plan's load from every worker at once (`requests`, `offsets` and `warmup` are the plan's)."""
        cluster = Cluster(self.scale)
        ray = cluster.connect()
        try:
            cluster.check_fits()
            shares = self.shares(concurrency, max_new_tokens, duration_s)
            options = {"num_cpus": self.scale.cpus_per_worker, "num_gpus": self.scale.gpus_per_worker}
            remote = ray.remote(self.worker).options(**options)
            endpoint = _endpoint(self.backend)
            env = {**worker_env(), **_credentials(endpoint.target)}
            actors = [remote.remote(endpoint.target, endpoint.generation, env) for _ in shares]
            try:
                cluster.get([a.warm_up.remote(s.warmup, max_new_tokens) for a, s in zip(actors, shares)], "warm up")
                start_at = time.time() + _START_AHEAD_S
                refs = [a.run.remote(without_warmup(s), start_at) for a, s in zip(actors, shares)]
                time.sleep(max(0.0, start_at - time.time()))
                if on_start is not None:
                    on_start()
                parts: list[WorkerPart] = cluster.get(refs, "send its share of the load")
            finally:
                for actor in actors:
                    ray.kill(actor)
        finally:
            cluster.close()
        if on_done is not None:
            for part in parts:
                for _, gen in part.results:
                    if gen.error != ErrorKind.NOT_SENT:
                        on_done(gen)
        return merge(parts, start_at)


def _endpoint(backend: Backend | None) -> OpenAIBackend:
    """The endpoint whose target the workers send to; any other is a bug in the caller (the config's checks allow
    a spread load phase only on the openai backend)."""
    if not isinstance(backend, OpenAIBackend):
        raise TypeError(f"{type(backend).__name__} cannot spread a load phase over Ray workers")
    return backend


def without_warmup(share: Share) -> Share:
    """The share as sent: the warm-up stays behind (already sent)."""
    return dataclasses.replace(share, warmup=[])


def merge(parts: list[WorkerPart], start_at: float) -> LoadRun:
    """One load record from the workers' parts: results back in the plan's order (worker w's k-th request was the
    plan's w + kN), the window from the first start to the last end, the worst worker's client summary on top."""
    n = len(parts)
    indexed = [(w + k * n, item) for w, part in enumerate(parts) for k, item in enumerate(part.results)]
    results = [item for _, item in sorted(indexed, key=lambda pair: pair[0])]
    starts = [p.started_at for p in parts]
    seconds = max(s + p.seconds for s, p in zip(starts, parts)) - min(starts)
    workers = [_worker_summary(w, p, start_at) for w, p in enumerate(parts)]
    clients = [p.client for p in parts if p.client]
    worst = max(clients, key=_lag_p99) if clients else None
    client = dict(worst) if worst is not None else None
    if client is not None:
        client.update(window_s=seconds, workers=workers)
    return LoadRun(results, seconds, client)


def _lag_p99(summary: ClientSummary) -> float:
    """The largest measured lag wins: a worker that measured none must not hide one that ran late."""
    p99 = (summary.get("loop_lag_ms") or {}).get("p99")
    return float(p99) if p99 is not None else float("-inf")


def _worker_summary(w: int, part: WorkerPart, start_at: float) -> dict[str, Any]:
    """run.json `load_phase.client.workers[]`: one worker's requests, start skew, send lag and client summary."""
    lags = [g.timing.send_lag_ms for _, g in part.results if g.timing.send_lag_ms is not None]
    send_lag = ({"p50": percentile(lags, 50), "p99": percentile(lags, 99), "max": max(lags), "n": len(lags)}
                if lags else None)
    return {"worker": w, "requests": sum(g.error != ErrorKind.NOT_SENT for _, g in part.results),
            "start_skew_ms": (part.started_at - start_at) * 1e3, "send_lag_ms": send_lag,
            "niceness": part.niceness, "client": part.client}


def _credentials(target: TargetConfig) -> dict[str, str]:
    """The environment variables the target's requests read (API key, `{env: NAME}` headers), for the workers."""
    names = [target.api_key_env] + [s.get("env") for s in (target.headers or {}).values() if isinstance(s, dict)]
    return {name: os.environ[name] for name in names if name and name in os.environ}

