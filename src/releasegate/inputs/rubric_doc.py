"""A rubric file as written, read once after JSON Schema validation (`rubric.load_rubric` builds the `Rubric`
from it). The schema says what a rubric may hold; these models only give its parts types and defaults.
Unknown keys are kept (`extra="allow"`), as the schema is the judge of them.

`slice:` mappings, `review:` and `judge:` stay mappings here: a slice is the user's own {tag: value}, and the
review and judge sections are read by their own modules (`review_policy`, `judge_settings`)."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from ..model_base import Model
from ..record.metrics import DEFAULT_MAX_ITL_BATCHED_SHARE
from ..record.record_parts import DEFAULT_MIN_PAIR_SHARE

__all__ = ["RubricDoc", "CriterionDoc", "RuleDoc", "RulesFileDoc", "EvaluateDoc", "BaselineDoc"]


class _Doc(Model):
    model_config = ConfigDict(frozen=True, extra="allow")


class CriterionDoc(_Doc):
    """One entry of `criteria:`."""

    metric: str
    op: str
    threshold: float
    name: str | None = None
    slice: dict[str, Any] = Field(default_factory=dict)
    min_samples: int = 1
    confidence: float | None = None
    phase: str = "quality"
    probe: str | None = None


class RuleDoc(_Doc):
    """One forbidden-response rule: regexes and phrases, or (kind guard) a guard's codes."""

    category: str
    kind: str | None = None
    regex: list[str] = Field(default_factory=list)
    phrases: list[str] = Field(default_factory=list)
    description: str = ""
    guard: str | None = None
    codes: list[str] = Field(default_factory=list)


class RulesFileDoc(_Doc):
    """A standalone forbidden-rules file (`forbidden: rules.yaml`)."""

    rules: list[RuleDoc]


class EvaluateDoc(_Doc):
    """One entry of `evaluate:`."""

    name: str
    module: str
    key: str | None = None
    slice: dict[str, Any] = Field(default_factory=dict)


class SignerDoc(_Doc):
    """One entry of `baseline.signed_by`: a name and an Ed25519 public key in PEM."""

    name: str
    key: str


class BaselineDoc(_Doc):
    """`baseline:`: a run directory, or a blessed baseline's name and the reports folder it is blessed in, and
    the keys whose signature a blessing needs to count (`signed_by`)."""

    run: str | None = None
    blessed: str | None = None
    reports: str = "reports"
    signed_by: list[SignerDoc] = Field(default_factory=list)


class ReleaseDoc(_Doc):
    """`release:`."""

    allow_overrides: list[str] = Field(default_factory=list)


class RubricDoc(_Doc):
    """A rubric file."""

    criteria: list[CriterionDoc]
    name: str | None = None
    forbidden: str | list[RuleDoc] | None = None
    evaluate: list[EvaluateDoc] = Field(default_factory=list)
    confidence: float | None = None
    latency_from: str = "auto"
    allow_insufficient: bool = False
    stop_when_decided: bool = False
    max_client_lag_share: float = 0.1
    max_itl_batched_share: float = DEFAULT_MAX_ITL_BATCHED_SHARE
    min_load_pair_share: float = DEFAULT_MIN_PAIR_SHARE
    baseline: dict[str, Any] | None = None
    """Kept as written: the snapshot records it with its run resolved (`rubric._baseline`)."""
    review: dict[str, Any] | None = None
    judge: dict[str, Any] | None = None
    release: ReleaseDoc | None = None
