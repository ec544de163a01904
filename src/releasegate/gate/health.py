"""Run health: whether a run is whole enough to be judged, and whether the target could be run at all.

A verdict is only as good as the run under it. A run that is not `complete` (interrupted, failed, or killed and
still marked `running`), that lacks a planned phase or part of one, or that lacks cases, decides nothing:
the gate says INCONCLUSIVE and names what is missing. A target that failed most requests (connection errors,
5xx, 429 after retries, timeouts) gets TARGET_ERROR, exit 4: the model was not measured, so it neither passed
nor failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..inputs.files import stored_yaml
from ..record.evidence import answered, attempt_counts, case_attempts, worst_client
from ..record.ledger import ledger_summary
from ..record.metrics import compute_metric
from ..record.records import CaseRecord, RunInfo
from ..record.seal import edited_evidence
from .run_view import (
    Attempts,
    ClientFigures,
    budget_of,
    client_figures,
    load_phase_of,
    prefix_cache_of,
    session_clients,
    stopping_of_run,
)

__all__ = [
    "run_problems", "saved_run_problems", "target_failure", "phase_counts", "planned_phases", "client_kind", "client_lag_ms",
    "client_saturation", "client_lateness_ms", "client_reads_long", "lateness_advice", "client_load", "quality_client",
    "client_batched_share", "TARGET_FAILURE_SHARE",
]

TARGET_FAILURE_SHARE = 0.5
"""More than this share of a run's requests (every attempt, `evidence`) failed: the target could not be run
(exit 4)."""


def run_problems(info: RunInfo, records: list[CaseRecord], load_records: list[CaseRecord]) -> list[str]:
    """What keeps the run from being judged as a whole, one phrase each; empty for a healthy run."""
    problems = []
    if info.status != "complete":
        state = "still running, or killed" if info.status == "running" else info.status
        problems.append(f"the run is {state}, not complete (finish it with check --resume)")
    budget = budget_of(info)
    stopped = stopping_of_run(info).stopped_at or (budget and budget.exhausted)  # or at a spend cap
    if len(records) < info.cases and not stopped:  # a run stopped when decided asks no more (`gate.stopping`)
        problems.append(f"{info.cases - len(records)} of {info.cases} cases have no record")
    if not records:
        problems.append("no quality case was recorded")
    if "load" in (info.phases or []):
        problems += _load_problems(info, load_records)
    if "prefix_cache" in (info.phases or []) and info.prefix_cache is None:
        problems.append("the planned prefix-cache probe did not run (or did not finish)")
    elif probe := prefix_cache_of(info):  # its failures are in no error rate: a probe that failed requests measured less
        failed = sum((side.failed or 0) if side else 0 for side in (probe.warm, probe.cold))
        if failed:
            problems.append(f"{failed} of the prefix-cache probe's {2 * probe.pairs} "
                            "requests failed (see prefix_cache.jsonl)")
    return problems


def _load_problems(info: RunInfo, load_records: list[CaseRecord]) -> list[str]:
    if info.load_phase is None:
        return ["the planned load phase did not run (or did not finish)"]
    phase = load_phase_of(info)
    if not load_records:
        return ["the load phase recorded no request (load.jsonl missing or empty)"]
    if phase.requests is not None and len(load_records) < phase.requests:
        return [f"load.jsonl holds {len(load_records)} of the load phase's {phase.requests} requests"]
    if phase.cut_short:
        return [f"the load phase was cut short: {phase.cut_short}"]
    return []


def phase_counts(records: list[CaseRecord], ledger: Sequence[Any] = ()) -> dict[str, Any]:
    """Requests of one phase: every attempt (`evidence`: earlier journal lines and in-run retries count, and the
    phase's attempts in the ledger, `record.ledger`), how many cases were answered, failed attempts by error class
    (empty answers among them), cases whose outcome failed and cases that needed more than one attempt, cached
    records (which sent no request), the error rate over the requests sent; `ledger` says, when it holds any,
    its attempts and failed attempts and where they came from."""
    tally = Attempts(**attempt_counts([*records, *ledger], cached=False))
    return {**({"ledger": ledger_summary(list(ledger))} if ledger else {}),
        "requests": tally.attempts, "succeeded": sum(answered(r) for r in records), "failed": tally.failed,
        "errors": tally.errors, "cached": sum(bool(r.cached) for r in records), "error_rate": tally.rate,
        "repaired": sum(bool(getattr(r, "output_repaired", False)) for r in records),
        "cases": len(records), "failed_cases": sum(not answered(r) for r in records),
        "retried_cases": sum(len(case_attempts(r)) > 1 for r in records),
    }


def target_failure(records: list[CaseRecord], load_records: list[CaseRecord], ledger: Sequence[Any] = ()) -> str | None:
    """A one-line reason when the target failed more than TARGET_FAILURE_SHARE of the requests sent to it; None
    otherwise. Every attempt counts (`evidence`): a case answered on its third try was two failed requests, and the
    ledger's attempts (`record.ledger`) are requests sent too."""
    tally = Attempts(**attempt_counts([*records, *load_records, *ledger], cached=False))
    sent, failed = tally.attempts, tally.failed
    if not sent or failed <= TARGET_FAILURE_SHARE * sent:
        return None
    kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(tally.errors.items(), key=lambda kv: -kv[1]))
    return f"the target failed {failed} of {sent} requests ({kinds}): it could not be run, so nothing was measured"


