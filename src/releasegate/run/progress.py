"""The progress of `check`: bars in a terminal, plain lines in a CI log.

A terminal gets rich's live bars. Anywhere else (stdout piped to a CI log or a file; stderr with `--json`) a bar
cannot redraw itself and rich would print one bar at the end, cut to the width (`1500/15…`), so each step prints
plain lines instead: one when it starts, one every `interval_s()` seconds while it runs (done/total, the failed
requests among them, rate, ETA), one when it ends. Every line fits in 80 columns; a long step description is
wrapped, never cut. Failed requests are counted as they come back (`count_done`), in the bar and in the lines:
`load: 1,197/2,000 (60%), 1,190 failed, ...`.
"""

from __future__ import annotations

import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from ..border.env import PROGRESS_INTERVAL, env_number
from ..data_classes import dataclass

if TYPE_CHECKING:
    from ..backends import Generation

__all__ = ["progress_bar", "step", "PlainProgress", "INTERVAL_ENV", "interval_s", "WIDTH", "count_done", "count_kept"]

INTERVAL_ENV = PROGRESS_INTERVAL.name
"""Seconds between two progress lines of a running step in a CI log (default 10)."""
WIDTH = 80
"""No plain progress line is longer."""


def interval_s() -> float:
    """The seconds between progress lines: RELEASEGATE_PROGRESS_INTERVAL_S, else 10; a value that is not a
    number of seconds above 0 and at most a day (inf, nan, a negative, a word) is an InputError naming it."""
    return env_number(PROGRESS_INTERVAL)


def progress_bar(console: Console, show: bool) -> Progress | PlainProgress:
    """A bar for a terminal, plain lines for a log (`PlainProgress`); nothing at all when `show` is off."""
    if show and not console.is_terminal:
        return PlainProgress(console, interval_s())
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), _FailedColumn(),
        TimeElapsedColumn(), TimeRemainingColumn(), console=console, disable=not show, transient=False,
    )


class _FailedColumn(ProgressColumn):
    """`1,190 failed` beside the count, once a request of the step failed."""

    def render(self, task: Task) -> Text:
        failed = task.fields.get("failed", 0)
        return Text(f"{failed:,} failed", style="red") if failed else Text("")


def count_kept(bar: Progress | PlainProgress, task_id: TaskID, gen: Generation,
               kept: Callable[[Generation], object]) -> None:
    """One load request completed: handed to `kept` (the attempts ledger, `record.ledger`), then counted."""
    kept(gen)
    count_done(bar, task_id, failed=gen.error is not None)


def count_done(bar: Progress | PlainProgress, task_id: TaskID, done: float = 1, *, failed: int = 0) -> None:
    """Count `done` more requests of a step, `failed` of them failed, on a bar or in plain lines (any thread)."""
    if isinstance(bar, PlainProgress):
        bar.advance(task_id, done, failed=failed)
        return
    if failed:
        so_far = next((t.fields.get("failed", 0) for t in bar.tasks if t.id == task_id), 0)
        bar.update(task_id, advance=done, failed=so_far + failed)
    else:
        bar.advance(task_id, done)


@contextmanager
def step(console: Console, show: bool, description: str) -> Iterator[None]:
    """A step with no count (loading the model, writing the reports): a spinner in a terminal; in a log a line
    when it starts, one every interval while it runs and one with its time when it ends."""
    if not show:
        yield
    elif console.is_terminal:
        with console.status(description):
            yield
    else:
        with PlainProgress(console, interval_s()) as plain:
            plain.add_task(description, total=None, counted=False)
            yield


@dataclass
class _Task:
    description: str
    total: float | None
    counted: bool
    started: float
    done: float = 0
    failed: int = 0
    finished: bool = False


