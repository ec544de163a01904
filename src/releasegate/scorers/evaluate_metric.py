"""Corpus-level metrics from the `evaluate` library: by hub name, local path, or `releasegate:<name>`.

`evaluate.load("name")` reaches for the hub; offline it fails with a misleading message, so we set
HF_HUB_OFFLINE before importing and translate the failure into what to do instead.

`import evaluate` pulls in datasets, transformers and torch (seconds): the shipped metrics are computed without it
(`shipped_metrics`), and any value is computed only when the run has none stored for the same module file and the same predictions and references (`evaluate_value`), so re-judging
a run reads its values instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from importlib import metadata, resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..border.files import is_dir, is_file, regular_entries, sha256_file, walk_files
from ..errors import InputError
from ..extras import install_command
from ..record.metrics import MetricValue
from ._text import as_text
from .shipped_metrics import SHIPPED, BadReference, ShippedMetric
from .stored import CorpusScores, digest_of, scorer_code

if TYPE_CHECKING:
    from ..inputs.rubric import EvaluateMetric
    from ..record.records import CaseRecord


class CorpusMetric(Protocol):
    """The one method the gate calls on a corpus metric: an `evaluate` module, or a shipped one (`ShippedMetric`)."""

    def compute(self, *, predictions: Sequence[Any], references: Sequence[Any]) -> Mapping[str, Any]: ...

__all__ = ["needs_evaluate", "resolve_module", "load_metric", "compute_evaluate_metric", "evaluate_value", "module_fingerprint"]


def resolve_module(module: str) -> str:
    """`releasegate:field_accuracy` (or rouge, bleu, chrf) -> the shipped module's path; other names pass through."""
    if module.startswith("releasegate:"):
        name = module.split(":", 1)[1]
        path = resources.files("releasegate.scorers.metrics_local").joinpath(name, f"{name}.py")
        if not Path(str(path)).exists():
            raise InputError(f"no shipped evaluate metric '{name}'", field="evaluate.module", hint="shipped: field_accuracy, rouge, bleu, chrf")
        return str(path)
    return module


def needs_evaluate(specs: Iterable[EvaluateMetric]) -> bool:
    """Whether any of the rubric's `evaluate:` metrics needs the `evaluate` library: the shipped ones
    (`releasegate:<name>`) are computed without it."""
    return any(not spec.shipped for spec in specs)


def _shipped_name(module: str) -> str | None:
    name = module.split(":", 1)[1] if module.startswith("releasegate:") else None
    return name if name in SHIPPED else None


def load_metric(module: str) -> CorpusMetric:
    """Load an evaluate metric without touching the network unless the user allowed it."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
    try:
        import evaluate
    except ImportError:  # pragma: no cover - evaluate is a declared dependency
        raise InputError("the 'evaluate' package is not installed", hint=f"install it with: {install_command('evaluate')}") from None
    path = resolve_module(module)
    is_local = Path(path).exists()
    try:
        metric: CorpusMetric = evaluate.load(path)  # evaluate has no type information
        return metric
    except Exception as exc:  # evaluate raises many types here; each means "could not load"
        if is_local:
            raise InputError(f"evaluate metric failed to load: {exc}", file=path) from None
        raise InputError(
            f"evaluate metric '{module}' is not available offline",
            field="evaluate.module",
            hint="copy the metric's folder (its .py script) into the repo and set module to that path, "
            "or set HF_HUB_OFFLINE=0 where the hub is reachable",
        ) from None


def compute_evaluate_metric(metric: CorpusMetric, records: Sequence[CaseRecord], *, key: str | None, name: str) -> MetricValue:
    """Run a loaded metric over the successful outputs of `records`; expected answers compared as text."""
    done = [r for r in records if r.output is not None]
    if not done:
        return MetricValue(None, 0)
    try:
        result = metric.compute(predictions=[r.output for r in done], references=[as_text(r.expected) for r in done])
    except BadReference as exc:  # a shipped metric's reference it cannot read: the case's, named
        case = done[exc.index] if 0 <= exc.index < len(done) else None
        where = f"case {case.case_id} of suite {case.suite}" if case is not None else "a case"
        raise InputError(f"evaluate metric '{name}' cannot score {where}: {exc}", field=f"evaluate.{name}",
                         hint="give it an expected JSON object, or drop the metric for that suite") from None
    wanted = key or name
    if wanted not in result:
        value = next(iter(result.values())) if len(result) == 1 else None
        if value is None:
            raise InputError(f"evaluate metric returned {sorted(result)}; set 'key' to one of them", field=f"evaluate.{name}")
    else:
        value = result[wanted]
    return MetricValue(None if value is None else float(value), len(done))


def evaluate_value(spec: EvaluateMetric, records: Sequence[CaseRecord], stored: CorpusScores | None = None) -> MetricValue:
    """The value of the rubric's `evaluate` metric `spec` over `records`: read from `stored` when it holds one
    computed by the same module file over the same predictions and references (and key), else computed (the
    module loaded once per process) and kept in `stored`."""
    done = [r for r in records if r.output is not None]
    if not done:
        return MetricValue(None, 0)
    key = corpus_fingerprint(spec, done)
    hit = stored.get(key) if stored is not None else None
    if hit is not None:
        return MetricValue(None if hit.value is None else float(hit.value), hit.n)
    value = compute_evaluate_metric(_loaded(spec.module, module_fingerprint(spec.module)), done, key=spec.key, name=spec.name)
    if stored is not None:
        stored.add(key, spec.name, value.value, value.n)
    return value


def corpus_fingerprint(spec: EvaluateMetric, done: Sequence[CaseRecord]) -> str | None:
    """What a corpus value depends on, hashed: the module's files, the evaluate version, the key and every
    prediction and reference in order. None for a hub module (its code is not in hand to hash): never stored."""
    module = module_fingerprint(spec.module)
    if module is None:
        return None
    items = [[r.output, as_text(r.expected)] for r in done]
    # the shipped metrics call sacrebleu and rouge_score: a new version of either may compute another value
    return digest_of({"module": module, "evaluate": _evaluate_version(), "key": spec.key, "name": spec.name,
                      "items": digest_of(items), "scorers": scorer_code()})


def module_fingerprint(module: str) -> str | None:
    """sha256 over a local module's files (a script and the Python files beside it, which it may import; or
    every file of its folder); None for a hub name."""
    path = Path(resolve_module(module))
    if is_file(path):  # regular files only, through the border: a FIFO or a link loop there is refused, not read
        beside = sorted({path, *regular_entries(path.parent, what="evaluate module folder", suffixes=(".py",))})
        return digest_of([[p.name, sha256_file(p, what="evaluate module")] for p in beside])
    if is_dir(path):
        files = walk_files(path, what="evaluate module directory", hidden=True)
        return digest_of([[str(p.relative_to(path)), sha256_file(p, what="evaluate module")] for p in files])
    return None


@cache
def _loaded(module: str, version: str | None) -> CorpusMetric:
    """One load per module and version of its files (`version`: a fingerprint that changes with them). A shipped
    metric (`releasegate:<name>`) is computed by its own function, without importing `evaluate`: the same code
    its module script runs (`shipped_metrics`)."""
    if (name := _shipped_name(module)) is not None:
        return ShippedMetric(name)
    return load_metric(module)


def _evaluate_version() -> str | None:
    try:
        return metadata.version("evaluate")
    except metadata.PackageNotFoundError:
        return None
