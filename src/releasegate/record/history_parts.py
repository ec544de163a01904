"""What the run history keeps of a run's manifest.json and report.json, read leniently (`history_index`).

The history lists every run directory under a reports root, hand-made and damaged ones included: a part of
another shape is left out of its row, never an error. So each part the row is made of is of any type here
(`object`) and the row keeps it only where it is of the type the row needs.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import ConfigDict

from ..model_base import Model
from .stored_manifest import Seal

__all__ = ["ManifestFacts", "ReportFacts", "JudgedFacts", "CriterionFacts", "SectionFacts", "SectionRowFacts",
           "MetricFacts", "OverrideFacts", "loose", "as_dict", "as_list"]


class _Loose(Model):
    model_config = ConfigDict(extra="allow")


_M = TypeVar("_M", bound=_Loose)


class InputFacts(_Loose):
    name: object = None
    role: object = None


class TargetFacts(_Loose):
    fingerprint: object = None


class ManifestFacts(_Loose):
    """The manifest's suites, target fingerprint and seal (the seal as `stored_manifest` checked it)."""

    inputs: list[InputFacts] | None = []
    target: TargetFacts | None = None
    sealed: Seal | None = None


class MetricFacts(_Loose):
    value: object = None


class OverrideFacts(_Loose):
    key: object = None
    by: object = None


class JudgedFacts(_Loose):
    snapshot_sha256: object = None
    effective_sha256: object = None
    overrides: object = None


class CriterionFacts(_Loose):
    name: object = None
    metric: object = None
    op: object = None
    threshold: object = None
    value: object = None
    verdict: object = None
    bounds: object = None
    confidence: object = None


class SectionRowFacts(_Loose):
    label: object = None
    value: object = None


class SectionFacts(_Loose):
    feature: object = None
    title: object = None
    rows: object = None


class ReportFacts(_Loose):
    verdict: object = None
    metrics: object = None
    judged_by: object = None
    criteria: object = None
    sections: object = None


def loose(model: type[_M], raw: object) -> _M | None:
    """`raw` as `model` when it is an object (a JSON mapping); None for any other type."""
    return model.model_validate(raw) if isinstance(raw, dict) else None


def as_dict(raw: object) -> dict[str, Any]:
    """`raw` when it is a mapping, else empty."""
    return raw if isinstance(raw, dict) else {}


def as_list(raw: object) -> list[Any]:
    """`raw` when it is a list, else empty."""
    return raw if isinstance(raw, list) else []
