"""Where the wall time of one `check` went: run.json `timing` and `check --json`'s `timing`.

The parts (seconds, each measured on a monotonic clock around its stage) add up to `total_s`, `other_s` being
what no part covers (cache look-ups, scoring and journaling each batch, seals, the prefix-cache probe):

    import_s       process start to `check` starting: Python, the CLI and the run's library (None when `check`
                   did not start the process: called from Python, or a `matrix` variant)
    inputs_s       config, suites and rubric read and validated, the manifest's hashes
    model_load_s   the backend loaded: for hf its libraries' imports (torch, transformers, peft), the weights,
                   the adapter and the merge
    generation_s   this session's fresh responses generated (`generation_seconds` counts every session)
    load_phase_s   the load phase (or capacity sweep), warm-up included
    judging_s      scores, metrics and verdicts (the LLM judge and evaluate metrics included)
    reports_s      report.json, .md, .html, .junit.xml and .csv written
    total_s        import_s (when known) plus the wall time of `check` up to the reports on disk
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Timing", "PARTS", "process_age_s", "mark_process_entry"]

PARTS = ("import_s", "inputs_s", "model_load_s", "generation_s", "load_phase_s", "judging_s", "reports_s")
_ENTRY: dict[str, float] = {}


def mark_process_entry() -> None:
    """The CLI's entry point started this process: `import_s` can be read from the process's age."""
    age = process_age_s()
    if age is not None:
        _ENTRY["import_s"] = age
        _ENTRY["at"] = time.monotonic()


def process_age_s() -> float | None:
    """Seconds since this process started, from /proc (10 ms ticks); None where there is no /proc."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        with open("/proc/uptime", "rb") as fh:
            uptime = float(fh.read().split()[0])
        return max(0.0, uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


class Timing:
    """The parts of one session's wall time, added up as its stages run (see the module docstring)."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.parts: dict[str, float] = dict.fromkeys(PARTS[1:], 0.0)
        self.import_s: float | None = None
        if "at" in _ENTRY:  # the CLI's start up to now: imports and option parsing
            self.import_s = _ENTRY.pop("import_s") + (self.started - _ENTRY.pop("at"))

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.add(name, time.monotonic() - started)

    def add(self, name: str, seconds: float) -> None:
        self.parts[name] += seconds

    def as_dict(self) -> dict[str, float | None]:
        """The parts, `other_s` and `total_s`, rounded to the millisecond."""
        wall = time.monotonic() - self.started
        out: dict[str, float | None] = {"import_s": _ms(self.import_s)}
        out.update({name: _ms(seconds) for name, seconds in self.parts.items()})
        out["other_s"] = _ms(max(0.0, wall - sum(self.parts.values())))
        out["total_s"] = _ms(wall + (self.import_s or 0.0))
        return out


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 3)
