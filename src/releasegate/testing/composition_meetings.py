"""The composition matrix's meetings of three: features met beyond the pairs, where one of them changes what the
others may decide. A run that stops when decided (`stopping`) against a baseline (`baseline`) decides each compared
rate early on its paired differences; met with a guard (whose forbidden verdicts its calibration corrects after the
run), with double-labelled human review, and with served variants (each variant a run of its own, by
`releasegate matrix`).

Each meeting is the pairs' project (`composition.build`) with its rubric adjusted so that the stopping run can
decide early within the fixture's 40 cases: the baseline part's `accuracy >= 0` left out (a limit no e-process can
show: it keeps a stopping run going), the default error guard (`error_rate <= 0.01`, which no e-process decides on
40 cases) replaced by `error_rate <= 0.3`, the baseline compared on accuracy with a margin of 0.2, and the baseline
run made whole (a baseline that stopped early proves nothing about a run). The baseline part set to fail answers
half its cases wrong (accuracy 1.0 -> 0.5): a quarter, as in the pairs, is a loss whose bound on 40 cases straddles
a margin of 0.2 (INCONCLUSIVE is then the truth). Each meeting runs all good (truth PASS) and with each listed part
set to fail (truth FAIL).
tests/test_composition_meetings.py runs them; scripts/composition_table.py lists them in docs/composition.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .composition import SERVED

__all__ = ["Meeting", "MEETINGS", "stopping_against_a_baseline"]


def stopping_against_a_baseline(rubric: dict[str, Any], baseline_run: bool) -> None:
    """The rubric of a stopping run against a baseline that can decide early (see the module docstring)."""
    kept = [c for c in rubric.get("criteria", []) if c.get("threshold") != 0]  # the baseline part's `>= 0`
    rubric["criteria"] = [*kept, {"metric": "error_rate", "op": "<=", "threshold": 0.3}]
    if baseline_run:
        rubric["stop_when_decided"] = False
        return
    rubric["baseline"] = {**rubric["baseline"], "metrics": ["accuracy"], "margins": {"accuracy": 0.2}}


@dataclass(frozen=True)
class Meeting:
    """Features met in one project, the parts set to fail in turn (None: all good), and how its rubric changes."""

    features: tuple[str, ...]
    bad: tuple[str | None, ...]
    adjust: Callable[[dict[str, Any], bool], None] = stopping_against_a_baseline
    """Changes the rubric (a dict, as rubric.yaml holds it) of the run, or of the baseline run (True)."""
    stops_early: bool = True
    """All good, the run stops before its last case (its early decision is what the meeting is about)."""
    wrong_every: int = 2
    """The baseline part set to fail answers every this-many-th case wrong (`composition.Mode.wrong_every`)."""


MEETINGS: tuple[Meeting, ...] = (
    # a guard's verdicts are asked after the cases, so they hold a stopping run to its end (docs/stopping.md); the
    # gate then decides each row on its e-process all the same
    Meeting(("stopping", "baseline", "guard"), (None, "stopping", "baseline", "guard"), stops_early=False),
    Meeting(("stopping", "baseline", "review"), (None, "stopping", "baseline", "review")),
    Meeting(("stopping", "baseline", SERVED), (None, "stopping", "baseline")),
)
