"""A rubric's `baseline:` (`inputs.rubric.Rubric.baseline`) read into its type where the gate reads it."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict

from ..model_base import Model
from ..record.capacity_sweep import Number

__all__ = ["BaselineSpec", "baseline_spec"]


def _name(value: Any) -> Any:
    return value if value is None else str(value)


class Signer(Model):
    """One of `baseline.signed_by`."""

    name: str
    key: str


class BaselineSpec(Model):
    """{'run': absolute path, 'margins', 'confidence', 'metrics'}, with 'blessed' (the name), 'reports'
    (absolute), 'max_age_days' and 'on_stale' when the run is a blessed baseline."""

    model_config = ConfigDict(extra="allow")

    run: str
    metrics: list[str] | None = None
    """The metrics the rubric compares (None: every one); a request that fails more is always compared."""
    margins: dict[str, Any] = {}
    confidence: float = 0.95
    blessed: Annotated[str | None, BeforeValidator(_name)] = None
    reports: str = ""
    max_age_days: Number | None = None
    on_stale: str = "warn"
    signed_by: list[Signer] = []
    """The Ed25519 public keys (PEM) one of which must have signed the blessing (`bless --key`)."""

    def signers(self) -> tuple[tuple[str, str], ...]:
        return tuple((s.name, s.key) for s in self.signed_by)


def baseline_spec(spec: dict[str, Any]) -> BaselineSpec:
    """The rubric's baseline read into its type (the rubric has checked it: `inputs.rubric`)."""
    return BaselineSpec.model_validate(spec)