def saved_run_problems(run_path: Path, info: RunInfo, records: list[CaseRecord],
                       load_records: list[CaseRecord]) -> list[str]:
    """What keeps a saved run, as it is on disk now, from being whole (`run_problems`), its planned phases read
    from the run directory first, or from being what releasegate recorded (`record.seal.edited_evidence`). `records` and `load_records`: the run's, read once by the caller."""
    info.phases = planned_phases(run_path, info)
    return run_problems(info, records, load_records) + edited_evidence(run_path)


def planned_phases(run_path: Path, info: RunInfo) -> list[str]:
    """The phases a saved run planned: run.json's own list, else (older runs) its config.yaml snapshot's."""
    if info.phases is not None:
        return info.phases
    data = stored_yaml(Path(run_path) / "config.yaml", what="config snapshot")
    planned = ["quality"]
    if (isinstance(data, dict) and data.get("load")) or info.load_phase is not None:  # config.yaml: not typed here
        planned.append("load")
    return planned


def _summaries(info: RunInfo, phase: str) -> list[ClientFigures]:
    """Every client summary of the phase: for the quality phase run.json's and each session's, so the lag, the
    batched share and the client kind are each the worst of every part of a resumed run."""
    quality = [client_figures(info.client), *session_clients(info)]
    load = [load_phase_of(info).client]
    found = {"quality": quality, "load": load, "both": quality + load}.get(phase, [])
    return [s for s in found if s is not None]


def quality_client(info: RunInfo) -> dict[str, Any] | None:
    """The client's lateness over the quality phase: the worst of run.json `client` and of every session's
    (`evidence.worst_client`), so a resume that re-ran a few cases never hides the lateness of the part before."""
    return worst_client(info.client, *(s.get("client") for s in info.sessions if isinstance(s, dict)))


def client_kind(info: RunInfo, phase: str) -> str | None:
    """'lean', 'openai' or 'hf' (the in-process model): the client that measured the phase latency comes from
    (None when unknown or mixed)."""
    kinds = {s.client for s in _summaries(info, phase)}
    return kinds.pop() if len(kinds) == 1 else None  # mixed parts: unknown, as strict as the openai client


def client_lag_ms(info: RunInfo, phase: str, *, e2e: bool = False) -> float | None:
    """The client's lag p99 over the phase latency comes from (the worse of two for `both`): an endpoint client's
    event-loop lag, the hf backend's CPU wait within a TTFT or TPOT (`backends._starvation`), or with `e2e` its
    wait within an E2E, which accrues over every step (`e2e_lag_ms`; a client without it: its lag). None when the
    run has no client figures (runs that predate them); a hand-edited figure that is not a number says nothing."""
    lags = [lag for s in _summaries(info, phase) if (lag := _lag_p99(s, e2e)) is not None]
    return max(lags) if lags else None


def _lag_p99(summary: ClientFigures, e2e: bool) -> float | None:
    lag = summary.e2e_lag_ms if e2e and summary.e2e_lag_ms is not None else summary.loop_lag_ms
    return lag.p99 if lag is not None else None


def client_lateness_ms(info: RunInfo, phase: str, records: list[CaseRecord], metric: str = "ttft_ms") -> float:
    """How late the client measured the phase's figures of `metric` (ms), for every client alike: its lag p99
    (`client_lag_ms`: an E2E figure takes the hf backend's E2E wait) plus the send lag p99 of `records` (scheduled
    send -> request written; none for the hf backend). A send stamped late makes TTFT read short: the openai
    client's transport stamps it after handing the loop back, and the lean client's stamp right after its write
    is late by whatever held the thread between the two (a starved CPU). 0 when the run has no client figures."""
    lag = client_lag_ms(info, phase, e2e=metric.startswith("e2e"))
    if lag is None:
        return 0.0
    send = compute_metric("send_lag_ms_p99", records, {}, {"all_records": True}).value
    return lag + max(send or 0.0, 0.0)


def client_reads_long(info: RunInfo, phase: str) -> bool:
    """Whether every client summary of the phase says its lateness can only have made figures read long
    (`reads_long_only`: the hf backend, whose stamps a wait for a CPU only moves later within the interval it
    times), so latency bounds are widened below only; False when any part says otherwise or nothing says."""
    summaries = _summaries(info, phase)
    return bool(summaries) and all(s.reads_long_only for s in summaries)


