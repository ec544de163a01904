"""The contract of a gate feature, and the registry the gate loops over.

A gate feature (quality scorers, the forbidden rules with guard and probes, human review, latency and load,
capacity, stable answers, the response-cache probe, the LLM judge, the baseline comparison, cost, ...) is one
place that declares:

- `metrics`: the metrics it serves (name -> direction and meaning), added to the metric catalogue so a rubric may
  name them, and `measure(ctx, query)`: their value over the records a criterion chooses (None: not its metric);
- `evidence(ctx, criterion, value)`: what it knows of the measurement beyond the value (a capacity's range, the
  cases a failure names), handed to `decision.criterion.decide_criterion`;
- `rule(ctx, results)`: the criteria it adds (a baseline's rows, human approval) or the adjustments it asks of the
  others, each through a rule of `decision/` (a judge's or a guard's calibration);
- `section(ctx, results)`: its part of the report (report.json keys, typed by `record.gate_report`), and
  `summary(ctx, results)`: optional title and rows every renderer shows as they are (`record.gate_report.
  FeatureSection`), so a feature with no renderer of its own still appears in every format;
- `defaults(ctx)`: criteria it adds where the rubric does not say (the default error guard over the attempts no
  error criterion of the rubric covers);
- `needs`: the features it reads through `ctx.section_of` (the guard reads review labels).

The gate (`pipeline.gate`) walks the registry in order: the rubric's criteria are measured and decided, then each
feature's rule runs, then each feature's section is collected. Registering a feature imports none of its code: a
built-in feature is registered by module name and imported the first time a gate runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

from ..data_classes import dataclass
from ..record.metrics import BOUNDED_METRICS, KNOWN_METRICS, MetricValue

if TYPE_CHECKING:  # the context is defined above this module's layer-mates; typing only
    from ..decision.criterion import CriterionEvidence, CriterionResult
    from .context import GateContext

__all__ = ["MetricQuery", "GateFeature", "FeatureMetric", "register", "registered", "unregister"]


@dataclass(frozen=True)
class MetricQuery:
    """A metric asked of the run: by a criterion (its slice, confidence and phase) or by the summary."""

    name: str
    slice: dict[str, Any] | None = None
    confidence: float | None = None
    phase: str = "quality"


@dataclass(frozen=True)
class FeatureMetric:
    """A metric a feature serves: how it reads and whether a criterion on it may take a `confidence`."""

    direction: str
    """'higher' or 'lower' is better."""
    meaning: str
    bounded: bool = False


Measure = Callable[["GateContext", MetricQuery], MetricValue | None]
Evidence = Callable[["GateContext", Any, MetricValue], "CriterionEvidence | None"]
Rule = Callable[["GateContext", list["CriterionResult"]], list["CriterionResult"]]
Section = Callable[["GateContext", list["CriterionResult"]], dict[str, Any]]


@dataclass(frozen=True)
class GateFeature:
    """One gate feature (see the module docstring); every part is optional."""

    name: str
    metrics: dict[str, FeatureMetric] = field(default_factory=dict)
    measure: Measure | None = None
    evidence: Evidence | None = None
    rule: Rule | None = None
    section: Section | None = None
    summary: Section | None = None
    """report.json `sections` rows of this feature: {'title', 'rows': [{'label', 'value'}]} or {} for none."""
    defaults: Callable[[GateContext], tuple[Any, ...]] | None = None
    """Criteria it adds where the rubric says nothing (the default error guard over what no criterion covers)."""
    needs: tuple[str, ...] = ()


@dataclass
class _Entry:
    name: str
    module: str | None
    feature: GateFeature | None


_REGISTRY: list[_Entry] = []
_ADDED: set[str] = set()
"""Metrics a registered feature added to the catalogue (not the record's own): what `unregister` may take out."""


def register(feature: GateFeature | str, *, name: str | None = None, before: str | None = None) -> None:
    """Add a feature: a `GateFeature`, or the name of a module whose `FEATURE` is one (imported when first
    needed). `before`: the name of a registered feature it goes in front of (its rule runs earlier)."""
    if isinstance(feature, GateFeature):
        entry = _Entry(feature.name, None, feature)
        _catalogue(feature)
    else:
        entry = _Entry(name or feature.rpartition(".")[2], feature, None)
    unregister(entry.name)
    at = next((i for i, e in enumerate(_REGISTRY) if e.name == before), len(_REGISTRY))
    _REGISTRY.insert(at, entry)


def unregister(name: str) -> None:
    """Remove a feature by name (a test's toy feature after the test), and the metrics only it served from the
    catalogue, so a rubric naming them is refused again."""
    gone = [e.feature for e in _REGISTRY if e.name == name and e.feature is not None]
    _REGISTRY[:] = [e for e in _REGISTRY if e.name != name]
    kept = {m for e in _REGISTRY if e.feature is not None for m in e.feature.metrics}
    for metric in ({m for f in gone for m in f.metrics} & _ADDED) - kept:
        _ADDED.discard(metric)
        KNOWN_METRICS.pop(metric, None)
        BOUNDED_METRICS.discard(metric)


def registered() -> Sequence[GateFeature]:
    """Every registered feature, in order, its module imported now if it was registered by name."""
    for entry in _REGISTRY:
        if entry.feature is None:
            assert entry.module is not None
            entry.feature = importlib.import_module(entry.module).FEATURE
            _catalogue(entry.feature)
    return [e.feature for e in _REGISTRY if e.feature is not None]


def _catalogue(feature: GateFeature) -> None:
    """A feature's own metrics join the catalogue the rubric is checked against and the reports describe."""
    for metric, spec in feature.metrics.items():
        if metric not in KNOWN_METRICS:
            _ADDED.add(metric)
        KNOWN_METRICS.setdefault(metric, (spec.direction, spec.meaning))
        if spec.bounded:
            BOUNDED_METRICS.add(metric)