class PlainProgress:
    """rich Progress's `add_task` / `advance` / `update`, written as plain lines (see the module docstring).
    A background thread writes the periodic lines, so a step that advances seldom (a slow batch) or not at all
    (a model loading) still shows it is alive; `clock` is injectable for tests."""

    def __init__(self, console: Console, interval: float, *, clock: Callable[[], float] = time.monotonic, ticker: bool = True) -> None:
        self.console, self.interval, self.clock = console, interval, clock
        self.tasks: list[_Task] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick_forever, name="releasegate-progress", daemon=True) \
            if ticker else None

    def __enter__(self) -> PlainProgress:
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.interval + 1)
        for task_id in range(len(self.tasks)):
            self._finish(task_id, stopped=exc_type is not None)

    def add_task(self, description: str, total: float | None = None, counted: bool = True, **_: Any) -> TaskID:
        with self._lock:
            self.tasks.append(_Task(description, total, counted, self.clock()))
            task_id = TaskID(len(self.tasks) - 1)  # rich's task ids: the bar and these lines are used alike
        self._write(_wrap(f"{description}: started" + (f", {_count(total)} to do" if total else "")))
        return task_id

    def advance(self, task_id: TaskID, advance: float = 1, *, failed: int = 0) -> None:
        """Count `advance` more done, `failed` of them failed (from any thread); the last one ends the task with its
        line."""
        with self._lock:
            task = self.tasks[task_id]
            task.done += advance
            task.failed += failed
            complete = task.total is not None and bool(task.total) and task.done >= task.total
        if complete:
            self._finish(task_id, stopped=False)

    def update(self, task_id: TaskID, *, description: str | None = None, **_: Any) -> None:
        """A new description (a sweep's next step) is a step of its own: it gets its line."""
        task = self.tasks[task_id]
        if description is not None and description != task.description:
            task.description = description
            self._write(_wrap(description))

    def tick(self) -> None:
        """One line per running task: what the background thread writes every interval."""
        for task in list(self.tasks):
            if not task.finished:
                self._write([status_line(task, self.clock())])

    def _tick_forever(self) -> None:
        while not self._stop.wait(self.interval):
            self.tick()

    def _finish(self, task_id: int, *, stopped: bool) -> None:
        with self._lock:
            task = self.tasks[task_id]
            if task.finished:
                return
            task.finished = True
        elapsed = self.clock() - task.started
        words = ["stopped" if stopped else "done"]
        if task.counted:
            words.append(f"{_count(task.done)}" + (f"/{_count(task.total)}" if task.total else ""))
        words.append(f"in {_seconds(elapsed)}")
        rate = f", {_rate(task.done, elapsed)}" if task.counted and task.done and elapsed > 0 else ""
        failed = f", {task.failed:,} failed" if task.failed else ""
        self._write([_fit(f"{_label(task)}: {' '.join(words)}{failed}{rate}")])

    def _write(self, lines: list[str]) -> None:
        for line in lines:
            self.console.print(line, markup=False, highlight=False, soft_wrap=True)


def status_line(task: _Task, now: float) -> str:
    """`load: 740/1,500 (49%), 12 failed, 61.2/s, ETA 12.1 s, 12.0 s in`: what a running step has done (the failed
    requests among them, when any), in WIDTH columns."""
    elapsed = now - task.started
    parts = []
    if not task.counted:
        parts.append("running")
    elif task.total:
        parts.append(f"{_count(task.done)}/{_count(task.total)} ({task.done / task.total:.0%})")
    else:
        parts.append(f"{_count(task.done)} done")
    if task.failed:
        parts.append(f"{task.failed:,} failed")
    if task.counted and task.done and elapsed > 0:
        parts.append(_rate(task.done, elapsed))
        if task.total:
            parts.append(f"ETA {_seconds(max(0.0, task.total - task.done) * elapsed / task.done)}")
    parts.append(f"{_seconds(elapsed)} in")
    return _fit(f"{_label(task)}: " + ", ".join(parts))


def _label(task: _Task) -> str:
    """The short name of a step in its periodic lines ('load' for 'load: closed loop, 8 in flight, ...')."""
    head = task.description.split(":", 1)[0]
    return head if len(head) <= 48 else head[:47] + "…"


def _wrap(text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, subsequent_indent="  ", break_long_words=True) or [""]


def _fit(line: str) -> str:
    return line if len(line) <= WIDTH else line[: WIDTH - 1] + "…"


def _count(n: float | None) -> str:
    return "?" if n is None else f"{n:,.0f}" if float(n).is_integer() else f"{n:,.1f}"


def _rate(done: float, elapsed: float) -> str:
    per_s = done / elapsed
    return f"{per_s:.3g}/s" if per_s >= 0.1 else f"{per_s * 60:.3g}/min"


def _seconds(s: float) -> str:
    if s < 60:
        return f"{s:.1f} s"
    minutes, seconds = divmod(int(round(s)), 60)
    return f"{minutes} min {seconds:02d} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"
