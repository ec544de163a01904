"""Repeated draws (`generation.repeats: k`): every case asked k - 1 more times, journaled in draws.jsonl.

Draw 0 of a case is its record in records.jsonl, as in a run without repeats; draws 1..k-1 are records of their
own in draws.jsonl, keyed (case_id, draw). Each draw is a request of its own, sent with its own seed (the
config's `generation.seed`, else `seed`, plus the draw number) where the server takes one, and never looked up
in or written to the response cache: a cached answer repeated k times would show a stable model that was never
asked again. Their time is kept apart (`sessions[].draws_seconds`), never in the quality phase's throughput.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from rich.console import Console

from ..backends import Backend, Request
from ..inputs.config import Config
from ..inputs.rubric import Rubric
from ..inputs.suites import Case
from ..record.evidence import failure
from ..record.records import RunDir, RunInfo
from .generation import _record, _request
from .progress import progress_bar
from .tool_turns import continue_turns

__all__ = ["DRAWS", "pending_draws", "generate_draws", "draw_seed"]

DRAWS = "draws.jsonl"


def draw_seed(config: Config, draw: int) -> int:
    """The seed of draw `draw` (from 1): the run's generation seed plus the draw, so each draw samples anew and a
    rerun of the run samples the same draws."""
    base = config.generation.get("seed")
    return (config.seed if base is None else int(base)) + draw


def pending_draws(run: RunDir, info: RunInfo, config: Config, cases: list[Case], mode: str) -> list[tuple[Case, int]]:
    """The (case, draw) pairs still to ask: every draw 1..k-1 of every case (k its suite's `repeats`), less those
    draws.jsonl holds already (a resumed run); `--retry-errors` asks a failed draw again. run.json `repeats`
    keeps the draws each suite plans, which the gate holds the journal to."""
    planned = {s: config.draws_of(s) for s in dict.fromkeys(c.suite for c in cases)}
    info.repeats = planned if any(k > 1 for k in planned.values()) else None
    if mode != "start":
        run.repair(DRAWS)  # a killed batch's torn last line cut off: the draws appended next start a line of their own
    done = {} if mode == "start" else {(r.case_id, r.draw): r for r in run.read_records(DRAWS, required=False)}
    out = []
    for case in cases:
        for draw in range(1, config.draws_of(case.suite)):
            prior = done.get((case.id, draw))
            if prior is None or (mode == "retry_errors" and failure(prior) is not None):
                out.append((case, draw))
    return out


def generate_draws(backend: Backend | None, todo: list[tuple[Case, int]], config: Config, rubric: Rubric, run: RunDir,
                   session: dict[str, Any], console: Console, show: bool) -> None:
    """Ask each pending draw, in batches of the backend's size, and append each batch to draws.jsonl (fsynced,
    so a kill loses at most the batch in flight and a resume asks only what is missing). Only the draws of a case
    whose draw 0 is recorded are asked: a case a budget's cap or a stop left unasked costs nothing more (its
    draws were reserved with it, `run.budget`)."""
    if todo:
        asked = {r.case_id for r in run.read_records(required=False)}
        todo = [(case, draw) for case, draw in todo if case.id in asked]
    if not todo:
        return
    assert backend is not None  # draws are asked: the run loaded one (pipeline.check)
    size = max(1, getattr(backend, "batch_size", 1) or 1)
    session["draws"] = session.get("draws", 0) + len(todo)
    session.setdefault("draws_seconds", 0.0)
    with progress_bar(console, show) as bar:
        task = bar.add_task("repeated draws", total=len(todo))
        for start in range(0, len(todo), size):
            batch = todo[start:start + size]
            requests = [_seeded(_request(case), config, draw) for case, draw in batch]
            began = time.perf_counter()
            out = backend.generate(requests, max_new_tokens=config.max_new_tokens)
            continue_turns(backend, [case for case, _ in batch], out, config.max_new_tokens)
            session["draws_seconds"] += time.perf_counter() - began
            records = []
            for (case, draw), gen in zip(batch, out):
                record = _record(case, gen, rubric)
                record.draw = draw
                records.append(record)
            run.append(records, DRAWS)
            bar.advance(task, len(batch))


def _seeded(request: Request, config: Config, draw: int) -> Request:
    return dataclasses.replace(request, seed=draw_seed(config, draw))  # a tool case's tools kept
