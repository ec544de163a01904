"""Run the load phase of `check` (openai backend): warm-up, the planned load, server metrics; append load.jsonl."""

from __future__ import annotations

import time

from .backends.openai import OpenAIBackend, Scheduled
from .load import plan_load, schedule_ns
from .record import CaseRecord, RunDir, RunInfo
from .server_metrics import Scraper, summarise

__all__ = ["run_load_phase"]


def run_load_phase(backend, config, cases, run: RunDir, info: RunInfo, console, show: bool) -> None:
    from .runner import progress_bar

    if not isinstance(backend, OpenAIBackend):  # the config loader already refuses this; belt and braces
        raise TypeError("a load phase needs the openai backend")
    plan = plan_load(config.load, cases)
    tokens = config.max_new_tokens
    target = config.target
    scraper = Scraper(target.endpoint_url(), query=target.url_query(), headers=target.request_headers())
    with scraper, progress_bar(console, show) as bar:
        if plan.warmup:
            backend.generate(plan.warmup, max_new_tokens=tokens)
        task = bar.add_task(f"load: {plan.describe()}", total=len(plan.requests))
        times = schedule_ns(plan.offsets, len(plan.requests))
        deadline = time.perf_counter_ns() + int(plan.duration_s * 1e9) if plan.duration_s else None
        scraper.mark("start")
        started = time.perf_counter()
        gens = backend.run_scheduled(
            [Scheduled(r, at) for r, at in zip(plan.requests, times)], max_new_tokens=tokens,
            concurrency=plan.concurrency, deadline_ns=deadline, on_done=lambda: bar.advance(task),
        )
        seconds = time.perf_counter() - started
        scraper.mark("end")
    records = [_record(r, g) for r, g in zip(plan.requests, gens) if g.error != "not_sent"]
    not_sent = len(plan.requests) - len(records)
    run.append(records, "load.jsonl")
    run.write_text("server_metrics.jsonl", "".join(_json_line(s) for s in scraper.samples))
    client_ttft = [r.timing.ttft_ms for r in records if r.timing.ttft_ms is not None]
    info.load_phase = {
        "profile": plan.describe(),
        "seconds": seconds,
        "requests": len(records),
        "warmup": len(plan.warmup),
        "concurrency": plan.concurrency,
        "planned": len(plan.requests),
        # a closed loop bounded by duration_s plans more than it sends: only a fixed plan can be cut short
        "cut_short": f"{not_sent} of {len(plan.requests)} planned requests were never sent"
        if not_sent and plan.duration_s is None else None,
        "server_metrics": summarise(scraper.samples, client_ttft_ms=client_ttft, concurrency=plan.concurrency,
                                    profile=plan.describe()) if scraper.samples else {"error": scraper.error},
    }
    run.write_info(info)


def _record(request, gen) -> CaseRecord:
    base_id = request.case_id.split(":", 1)[1] if ":" in request.case_id else request.case_id
    return CaseRecord(
        case_id=request.case_id, suite="load", tags={"phase": "load", "prompt_of": base_id},
        input={"messages": request.messages} if request.messages is not None else {"prompt": request.prompt},
        output=gen.text, error=gen.error, error_message=gen.error_message, tokens=gen.tokens, timing=gen.timing,
    )


def _json_line(sample: dict) -> str:
    import json

    return json.dumps(sample) + "\n"
