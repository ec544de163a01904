"""Cost per token: an API price table, or self-hosted $/hour divided by measured throughput."""

from __future__ import annotations

from .metrics import MetricValue, measured

__all__ = ["cost_metric"]


def cost_metric(name: str, records: list, run: dict) -> MetricValue:
    """`cost_per_1m_output_tokens` or `cost_usd_total` for `records` under the run's cost config."""
    cost = run.get("cost")
    done = measured(records)  # a cached response cost nothing in this run and measured no throughput
    if not cost:
        return MetricValue(None, 0, note="no cost section in the config")
    if cost["mode"] == "api":
        return _api(name, done, cost)
    return _self_hosted(name, done, cost, run)


def _api(name: str, done: list, cost: dict) -> MetricValue:
    tokens_in = sum(r.tokens.input or 0 for r in done)
    tokens_out = sum(r.tokens.output or 0 for r in done)
    total = (tokens_in * cost["input_usd_per_1m"] + tokens_out * cost["output_usd_per_1m"]) / 1e6
    if name == "cost_usd_total":
        return MetricValue(total, len(done), note=f"{tokens_in} input + {tokens_out} output tokens")
    if tokens_out == 0:
        return MetricValue(None, len(done), note="no output tokens")
    # input cost is attributed to the output it bought: this is what one million answers' tokens cost
    return MetricValue(total / tokens_out * 1e6, len(done), note="input and output prices, per output token")


def _self_hosted(name: str, done: list, cost: dict, run: dict) -> MetricValue:
    hourly = cost["hourly_usd"]
    seconds = run.get("generation_seconds")
    if name == "cost_usd_total":
        if not seconds:
            return MetricValue(None, len(done), note="no measured generation time")
        return MetricValue(hourly * seconds / 3600, len(done), note=f"{hourly} $/h x {seconds:.1f} s")
    throughput = run.get("system_output_tokens_per_s")
    if not throughput:
        return MetricValue(None, len(done), note="no measured throughput")
    value = hourly / (throughput * 3600) * 1e6
    return MetricValue(value, len(done), note=f"{hourly} $/h / ({throughput:.1f} output tokens/s x 3600) x 1e6")
