"""Run the load phase of `check` (openai backend): warm-up, the planned load, server metrics; append load.jsonl."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..backends import Backend, Generation, capabilities
from ..errors import ErrorKind
from ..inputs.load_profile import LoadConfig
from ..record.ledger import LoadLedger
from ..record.records import RunDir, RunInfo
from ..scale.load import DistributedLoad
from ..scale.traffic import load_record, plan_load
from .load_runner import LoadRunner, load_runner
from .progress import count_kept, progress_bar
from .server_scrape import samples_line, summarise, target_scraper
from .stopping import stop_if_dead
from .sweep import run_sweep

if TYPE_CHECKING:
    from rich.console import Console

    from ..inputs.config import Config
    from ..inputs.suites import Case

__all__ = ["run_load_phase", "limited_load"]


def limited_load(load: LoadConfig, limit: int | None) -> LoadConfig:
    """The load phase of a `check --limit N` run: at most N measured requests and N warm-up requests. A fixed
    plan (requests, a rate, a replayed log) keeps its first N; a closed loop bounded by `duration_s` stops at N
    or at the end of its time, whichever comes first; a capacity sweep runs one step of N requests at its start
    rate. A smoke run thus stays small; its latency figures have the samples they have (few: insufficient)."""
    if limit is None:
        return load
    if load.sweep is not None:
        sweep = dataclasses.replace(load.sweep, max_rps=load.sweep.start_rps, requests_per_step=limit,
                                    step_s=limit / load.sweep.start_rps, refine=0)
        return dataclasses.replace(load, sweep=sweep, warmup=min(load.warmup, limit))
    return dataclasses.replace(load, requests=min(load.requests or limit, limit), warmup=min(load.warmup, limit))


def run_load_phase(backend: Backend | None, config: Config, cases: list[Case], run: RunDir, info: RunInfo, console: Console,
                   show: bool) -> None:
    """Run the config's load phase (or capacity sweep), bounded by `check --limit` (`limited_load`), and record
    it: load.jsonl, server_metrics.jsonl and run.json `load_phase` (with `limit` when one applied)."""
    if not capabilities(config.target.backend).load_phase:  # the config loader already refuses this; belt and braces
        raise TypeError("a load phase needs the openai backend")
    assert config.load is not None  # the stage runs only when the config has a load phase (pipeline.check)
    load = limited_load(config.load, info.limit)
    config = dataclasses.replace(config, load=load)
    # every request is written to the attempts ledger as it completes: a phase cut short keeps its failures
    ledger = LoadLedger(run.path, session=len(info.sessions) - 1)
    try:
        if load.sweep is not None:
            with progress_bar(console, show) as bar:
                run_sweep(backend, config, cases, run, info, bar, ledger.add, ledger.session)
        else:
            _run_planned(backend, config, cases, run, info, console, show, ledger.add)
    finally:
        ledger.close()
    assert info.load_phase is not None  # recorded by the phase just run
    # this session's ledger lines are load.jsonl's now: the finished phase is counted from load.jsonl
    info.load_phase["session"] = ledger.session
    _note_limit(run, info)


def _run_planned(backend: Backend | None, config: Config, cases: list[Case], run: RunDir, info: RunInfo, console: Console,
                 show: bool, kept: Callable[[Generation], object]) -> None:
    """The planned load (not a sweep): load.jsonl, server_metrics.jsonl and `info.load_phase`; `kept` is given
    each completed request."""
    assert config.load is not None  # see run_load_phase
    plan = plan_load(config.load, cases)
    tokens = config.max_new_tokens
    scraper = target_scraper(config.target)
    with scraper, progress_bar(console, show) as bar:
        planned = len(plan.requests) if plan.requests is not None else None  # None: as many as the duration allows
        task = bar.add_task(f"load: {plan.describe()}", total=planned)
        # warm-up, then (lean client) connections opened, then the window: all on one client, so the warm-up's
        # connections serve the load; the schedule and the deadline start with the window
        runner: LoadRunner = load_runner(backend)
        if config.scale is not None:  # the schedule split across Ray workers, each with its own client

            runner = DistributedLoad(backend, config.scale, plan)
        done = runner.run_load(
            plan.iter_requests(), offsets=plan.offsets, concurrency=plan.concurrency, max_new_tokens=tokens,
            duration_s=plan.duration_s, warmup=plan.warmup, on_start=lambda: scraper.mark("start"),
            on_done=lambda gen: count_kept(bar, task, gen, kept),
        )
        scraper.mark("end")
        stop_if_dead(backend, "load phase")  # measured whole or not at all: a resume runs the load phase again
    records = [load_record(r, g) for r, g in done.results if g.error != ErrorKind.NOT_SENT]
    planned = len(done.results) if planned is None else planned
    not_sent = planned - len(records)
    run.append(records, "load.jsonl")
    run.write_text("server_metrics.jsonl", "".join(samples_line(s) for s in scraper.samples))
    client_ttft = [r.timing.ttft_ms for r in records if r.timing.ttft_ms is not None]
    info.load_phase = {
        "profile": plan.describe(),
        "seconds": done.seconds,
        "requests": len(records),
        "warmup": len(plan.warmup),
        "concurrency": plan.concurrency,
        # a closed loop bounded only by duration_s makes requests as it sends them: planned = made = sent
        "planned": planned,
        # a loop bounded by duration_s stops when it is over, as planned: only a fixed plan can be cut short
        "cut_short": f"{not_sent} of {planned} planned requests were never sent"
        if not_sent and plan.duration_s is None else None,
        "server_metrics": summarise(scraper.samples, client_ttft_ms=client_ttft, concurrency=plan.concurrency,
                                    profile=plan.describe()) if scraper.samples else {"error": scraper.error},
        "client": done.client,  # the client's own lateness over the window: see OpenAIBackend
    }


def _note_limit(run: RunDir, info: RunInfo) -> None:
    if info.limit is not None:
        assert info.load_phase is not None  # recorded by the load phase or the sweep just run
        info.load_phase["limit"] = info.limit
    run.write_info(info)
