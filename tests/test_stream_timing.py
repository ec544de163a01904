"""TPOT from a stream's chunk stamps: decode time is measured between reads, so an answer read in one go has none."""

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


def test_an_answer_read_in_one_go_has_no_tpot_rather_than_zero():
    # a late client read every chunk at once: the stamps are equal and no decode time can be seen
    timing = stream_timing(parse([10 * MS] * 5), [1] * 5, sent_ns=0, end_ns=11 * MS, scheduled_ns=0)
    assert timing["tpot_ms"] is None
    assert timing["ttft_ms"] == 10.0 and timing["e2e_ms"] == 11.0  # what was measured stays


def test_one_chunk_holding_many_tokens_has_no_tpot():
    timing = stream_timing(parse([10 * MS]), [6], sent_ns=0, end_ns=11 * MS, scheduled_ns=0)
    assert timing["tpot_ms"] is None
