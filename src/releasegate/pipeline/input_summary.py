"""What `releasegate validate` reports: the summary of the inputs (`inputs.validation.input_summary`) read once
into a typed model, with what validate adds (the effective rubric's hash, the endpoints `--probe` reached)."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from ..model_base import Model

__all__ = ["Reached", "Summary"]


class Reached(Model):
    """An endpoint `--probe` reached."""

    name: str
    where: str
    seconds: float


class Summary(Model):
    """What `validate --json` prints (`inputs.validation.input_summary`, then what validate adds)."""

    model_config = ConfigDict(extra="allow")

    config: str
    target: str
    rubric: str
    criteria: int
    forbidden_rules: int
    suites: dict[str, int]
    cases: int
    valid: bool
    warnings: list[str]
    judging_overrides: list[str]
    judge: str | None = None
    extends: list[str] | None = None
    set: list[Any] | None = None
    effective_rubric_sha256: str | None = None
    endpoints: list[Reached] = []
