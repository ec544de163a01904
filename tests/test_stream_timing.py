"""TPOT and ITL from a stream's chunk stamps: decode time is measured between reads."""

from __future__ import annotations

from releasegate.backends._stream import StreamParse, stream_timing

MS = 1_000_000


def parse(stamps: list[int]) -> StreamParse:
    out = StreamParse()
    out.chunks = [f"t{i} " for i in range(len(stamps))]
    out.chunk_ns = stamps
    return out


def test_tpot_is_the_decode_span_over_the_tokens_after_the_first():
    timing = stream_timing(parse([10 * MS, 12 * MS, 14 * MS]), [1, 1, 1], sent_ns=0, end_ns=15 * MS, scheduled_ns=0)
    assert timing["tpot_ms"] == 2.0 and timing["ttft_ms"] == 10.0


def test_an_answer_read_in_one_go_shows_no_decode_time():
    # a coalesced or late read: equal stamps; the stream is flagged by itl_batched_share, not by TPOT
    timing = stream_timing(parse([10 * MS] * 5), [1] * 5, sent_ns=0, end_ns=11 * MS, scheduled_ns=0)
    assert timing["tpot_ms"] == 0.0 and timing["itl_ms"] == [0.0] * 4
    assert timing["ttft_ms"] == 10.0 and timing["e2e_ms"] == 11.0
