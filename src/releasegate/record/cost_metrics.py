"""Cost per token: an API price table, or self-hosted $/hour divided by measured throughput."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from .metric_value import MetricValue, measured

if TYPE_CHECKING:
    from .records import CaseRecord

__all__ = ["COUNTED_SOURCES", "cost_metric", "uncounted", "token_sources", "timing_derived_cost"]


COUNTED_SOURCES = ("usage", "tokenizer")
"""Token sources that count tokens: the server's usage report, or the model's tokenizer (`target.tokenizer`).
'chunks' (one per streamed chunk) and 'none' (a replay file) are guesses or nothing: no price is put on them."""


def cost_metric(name: str, records: list[CaseRecord], run: dict[str, Any]) -> MetricValue:
    """`cost_per_1m_output_tokens` or `cost_usd_total` for `records` under the run's cost config. Tokens that were
    not counted (no usage from the server and no `target.tokenizer`) are unknown, never 0: the cost is then
    undecided, and the note says where the counts came from."""
    cost = run.get("cost")
    done = measured(records)  # a cached response cost nothing in this run and measured no throughput
    if not cost:
        return MetricValue(None, 0, note="no cost section in the config")
    if cost["mode"] == "api":
        return _api(name, done, cost)
    return _self_hosted(name, done, cost, run)


def uncounted(done: list[CaseRecord], sides: tuple[str, ...] = ("input", "output")) -> dict[str, int]:
    """How many requests have no counted token figure, per side ('input', 'output'): a count that is missing,
    or that came from no tokenizer (`COUNTED_SOURCES`)."""
    out: dict[str, int] = {}
    for side in sides:
        missing = sum(getattr(r.tokens, side) is None or r.tokens.source not in COUNTED_SOURCES for r in done)
        if missing:
            out[side] = missing
    return out


def token_sources(done: list[CaseRecord]) -> str:
    """Where the token counts came from, e.g. 'counted by server usage 30, tokenizer 10'."""
    count = Counter(r.tokens.source for r in done)
    return "counted by " + ", ".join(f"{_SOURCE_WORDS.get(k, k)} {n}" for k, n in sorted(count.items()))


_SOURCE_WORDS = {"usage": "server usage", "tokenizer": "target.tokenizer", "chunks": "streamed chunks (a guess)"}


def _unknown_cost(done: list[CaseRecord], missing: dict[str, int]) -> MetricValue:
    sides = " and ".join(f"{n} request(s) with no {side} token count" for side, n in missing.items())
    return MetricValue(None, len(done), note=f"{sides} (neither the server's usage nor target.tokenizer counted them): "
                                             f"cost unknown, not priced at 0; {token_sources(done)}")


def _api(name: str, done: list[CaseRecord], cost: dict[str, Any]) -> MetricValue:
    missing = uncounted(done)
    if missing:
        return _unknown_cost(done, missing)
    tokens_in = sum(r.tokens.input or 0 for r in done)  # every count known: uncounted() is empty
    tokens_out = sum(r.tokens.output or 0 for r in done)
    total = (tokens_in * cost["input_usd_per_1m"] + tokens_out * cost["output_usd_per_1m"]) / 1e6
    sources = token_sources(done)
    if name == "cost_usd_total":
        return MetricValue(total, len(done), note=f"{tokens_in} input + {tokens_out} output tokens, {sources}")
    if tokens_out == 0:
        return MetricValue(None, len(done), note="no output tokens")
    # input cost is attributed to the output it bought: this is what one million answers' tokens cost
    return MetricValue(total / tokens_out * 1e6, len(done), note=f"input and output prices, per output token; {sources}")


def _self_hosted(name: str, done: list[CaseRecord], cost: dict[str, Any], run: dict[str, Any]) -> MetricValue:
    hourly = cost["hourly_usd"]
    seconds = run.get("generation_seconds")
    if name == "cost_usd_total":
        if not seconds:
            return MetricValue(None, len(done), note="no measured generation time")
        return MetricValue(hourly * seconds / 3600, len(done), note=f"{hourly} $/h x {seconds:.1f} s")
    missing = uncounted(done, ("output",))
    if missing:  # the throughput under this figure counted guessed tokens
        return _unknown_cost(done, missing)
    throughput = run.get("system_output_tokens_per_s")
    if not throughput:
        return MetricValue(None, len(done), note="no measured throughput")
    value = hourly / (throughput * 3600) * 1e6
    return MetricValue(value, len(done), note=f"{hourly} $/h / ({throughput:.1f} output tokens/s x 3600) x 1e6")


def timing_derived_cost(cost: dict[str, Any] | None) -> bool:
    """Whether cost figures depend on the run's timing (self-hosted: divided by measured time or throughput)."""
    return not cost or cost.get("mode") != "api"
