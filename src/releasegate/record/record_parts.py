"""The parts of a case record (`record.CaseRecord`) that say how one request went: its timing, its token counts
and, for a case of a `sample:` suite, the stratum it stands for. Kept apart so that the record module stays
readable; import them from `releasegate.record.records`."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from ..model_base import Model

__all__ = ["Timing", "Tokens", "Stratum", "DEFAULT_MIN_PAIR_SHARE"]

_InFlight = Annotated[int, Field(strict=True, ge=1)]
"""A count of requests in flight, this one counted: at least 1, a JSON integer (never `true`, `"3"` or 2.0)."""

MAX_ATTEMPTS = 21
"""The most requests one record may stand for: the config schema's `target.retries` maximum (20), plus one."""

DEFAULT_MIN_PAIR_SHARE = 0.9
"""The rubric's `min_load_pair_share` when it sets none: the flip probe's pairs (an answer asked alone, answers
asked beside others, as `Timing.in_flight_most` observed them) must cover 0.9 of a criterion's cases, as quality
parity must cover 0.9 of a comparison's reference."""


class Timing(Model):
    """Latency of one request, in milliseconds, measured by the backend."""

    ttft_ms: float | None = None
    """Request start -> first output token (prefill). In a batch, includes the whole batch's prefill. The request
    starts at its first attempt's actual send (its last write: see `send_lag_ms`): retries, and the backoff
    before them, count (openai)."""
    tpot_ms: float | None = None
    """(t_last_token - t_first_token) / (output_tokens - 1); None with fewer than 2 output tokens."""
    e2e_ms: float | None = None
    """Request start -> last token (end of stream). On a failed request: first attempt's actual send -> the
    failure, how long the user waited for nothing (failed requests are never latency samples)."""
    batch_size: int = 1
    """How many requests shared the forward passes that produced this timing (hf backend)."""
    itl_ms: list[float] | None = None
    """Inter-token latencies: gaps between content chunks; a chunk of k tokens gives k gaps of gap/k (openai)."""
    send_lag_ms: float | None = None
    """Scheduled send -> the moment the first attempt's last write of the request to the socket began: client
    queueing (openai). The scheduled send is the request's due time in an open loop or replay, and the moment a
    slot was free in a closed loop or the quality phase; the span holds the TCP connect when the request opened a
    connection (`connect_ms`) and the client's own work before the write. Both clients observe the write (the
    lean client directly, the openai client through httpx's transport trace); None where it was not observed
    (an attempt that failed before writing, e.g. connection refused): unknown, never a guessed 0."""
    connect_ms: float | None = None
    """TCP connect (and TLS handshake over https) of the connection the first attempt opened, part of
    `send_lag_ms` (openai). None when it reused a pooled keep-alive connection (a load phase's connections are
    opened before its window: their times are in run.json `load_phase.client.preconnect_ms`)."""
    ttft_sched_ms: float | None = None
    """Scheduled send -> first output token: TTFT including client queueing."""
    e2e_sched_ms: float | None = None
    """Scheduled send -> end of stream (on a failed request: -> the failure)."""
    attempts: Annotated[int, Field(ge=0, le=MAX_ATTEMPTS)] = 1
    """Requests sent for this case (retries before the first token add to it): at most `target.retries` (20 at
    most) + 1. A count past that is no run's (`record.evidence` lists each attempt's outcome)."""
    ttft_last_attempt_ms: float | None = None
    """Actual send of the attempt that answered -> first output token: TTFT as if it had not been retried
    (openai). ttft_ms = retry_wait_ms + ttft_last_attempt_ms."""
    retry_wait_ms: float | None = None
    """First attempt's actual send -> last attempt's actual send: failed attempts plus backoff (openai). 0 when
    the first attempt was the last."""
    retried_errors: list[str] = Field(default_factory=list)
    """Error kinds of the attempts that failed and were sent again, in order (openai): `attempts` - 1 of them.
    Every one counts as a failed request (see `releasegate.record.evidence`)."""
    in_flight_at_send: _InFlight | None = None
    """Requests the client had in flight when this one was sent, this one counted (openai; hf: its batch). None:
    not observed (a run made before it was recorded, a replay); written only when known."""
    in_flight_most: _InFlight | None = None
    """The most requests the client had in flight at any moment while this one was, this one counted: 1 means it
    was asked alone (the flip probe reads it). None: not observed; written only when known."""

    @model_serializer(mode="wrap")
    def _observed_only(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):  # an older run's records read (and are written) as they always were
            for key in ("in_flight_at_send", "in_flight_most"):
                if data.get(key) is None:
                    data.pop(key, None)
        return data


_TokenCount = Annotated[int, Field(ge=0, le=2**53)]
"""A token count: 0 or more, and one a float holds exactly (throughput and cost divide by it; 10**400 overflowed)."""


class Tokens(Model):
    """Token counts of one request and where they came from."""

    input: _TokenCount | None = None
    """Prompt tokens, after the chat template."""
    output: _TokenCount | None = None
    """Generated tokens, the end-of-sequence token included when generation stopped on one (as servers' usage)."""
    source: str = "tokenizer"
    """'usage' (the server's usage report), 'tokenizer' (the model's own tokenizer) or 'chunks' (one per streamed
    chunk: no usage and no tokenizer configured)."""


class Stratum(Model):
    """The stratum a case of a `sample:` suite was drawn from: what makes its rates estimate the source."""

    name: str
    """The stratum: its `by` columns' values, e.g. 'risk=high' ('' for a sample with no `by`)."""
    population: int = Field(ge=1)
    """Rows of the source in the stratum: with the run's cases of the stratum, each case stands for
    population / (the run's cases of the stratum) source rows."""
    weighted: bool = True
    """False when the suite says `sample.estimate: sample`: its rates describe the sample only, unweighted."""
