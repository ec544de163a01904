"""`check`: config -> cases -> backend -> run record -> judge -> reports. Each stage a function of the record."""

from __future__ import annotations

import dataclasses
import os
import platform
import secrets
import shutil
import time
from datetime import UTC, datetime

import yaml
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from . import __version__
from .backends import Backend, Generation, Request, create_backend
from .config import Config
from .judge import judge_run
from .record import CaseRecord, RunDir, RunInfo
from .report import write_reports
from .rubric import Rubric
from .scorers import score_record
from .suites import Case

__all__ = ["run_check", "new_run_id"]


def new_run_id() -> str:
    """Sortable by time, unique across concurrent runs."""
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


def run_check(
    config: Config, rubric: Rubric, cases: list[Case], *, console: Console, progress: bool = True, run_id: str | None = None
) -> tuple[RunDir, dict]:
    """Run every case, record it, judge the run and write the reports. Returns the run dir and the report."""
    if rubric.evaluate:  # fail on an unloadable metric before spending time on the model
        from .scorers.evaluate_metric import load_metric

        for spec in rubric.evaluate:
            load_metric(spec.module)
    run = RunDir(config.output_dir / (run_id or config.run_id or new_run_id()))
    run.create()
    info = _start(run, config, rubric)
    backend = create_backend(config.target, config.generation)
    try:
        _load(backend, info, run, console)
        _generate_all(backend, cases, config, rubric, run, info, console, progress)
        if config.load is not None:
            from .load_phase import run_load_phase

            run_load_phase(backend, config, cases, run, info, console, progress)
    finally:
        backend.close()
    report = judge_run(info, run.read_records(), rubric, info.cost, run.read_records("load.jsonl", required=False))
    write_reports(run, report)
    return run, report


def _start(run: RunDir, config: Config, rubric: Rubric) -> RunInfo:
    shutil.copyfile(config.path, run.path / "config.yaml")
    run.write_text("rubric.yaml", yaml.safe_dump(rubric.as_dict(), sort_keys=False, allow_unicode=True))
    info = RunInfo(
        run_id=run.path.name,
        created_at=now(),
        target=config.target.describe(),
        backend=config.target.backend,
        cost=dataclasses.asdict(config.cost) if config.cost else None,
        versions=_versions(config.target.backend),
        host={"platform": platform.platform(), "cpus": os.cpu_count(), "threads": config.target.threads},
    )
    run.write_info(info)
    return info


def _load(backend: Backend, info: RunInfo, run: RunDir, console: Console) -> None:
    started = time.perf_counter()
    with console.status(f"loading {info.target}"):
        try:
            backend.load()
        except Exception:
            info.status, info.finished_at = "failed", now()
            run.write_info(info)
            raise
    info.load_seconds = time.perf_counter() - started
    info.versions.update(_versions(info.backend, loaded=True))


def _generate_all(backend, cases, config, rubric, run, info, console, show) -> None:
    size = max(1, backend.batch_size)
    started = time.perf_counter()
    with progress_bar(console, show) as bar:
        task = bar.add_task("generating", total=len(cases))
        for i in range(0, len(cases), size):
            batch = cases[i : i + size]
            requests = [Request(c.id, list(c.messages) if c.messages else None, c.prompt) for c in batch]
            generations = backend.generate(requests, max_new_tokens=config.max_new_tokens)
            run.append([_record(c, g, rubric) for c, g in zip(batch, generations)])
            bar.advance(task, len(batch))
    if backend.measures_latency:
        info.generation_seconds = time.perf_counter() - started
    info.cases, info.status, info.finished_at = len(cases), "complete", now()
    run.write_info(info)


def _record(case: Case, gen: Generation, rubric: Rubric) -> CaseRecord:
    record = CaseRecord(
        case_id=case.id, suite=case.suite, tags=case.tags, input=case.input, expected=case.expected,
        answer=case.answer, format=list(case.format), output=gen.text, error=gen.error,
        error_message=gen.error_message, tokens=gen.tokens, timing=gen.timing,
    )
    record.scores = score_record(record, rubric.forbidden)
    return record


def progress_bar(console: Console, show: bool) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TimeRemainingColumn(), console=console, disable=not show, transient=False,
    )


def _versions(backend: str, loaded: bool = False) -> dict[str, str]:
    out = {"python": platform.python_version(), "releasegate": __version__}
    if loaded and backend == "hf":
        import peft
        import torch
        import transformers

        out.update(torch=torch.__version__, transformers=transformers.__version__, peft=peft.__version__)
    return out


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
