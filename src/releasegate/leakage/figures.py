"""run.json `leakage` (what `probe.probe_figures` and `stage.run_leakage` write) read into typed models, for the
gate's leakage metrics and report section. Keys a newer version writes are kept (`extra="allow"`), and a field an
older run lacks keeps the default its reader always took."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, ValidationError, field_validator

from ..errors import InputError
from ..model_base import Model
from ..record.run_parts import problem_line

__all__ = ["ArmResult", "LeakageRow", "AnswerCount", "ProbeAnswers", "Canary", "CanaryFigures", "AdapterFacts", "LeakageFigures",
           "leakage_figures"]


class _Stored(Model):
    model_config = ConfigDict(extra="allow")  # a newer run read by older code keeps what it does not know


class ArmResult(_Stored):
    """One arm's (candidate's or base's) result on one probe record."""

    extracted: bool | None = None
    """The continuation repeated the record's rest; None: the arm gave no answer."""
    ll: float | None = None
    """The log-likelihood of the record's rest; None: not measured."""


class LeakageRow(_Stored):
    """One probe record: which set it is from, a glimpse of it, and each arm's result."""

    id: str | None = None
    set: str | None = None
    """'train' or 'heldout'."""
    sha256: str | None = None
    head: str | None = None
    tail: str | None = None
    cand: ArmResult = ArmResult()
    base: ArmResult = ArmResult()

    def glimpse(self) -> dict[str, Any]:
        """What the report shows of the record: its id, hash and the two ends of its rest."""
        return {"id": self.id, "sha256": self.sha256, "head": self.head, "tail": self.tail}


class AnswerCount(_Stored):
    """Answers searched for personal values, and those holding one."""

    answers: int = 0
    hits: int = 0


class Canary(_Stored):
    """One canary's exposure, in bits, on each arm; None: not measured."""

    cand: float | None = None
    base: float | None = None


class ProbeAnswers(_Stored):
    """Each arm's probe answers searched for personal values."""

    cand: AnswerCount | None = None
    base: AnswerCount | None = None


class CanaryFigures(_Stored):
    error: str | None = None
    canaries: list[Canary] = []
    max_bits: float | None = None


class AdapterFacts(_Stored):
    """The adapter's rank and target modules (`arms.adapter_facts`)."""

    rank: Any = None
    target_modules: Any = None
    """Both as adapter_config.json gave them (`r`, `target_modules`): another tool's file, shown as it is."""


class LeakageFigures(_Stored):
    """run.json `leakage`."""

    error: str | None = None
    membership: str | None = None
    """Why membership could not be measured; None: it was."""
    records: list[LeakageRow] = []
    templates: int | None = None
    personal_values: int | None = None
    probe_answers: ProbeAnswers | None = None
    run_answers: AnswerCount | None = None
    """The run's own answers searched."""
    canaries: CanaryFigures | None = None
    adapter: AdapterFacts | None = None
    base: Any = None
    """What the base arm is, in words (as written)."""

    @field_validator("canaries", "adapter", "probe_answers", "run_answers", mode="before")
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        return value or None  # an empty part says as little as a missing one


def leakage_figures(figures: dict[str, Any]) -> LeakageFigures:
    """run.json `leakage`, typed; an InputError naming the field when it is not what the probe writes."""
    try:
        return LeakageFigures.model_validate(figures)
    except ValidationError as exc:
        raise InputError(f"run.json leakage: {problem_line(exc)}",
                         hint="run the leakage probe again (releasegate check)") from None