def client_batched_share(info: RunInfo, phase: str) -> float | None:
    """The share of gaps between content chunks the client read together (`itl_batched_share`) over the phase
    latency comes from (the worse of two for `both`); None when the run has no streaming client figures."""
    shares = [s.itl_batched_share for s in _summaries(info, phase) if s.itl_batched_share is not None]
    return max(shares) if shares else None


BUSY_LOOP_CPU_SHARE = 0.5
"""A client whose event loop ran late while using less than this share of a CPU was not busy with its own
requests: it waited for a CPU other processes held (a busy machine), so lowering concurrency would not help."""
ONE_IN_FLIGHT = 1.5
"""At most this many requests in flight on average (the phase's request time over its window, Little's law):
about one at a time, no concurrency left to lower."""


def client_saturation(lag: float | None, ttft_p50_ms: float | None, max_share: float, *,
                      cpu_share: float | None = None, in_flight: float | None = None, client: str | None = None
                      ) -> str | None:
    """A one-line reason when the client, not the target, set the latency: its event loop ran late (`lag`, p99;
    for the hf backend, `client` 'hf': its generating thread waited for a CPU) by more than `max_share` of the
    measured TTFT p50, with what to do about it (`lateness_advice`: a busy machine is told apart from too much
    concurrency by the loop's CPU share and the requests in flight). None when it did not run late, or when
    nothing says."""
    if lag is None or not ttft_p50_ms:
        return None
    if lag <= max_share * ttft_p50_ms:
        return None
    late = (f"its generating thread waited {lag:.1f} ms for a CPU (p99)" if client == "hf"
            else f"its event loop ran {lag:.1f} ms late (p99)")
    return (f"client saturated: {late} beside a TTFT p50 of {ttft_p50_ms:.1f} ms, "
            f"{lag / ttft_p50_ms:.0%} of it, over the rubric's max_client_lag_share of {max_share:g}; "
            + lateness_advice(max_share, cpu_share=cpu_share, in_flight=in_flight, starved=client == "hf"))


def lateness_advice(max_share: float, *, cpu_share: float | None, in_flight: float | None,
                    starved: bool = False) -> str:
    """What to do about a late client. Late at about one request in flight, or with its loop using little CPU, it
    waited for the machine (other processes), not for its own work: fewer requests would not help. An in-process
    model's wait for a CPU (`starved`) is always the machine's: its own work runs, it does not wait."""
    knowingly = (f"or raise max_client_lag_share above {max_share:g} knowingly (latency figures may then hold that "
                 "much client lateness)")
    quieter = "run on a quieter machine, pin releasegate to a core of its own (taskset -c N), stop other processes"
    busy = ["other processes held the CPU the model was generating on"] if starved else []
    if in_flight is not None and in_flight <= ONE_IN_FLIGHT:
        busy.append(f"late at {in_flight:.1f} request(s) in flight on average")
    if cpu_share is not None and cpu_share < BUSY_LOOP_CPU_SHARE:
        busy.append(f"{'the generating thread' if starved else 'its loop'} used {cpu_share:.0%} of a CPU while it ran late")
    if busy:
        return f"the machine is busy, not the client ({', '.join(busy)}): {quieter}, {knowingly}"
    if cpu_share is None and in_flight is None:
        return f"lower concurrency or add workers if the client was busy; on a busy machine {quieter}; {knowingly}"
    load = ", ".join([*([f"{in_flight:.1f} requests in flight"] if in_flight is not None else []),
                      *([f"its loop used {cpu_share:.0%} of a CPU"] if cpu_share is not None else [])])
    return f"the client is busy with its own requests ({load}): lower concurrency or add workers, {knowingly}"


def client_load(info: RunInfo, phase: str, records: list[CaseRecord]) -> dict[str, Any]:
    """How loaded the client was over the phase latency comes from: `cpu_share` (its loop's share of a CPU, from
    the summary with the worst lag) and `in_flight` (the average number of requests in flight: their time from
    send to end over the measured window). Either is None when the run cannot tell (no client figures; a resumed
    quality phase, whose window is one session's; a capacity sweep, judged at one step)."""
    lagged = [(s.loop_lag_ms.p99, s) for s in _summaries(info, phase) if s.loop_lag_ms and s.loop_lag_ms.p99 is not None]
    if not lagged:
        return {"cpu_share": None, "in_flight": None}
    worst = max(lagged, key=lambda pair: pair[0])[1]
    window_s = sum(s.window_s or 0.0 for _, s in lagged)
    one_window = not (phase != "load" and len(info.sessions) > 1) and not load_phase_of(info).sweep
    busy_ms = sum(r.timing.e2e_ms for r in records if r.timing.e2e_ms is not None and not r.cached)
    in_flight = busy_ms / (window_s * 1e3) if window_s and one_window and busy_ms else None
    return {"cpu_share": worst.cpu_share, "in_flight": in_flight}
