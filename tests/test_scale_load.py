"""Splitting a load plan across workers and merging their parts back (no Ray needed: pure functions)."""

from __future__ import annotations

from releasegate.backends import Generation, Request
from releasegate.inputs.scale_config import ScaleConfig
from releasegate.record.records import Timing
from releasegate.scale.load import DistributedLoad, WorkerPart, merge
from releasegate.scale.traffic import LoadPlan


def plan(n: int, offsets: bool) -> LoadPlan:
    requests = [Request(f"load-{i:05d}:c{i % 3}", prompt="hi") for i in range(n)]
    return LoadPlan([Request(f"warmup-{i:05d}:c0", prompt="hi") for i in range(3)], requests,
                    [i * 0.1 for i in range(n)] if offsets else None, 5, None)


def test_an_open_loop_is_dealt_round_robin_with_its_offsets_and_the_cap_shared():
    shares = DistributedLoad(None, ScaleConfig(workers=2), plan(5, offsets=True)).shares(5, 8, None)
    assert [[r.case_id[:10] for r in s.requests] for s in shares] == [
        ["load-00000", "load-00002", "load-00004"], ["load-00001", "load-00003"]]
    assert [s.offsets for s in shares] == [[0.0, 0.2, 0.4], [0.1, 0.30000000000000004]]
    assert [s.concurrency for s in shares] == [3, 3]  # the cap, rounded up per worker
    assert [len(s.warmup) for s in shares] == [2, 1]


def test_a_closed_loop_shares_its_streams_and_never_gives_a_worker_none():
    shares = DistributedLoad(None, ScaleConfig(workers=4), plan(9, offsets=False)).shares(3, 8, None)
    assert [s.concurrency for s in shares] == [1, 1, 1]  # 3 streams: 3 workers, not 4
    shares = DistributedLoad(None, ScaleConfig(workers=2), plan(9, offsets=False)).shares(5, 8, None)
    assert [s.concurrency for s in shares] == [3, 2]


def part(ids: list[int], lag_p99: float | None, started_at: float, seconds: float) -> WorkerPart:
    results = [(Request(f"load-{i:05d}:c"), Generation("x", timing=Timing(send_lag_ms=float(i)))) for i in ids]
    client = {"client": "lean", "loop_lag_ms": {"p99": lag_p99} if lag_p99 is not None else None, "window_s": seconds}
    return WorkerPart(results, seconds, client, started_at, 0)


def test_parts_merge_into_the_plans_order_with_the_worst_workers_lateness():
    done = merge([part([0, 2, 4], 5.0, 100.002, 2.0), part([1, 3], 40.0, 100.001, 2.5)], start_at=100.0)
    assert [r.case_id[:10] for r, _ in done.results] == [f"load-{i:05d}" for i in range(5)]
    assert done.seconds == 100.001 + 2.5 - 100.001  # first start to last end
    assert done.client["loop_lag_ms"]["p99"] == 40.0  # the saturated worker is the one the gate reads
    workers = done.client["workers"]
    assert [w["requests"] for w in workers] == [3, 2]
    assert [w["send_lag_ms"]["max"] for w in workers] == [4.0, 3.0]
    assert [round(w["start_skew_ms"], 3) for w in workers] == [2.0, 1.0]


def test_a_worker_that_measured_no_lag_does_not_hide_one_that_ran_late():
    for parts in ([part([0], 500.0, 1.0, 1.0), part([1], None, 1.0, 1.0)],
                  [part([0], None, 1.0, 1.0), part([1], 500.0, 1.0, 1.0)]):
        assert merge(parts, start_at=1.0).client["loop_lag_ms"]["p99"] == 500.0
