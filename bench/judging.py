"""Judging time on long streamed outputs: four requests of 25,250 inter-token gaps each (101k gaps, as four
100k-character outputs streamed token by token give), judged with an ITL criterion at a confidence.

Baseline, measured in the same run: the pure-Python percentile bootstrap over the pooled gaps that judging used
before (every gap resampled as if independent), timed on a few resamples and scaled to the 1,000 the gate draws.
Prints the judging wall time, the baseline's, and their ratio.
"""

from __future__ import annotations

import random
import time

from releasegate.inputs.rubric import Criterion, Rubric
from releasegate.pipeline.gate import GateInputs, judge_run
from releasegate.record.records import CaseRecord, RunInfo, Timing, Tokens
from releasegate.stats.intervals import bootstrap, percentile

REQUESTS, GAPS, RESAMPLES, BASELINE_RESAMPLES = 4, 25_250, 1000, 5


def records() -> list[CaseRecord]:
    rng = random.Random(0)
    out = []
    for i in range(REQUESTS):
        base = 15 + 10 * rng.random()  # requests differ: their gaps are correlated within a request
        gaps = [base + rng.expovariate(1 / 3) for _ in range(GAPS)]
        out.append(CaseRecord(
            case_id=f"c{i}", suite="s", input={"prompt": "p"}, output="x" * 100_000,
            tokens=Tokens(input=10, output=GAPS + 1, source="usage"),
            timing=Timing(ttft_ms=100.0, tpot_ms=sum(gaps) / GAPS, e2e_ms=100.0 + sum(gaps), itl_ms=gaps),
        ))
    return out


def main() -> None:
    recs = records()
    info = RunInfo(run_id="bench", created_at="now", target="bench", backend="openai", status="complete",
                   cases=len(recs), generation_seconds=10.0, phases=["quality"])
    rubric = Rubric(path=None, name="bench", criteria=(
        Criterion(name="itl p99", metric="itl_ms_p99", op="<=", threshold=50, confidence=0.95),
        Criterion(name="itl p95", metric="itl_ms_p95", op="<=", threshold=50, confidence=0.95),
    ))
    started = time.perf_counter()
    report = judge_run(GateInputs(info, recs, rubric)).as_json()
    judged = time.perf_counter() - started

    pooled = [g for r in recs for g in r.timing.itl_ms]
    started = time.perf_counter()
    bootstrap(pooled, lambda xs: percentile(xs, 99), resamples=BASELINE_RESAMPLES)
    # the old summary computed a bootstrap for P95 and P99 and once more per criterion at a confidence
    old = (time.perf_counter() - started) * RESAMPLES / BASELINE_RESAMPLES * 4

    itl = next(c for c in report["criteria"] if c["name"] == "itl p99")
    print(f"{len(pooled):,} inter-token gaps in {REQUESTS} requests")
    print(f"judging now:                    {judged:8.2f} s  (ITL p99 {itl['value']:.2f} ms, bounds {itl['bounds']}, "
          f"n={itl['n']} requests)")
    print(f"pooled pure-Python bootstrap:   {old:8.2f} s  (estimated from {BASELINE_RESAMPLES} resamples)")
    print(f"ratio (baseline / now):         {old / judged:8.1f}x")


if __name__ == "__main__":
    main()
