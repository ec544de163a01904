"""The typed results of the commands that decide beside the gate: `compare`, `servers`, `matrix` and the served
variants. Each is built once by its pipeline around the decision module's verdict, exit code and reason (and,
for a choice, the chosen name and why), and every renderer reads it through these models: a result without its
decision is an error where it is made, never a report that reads green."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict

from ..model_base import Model

__all__ = ["Decided", "CompareResult", "ServersResult", "VariantsResult", "MatrixResult", "typed"]

Verdict = Literal["PASS", "FAIL", "NEEDS_REVIEW", "INCONCLUSIVE", "TARGET_ERROR"]


class Decided(Model):
    """What every decided result carries."""

    model_config = ConfigDict(extra="allow")  # the rows and figures around the decision, as each command has them

    verdict: Verdict
    exit_code: Literal[0, 1, 3, 4]
    verdict_reason: str
    """Why, in one line (the decision module's words)."""


class CompareResult(Decided):
    """`releasegate compare BASELINE CANDIDATE`."""

    baseline_run: str
    candidate_run: str
    shared_cases: int
    pairs_answered: int
    """Shared cases both runs answered: the pairs every quality rate is compared on."""
    rows: list[dict[str, Any]]
    incomplete: str | None = None
    target_error: str | None = None


class ServersResult(Decided):
    """`releasegate servers RUN...`."""

    reference: str
    targets: list[dict[str, Any]]
    recommended: str | None
    """The chosen run id; None: nothing was chosen."""
    recommendation: str


class VariantsResult(Decided):
    """`releasegate matrix` over a config's served variants."""

    reference: str
    variants: list[dict[str, Any]]
    choice: str | None
    """The chosen variant; None: nothing was chosen."""
    choice_reason: str
    rule: str | None = None
    """What the choice was ranked on: cost, capacity or latency (None: the reference, with nothing to rank on)."""


class MatrixResult(Decided):
    """`releasegate matrix` over in-process variants."""

    reference: str
    variants: list[dict[str, Any]]


def typed(model: type[Decided], result: dict[str, Any]) -> dict[str, Any]:
    """`result` checked against `model`, returned as it was: what a pipeline hands on."""
    model.model_validate(result)
    return result
