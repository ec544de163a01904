"""How `check` runs, as one typed object its stages pass along (never a dict, never a dozen keywords)."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from rich.console import Console

from ..data_classes import dataclass
from ..record.stage_timing import Timing

__all__ = ["CheckOptions"]


@dataclass(frozen=True)
class CheckOptions:
    """What the caller of `check` decides: where it prints, what it may reuse, what the run records of it."""

    console: Console
    progress: bool = True
    """Show rich progress bars (off in CI logs and tests)."""
    run_id: str | None = None
    """The run directory's name (default: the config's `run_id`, else a new timestamped id)."""
    allow_pending: bool = False
    """Let pending required human review through (the verdict says it was waived)."""
    limit: int | None = None
    """Only recorded: the caller already cut the cases, so a resumed run plans the same ones."""
    use_cache: bool | None = None
    """The response cache: None keeps the config's (or a resumed run's) own choice."""
    target_overrides: dict[str, Any] | None = None
    """How `config.target` differs from the config file (a matrix variant), recorded in run.json."""
    stop_when_decided: bool = False
    """Ask the cases in the seed's random order and stop once every criterion is decided (`gate.stopping`)."""
    timing: Timing = field(default_factory=Timing)
    """The session's clock, when the caller started it (`record.stage_timing`)."""
    hand_over_cases: bool = False
    """The caller gives its list of cases up: `check` empties it once the cases are run, before judging (a suite
    of 100,000 cases is not held through judging and the reports). False for a caller that runs them again (a
    matrix's variants)."""

    ends_command: bool = True
    """The command ends with this run: once its reports are on disk a signal no longer stops it, and the process
    exits with its verdict's code (`Interruption.finish`). False for a matrix's variants: the command goes on to
    the next, and a signal between them stops it (never exits with a finished variant's code)."""

    def let_go(self, cases: list[Any]) -> None:
        """Empty the caller's list of cases once they are run, when it was handed over: a suite of 100,000 cases
        (and a resume's recorded ones) is otherwise held beside every record the gate reads."""
        if self.hand_over_cases:
            cases.clear()
