"""The prefix-cache probe (`prefix_cache:`): TTFT of requests that share a long system prompt, with the server's
prefix cache warm and cold, measured in the same run on the same questions.

One request at a time, so that each one's prefill is its own and the server's cached-token counter moves for it
alone: first a request that puts the shared prompt in the server's cache (not measured), then, for each of
`requests` cases in turn, its question after the shared prompt (warm: the prompt is a prefix the server has
seen) and after the same prompt behind a fresh random tag (cold: no cache holds that prefix). Warm and cold
alternate, so a machine that slows down for a while slows both. llama.cpp reuses a slot's matching prefix
(`cache_prompt`, on by default) and vLLM its prefix cache; after every request the server's /metrics cached
prompt token counter (llama.cpp `llamacpp:prompt_tokens_cached_total`, vLLM `vllm:prefix_cache_hits_total`) is
read, so the report says how many prompt tokens each kind of request really took from the cache.
Records go to prefix_cache.jsonl (tag `cache`: warm | cold); the figures to run.json `prefix_cache`.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any, NamedTuple

from ..backends import Backend, Generation, Request
from ..record.evidence import attempt_counts
from ..record.metrics import measured
from ..record.records import CaseRecord, RunDir, RunInfo
from ..stats.intervals import percentile
from .load_runner import load_runner
from .server_scrape import Scraper, target_scraper
from .stopping import stop_if_dead

if TYPE_CHECKING:
    from ..inputs.config import Config
    from ..inputs.suites import Case

__all__ = ["run_prefix_cache", "prefix_cache_summary", "JOURNAL"]

JOURNAL = "prefix_cache.jsonl"


def run_prefix_cache(backend: Backend | None, config: Config, cases: list[Case], run: RunDir, info: RunInfo) -> None:
    """Run the probe of `config.prefix_cache` and record it (prefix_cache.jsonl, run.json `prefix_cache`)."""
    probe = config.prefix_cache
    assert probe is not None  # the stage runs only when the config has a probe (pipeline.check)
    scraper = target_scraper(config.target)
    prime = _request("prime", probe.system, cases[-1])
    requests: list[Request] = []
    for i in range(probe.requests):
        case = cases[i % len(cases)]
        requests.append(_request(f"warm-{i:04d}:{case.id}", probe.system, case))
        requests.append(_request(f"cold-{i:04d}:{case.id}", f"[{secrets.token_hex(4)}] {probe.system}", case))
    counters: list[float | None] = []
    scraper.scrape("before")
    done = load_runner(backend).run_load(requests, offsets=None, concurrency=1, max_new_tokens=config.max_new_tokens,
                            warmup=[prime], on_start=lambda: counters.append(_cached(scraper)),
                            on_done=lambda _: counters.append(_cached(scraper)))
    stop_if_dead(backend, "prefix-cache probe")
    cached = [b - a if a is not None and b is not None else None for a, b in zip(counters, counters[1:])]
    records = [_record(r, g, n) for (r, g), n in zip(done.results, cached + [None] * len(done.results))]
    run.append(records, JOURNAL)
    info.prefix_cache = prefix_cache_summary(records, system_chars=len(probe.system), metrics_error=scraper.error)
    run.write_info(info)


def prefix_cache_summary(records: list[CaseRecord], *, system_chars: int, metrics_error: str | None = None) -> dict[str, Any]:
    """Warm and cold TTFT (P50, P95, n), prompt tokens and server-reported cached prompt tokens per request, and
    how much the cache saved at the median."""
    warm, cold = _side(records, "warm"), _side(records, "cold")
    fast, slow = warm.ttft_ms_p50, cold.ttft_ms_p50
    return {"pairs": sum(r.tags.get("cache") == "warm" for r in records), "system_chars": system_chars,
            "warm": warm._asdict(), "cold": cold._asdict(),
            "saved_ms_p50": slow - fast if fast is not None and slow is not None else None,
            "cold_over_warm_p50": slow / fast if fast and slow is not None else None,
            "cached_tokens": "server /metrics" if warm.cached_tokens_mean is not None
            else f"not reported by the server{f' ({metrics_error})' if metrics_error else ''}"}


class Side(NamedTuple):
    """The warm or the cold requests' figures, as run.json's `prefix_cache` holds them."""

    n: int
    failed: int
    ttft_ms_p50: float | None
    ttft_ms_p95: float | None
    prompt_tokens_mean: float | None
    cached_tokens_mean: float | None


def _side(records: list[CaseRecord], kind: str) -> Side:
    mine = [r for r in records if r.tags.get("cache") == kind]
    ttft = [r.timing.ttft_ms for r in measured(mine) if r.timing.ttft_ms is not None]
    cached = [tokens for r in mine if (tokens := r.tags.get("cached_prompt_tokens")) is not None]
    prompt = [r.tokens.input for r in mine if r.tokens.input is not None]
    return Side(len(ttft), attempt_counts(mine)["failed"],  # every attempt, empty answers too
                percentile(ttft, 50), percentile(ttft, 95), sum(prompt) / len(prompt) if prompt else None,
                sum(cached) / len(cached) if cached else None)


def _cached(scraper: Scraper) -> float | None:
    """The server's cached prompt token counter now (a blocking read: no request is in flight)."""
    before = len(scraper.samples)
    scraper.scrape("during")
    if len(scraper.samples) == before:
        return None
    return scraper.samples[-1].get("cached_prompt_tokens")


def _request(request_id: str, system: str, case: Case) -> Request:
    """The case's question after `system`: its own system messages replaced, or the prompt behind it."""
    if case.messages:
        messages = [{"role": "system", "content": system}] + [m for m in case.messages if m.get("role") != "system"]
        return Request(request_id, messages, None)
    return Request(request_id, None, f"{system}\n\n{case.prompt}")


def _record(request: Request, gen: Generation, cached_tokens: float | None) -> CaseRecord:
    kind, _, rest = request.case_id.partition("-")
    tags: dict[str, Any] = {"phase": "prefix_cache", "cache": kind, "prompt_of": rest.split(":", 1)[-1],
                            **({} if cached_tokens is None else {"cached_prompt_tokens": cached_tokens})}
    return CaseRecord(
        case_id=request.case_id, suite="prefix_cache", tags=tags,
        input={"messages": request.messages} if request.messages is not None else {"prompt": request.prompt},
        output=gen.text, error=gen.error, error_message=gen.error_message, tokens=gen.tokens, timing=gen.timing,
    )
