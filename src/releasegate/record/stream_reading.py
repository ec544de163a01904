"""TPOT and ITL from a stream read in batches: when most gaps between a stream's content chunks are under 0.5 ms,
the stamps are the reader's, not the server's decode (a buffering proxy, a server flushing late, a late client),
and criteria on them decide nothing (docs/guarantees.md, nothing unknown passes)."""

from __future__ import annotations

__all__ = ["STREAM_TIMED", "DEFAULT_MAX_ITL_BATCHED_SHARE", "batched_stream", "stream_timed"]

STREAM_TIMED = ("tpot_ms", "itl_ms")
"""Latencies measured between a stream's chunks, which a batched read (`itl_batched_share`) squeezes together."""
DEFAULT_MAX_ITL_BATCHED_SHARE = 0.5
"""The rubric's `max_itl_batched_share` when it sets none: more than half the gaps between content chunks were
under 0.5 ms."""


def batched_stream(share: float | None, limit: float) -> str | None:
    """A one-line reason when TPOT and ITL cannot be read off the stream: more than `limit` of the gaps between
    its content chunks were under 0.5 ms (`share`, the client's itl_batched_share). None when they can, or when
    nothing says (no streaming client figures)."""
    if share is None or share <= limit:
        return None
    return (f"stream read in batches: {share:.0%} of the gaps between content chunks were under 0.5 ms (limit "
            f"{limit:.0%}), so TPOT and ITL are the reader's stamps, not the server's decode (a buffering proxy, a "
            "server flushing late or a late client)")


def stream_timed(metric: str) -> bool:
    """Whether a metric is a TPOT or ITL figure (`STREAM_TIMED`)."""
    return metric.rpartition("_p")[0] in STREAM_TIMED
