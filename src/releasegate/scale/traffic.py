"""The load phase: the same model under a declared load, recorded beside the quality cases.

Profiles: closed loop (`concurrency` requests always in flight), open loop (`rate` with Poisson, gamma or
constant arrivals, `concurrency` as the cap on requests in flight), or a replayed traffic log. Every request has
a scheduled send time; latency is kept from both the scheduled and the actual send, so client queueing shows
up as send lag instead of vanishing. Warm-up requests go first and are left out of every figure.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterable, Iterator
from dataclasses import field
from pathlib import Path
from typing import TypeVar

from ..backends import Generation, Request
from ..border.structured import json_loads
from ..data_classes import dataclass
from ..errors import InputError
from ..inputs.files import read_text
from ..inputs.load_profile import LoadConfig
from ..inputs.suites import Case
from ..record.records import CaseRecord

__all__ = ["arrival_offsets", "read_traffic", "LoadPlan", "plan_load"]

_T = TypeVar("_T")

_DEFAULT_CONCURRENCY_CAP = 256


def arrival_offsets(n: int, *, rate: float, arrival: str, burstiness: float = 1.0, seed: int = 0) -> list[float]:
    """Send times in seconds from the start: n arrivals at mean `rate` per second.

    gamma inter-arrivals with shape k and mean 1/rate: k = 1 is Poisson, k < 1 burstier, k > 1 smoother."""
    rng = random.Random(seed)
    t, out = 0.0, []
    for i in range(n):
        if arrival == "constant":
            gap = 1.0 / rate
        elif arrival == "gamma":
            gap = rng.gammavariate(burstiness, 1.0 / (rate * burstiness))
        else:
            gap = rng.expovariate(rate)
        out.append(0.0 if i == 0 else t + gap)
        t = out[-1]
    return out


def read_traffic(path: Path) -> list[tuple[float, Request]]:
    """A traffic log: JSONL of {"t": seconds from start, "messages": [...]} or {"t": ..., "prompt": "..."}."""
    out = []
    for number, line in enumerate(read_text(path, what="traffic log").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json_loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON: {exc.msg}", file=path, line=number) from None
        except ValueError as exc:  # nested past the border's depth, a 5000-digit number
            raise InputError(f"not valid JSON: {str(exc)[:120]}", file=path, line=number) from None
        t = row.get("t") if isinstance(row, dict) else None
        if not isinstance(t, (int, float)) or t < 0:
            raise InputError("needs 't': seconds from the start (a number >= 0)", file=path, line=number, field="t")
        messages, prompt = row.get("messages"), row.get("prompt")
        if not isinstance(messages, list) and not isinstance(prompt, str):
            raise InputError("needs 'messages' (a list) or 'prompt' (text)", file=path, line=number)
        out.append((float(t), Request(str(row.get("id", f"traffic-{number}")), messages if isinstance(messages, list) else None, prompt)))
    if not out:
        raise InputError("traffic log is empty", file=path)
    return sorted(out, key=lambda item: item[0])


@dataclass(frozen=True)
class LoadPlan:
    """Who is sent when: warm-up requests, measured requests with offsets (None: closed loop), the cap."""

    warmup: list[Request]
    requests: list[Request] | None
    """The measured requests in order; None for a closed loop bounded only by `duration_s`, whose requests are
    made one at a time as they are sent (`iter_requests`), so none exists that is never sent."""
    offsets: list[float] | None
    concurrency: int
    duration_s: float | None
    pool: list[Request] = field(default_factory=list)
    """The suite's cases, cycled as prompts by `iter_requests` when `requests` is None."""

    def iter_requests(self) -> Iterator[Request]:
        """The measured requests in order: the planned list, or made on demand for as long as it is pulled."""
        if self.requests is not None:
            yield from self.requests
            return
        for i in itertools.count():
            yield nth_request(self.pool, i, "load")

    def describe(self) -> str:
        if self.offsets is None:
            if self.requests is None:
                return f"closed loop, {self.concurrency} in flight, for {self.duration_s:g} s"
            return f"closed loop, {self.concurrency} in flight, {len(self.requests)} requests"
        span = self.offsets[-1] if self.offsets else 0
        return f"open loop, {len(self.requests or ())} requests over {span:.1f} s, at most {self.concurrency} in flight"


def plan_load(load: LoadConfig, cases: Iterable[Case]) -> LoadPlan:
    """Turn a load profile and the suite's cases into a concrete plan (cases are cycled as prompts)."""
    pool = [Request(c.id, list(c.messages) if c.messages else None, c.prompt) for c in cases]
    warmup = [nth_request(pool, i, "warmup") for i in range(load.warmup)]
    if load.replay is not None:
        traffic = read_traffic(load.replay)
        if load.duration_s:
            traffic = [(t, r) for t, r in traffic if t <= load.duration_s]
        if load.requests:
            traffic = traffic[: load.requests]
        return LoadPlan(warmup, [r for _, r in traffic], [t for t, _ in traffic],
                        load.concurrency or _DEFAULT_CONCURRENCY_CAP, None)
    if load.rate is not None:
        # parse_load refuses an open loop with neither requests nor duration_s
        n = load.requests or max(1, int(load.rate * _given(load.duration_s)))
        offsets = arrival_offsets(n, rate=load.rate, arrival=load.arrival, burstiness=load.burstiness, seed=load.seed)
        if load.duration_s:
            offsets = [o for o in offsets if o <= load.duration_s]
        requests = [nth_request(pool, i, "load") for i in range(len(offsets))]
        return LoadPlan(warmup, requests, offsets, load.concurrency or _DEFAULT_CONCURRENCY_CAP, None)
    concurrency = _given(load.concurrency)  # the closed loop is the `concurrency` shape of a load profile
    if not load.requests:  # bounded by duration_s only: requests are made as they are sent
        return LoadPlan(warmup, None, None, concurrency, load.duration_s, pool)
    requests = [nth_request(pool, i, "load") for i in range(load.requests)]
    return LoadPlan(warmup, requests, None, concurrency, load.duration_s)


def _given(value: _T | None) -> _T:
    """A setting the load profile's validation guarantees is set for this shape of load."""
    assert value is not None
    return value


def nth_request(pool: list[Request], i: int, prefix: str) -> Request:
    """Request `i` of a load: the pool's cases in turn, each id made unique by `prefix` and `i`."""
    base = pool[i % len(pool)]
    return Request(f"{prefix}-{i:05d}:{base.case_id}", base.messages, base.prompt)


def load_record(request: Request, gen: Generation, tags: dict[str, object] | None = None) -> CaseRecord:
    base_id = request.case_id.split(":", 1)[1] if ":" in request.case_id else request.case_id
    return CaseRecord(
        case_id=request.case_id, suite="load", tags={"phase": "load", "prompt_of": base_id, **(tags or {})},
        input={"messages": request.messages} if request.messages is not None else {"prompt": request.prompt},
        output=gen.text, error=gen.error, error_message=gen.error_message, tokens=gen.tokens, timing=gen.timing,
    )
