"""Corpus-level metrics from the `evaluate` library: by hub name, local path, or `releasegate:<name>`.

`evaluate.load("name")` reaches for the hub; offline it fails with a misleading message, so we set
HF_HUB_OFFLINE before importing and translate the failure into what to do instead.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from ..errors import InputError
from ..judging.metrics import MetricValue
from ._text import as_text

__all__ = ["resolve_module", "load_metric", "compute_evaluate_metric"]


def resolve_module(module: str) -> str:
    """`releasegate:field_accuracy` (or rouge, bleu, chrf) -> the shipped module's path; other names pass through."""
    if module.startswith("releasegate:"):
        name = module.split(":", 1)[1]
        path = resources.files("releasegate.scorers.metrics_local").joinpath(name, f"{name}.py")
        if not Path(str(path)).exists():
            raise InputError(f"no shipped evaluate metric '{name}'", field="evaluate.module", hint="shipped: field_accuracy, rouge, bleu, chrf")
        return str(path)
    return module


def load_metric(module: str):
    """Load an evaluate metric without touching the network unless the user allowed it."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
    try:
        import evaluate
    except ImportError:  # pragma: no cover - evaluate is a declared dependency
        raise InputError("the 'evaluate' package is not installed", hint="pip install evaluate") from None
    path = resolve_module(module)
    is_local = Path(path).exists()
    try:
        return evaluate.load(path)
    except Exception as exc:  # evaluate raises many types here; each means "could not load"
        if is_local:
            raise InputError(f"evaluate metric failed to load: {exc}", file=path) from None
        raise InputError(
            f"evaluate metric '{module}' is not available offline",
            field="evaluate.module",
            hint="copy the metric's folder (its .py script) into the repo and set module to that path, "
            "or set HF_HUB_OFFLINE=0 where the hub is reachable",
        ) from None


def compute_evaluate_metric(metric, records: list, *, key: str | None, name: str) -> MetricValue:
    """Run a loaded metric over the successful outputs of `records`; expected answers compared as text."""
    done = [r for r in records if r.output is not None]
    if not done:
        return MetricValue(None, 0)
    result = metric.compute(predictions=[r.output for r in done], references=[as_text(r.expected) for r in done])
    wanted = key or name
    if wanted not in result:
        value = next(iter(result.values())) if len(result) == 1 else None
        if value is None:
            raise InputError(f"evaluate metric returned {sorted(result)}; set 'key' to one of them", field=f"evaluate.{name}")
    else:
        value = result[wanted]
    return MetricValue(None if value is None else float(value), len(done))
