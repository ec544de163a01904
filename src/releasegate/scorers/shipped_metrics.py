"""The computations of the shipped corpus metrics (`releasegate:field_accuracy`, `rouge`, `bleu`, `chrf`).

Each shipped metric folder under `metrics_local/` is an `evaluate` module script, so `evaluate.load(path)` works
for whoever wants it; its `_compute` calls the function here. The gate calls the function directly
(`ShippedMetric`): `import evaluate` pulls in datasets, transformers' pipelines, torch and scipy (a third of an
endpoint `check`'s CPU) to compute a mean of a few string comparisons. One function per metric, so both ways give
the same value.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ..border.structured import json_loads
from ..text import json_equal

__all__ = ["SHIPPED", "ShippedMetric", "BadReference", "field_accuracy", "rouge", "bleu", "chrf", "ROUGE_TYPES"]

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")


def _first_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # a prediction nested past the parser's depth is no JSON
        start = text.find("{")
        if start == -1:
            return None
        try:
            value, _ = json.JSONDecoder().raw_decode(text[start:])
        except (ValueError, RecursionError):
            return None
    return value if isinstance(value, dict) else None


class BadReference(ValueError):
    """A reference a shipped metric cannot read (field_accuracy: no JSON object); `index`: its place among the
    references, so the caller names the case."""

    def __init__(self, index: int, why: str) -> None:
        super().__init__(why)
        self.index = index


def _reference_object(ref: str, index: int) -> dict[str, Any]:
    """A field_accuracy reference: a JSON object (its fields are what is counted), read through the border's
    depth limit; anything else is a BadReference, never an internal error."""
    try:
        want = json_loads(ref)
    except ValueError as exc:  # not JSON, or nested past the border's limit
        raise BadReference(index, f"its expected answer is not JSON ({str(exc).splitlines()[0][:80]})") from None
    if not isinstance(want, dict):
        raise BadReference(index, f"its expected answer is a JSON {type(want).__name__}, not an object of fields")
    return want


def field_accuracy(predictions: Sequence[str], references: Sequence[str]) -> dict[str, float | None]:
    """Mean over cases of the share of the reference JSON object's fields the prediction reproduces exactly (as
    JSON: `true` is not 1)."""
    if not references:
        return {"field_accuracy": None}
    total = 0.0
    for index, (pred, ref) in enumerate(zip(predictions, references, strict=False)):
        want = _reference_object(ref, index)
        got = _first_object(pred) or {}
        total += sum(json_equal(got.get(k), v) for k, v in want.items()) / max(len(want), 1)
    return {"field_accuracy": total / len(references)}


def rouge(predictions: Sequence[str], references: Sequence[str], rouge_types: Sequence[str] = ROUGE_TYPES,
          use_stemmer: bool = False) -> dict[str, float | None]:
    """Mean F-measure per ROUGE variant (`rouge_score`), plain mean (deterministic, no bootstrap)."""
    from rouge_score import rouge_scorer

    types = list(rouge_types)
    if not references:
        return dict.fromkeys(types)
    scorer = rouge_scorer.RougeScorer(types, use_stemmer=use_stemmer)
    totals = dict.fromkeys(types, 0.0)
    for pred, ref in zip(predictions, references, strict=False):
        scores = scorer.score(ref, pred)
        for t in types:
            totals[t] += scores[t].fmeasure
    return {t: totals[t] / len(references) for t in types}


def bleu(predictions: Sequence[str], references: Sequence[str], tokenize: str = "13a",
         lowercase: bool = False) -> dict[str, float | None]:
    """Corpus BLEU (sacrebleu), one reference per prediction, 0-100."""
    import sacrebleu

    if not references:
        return {"bleu": None}
    return {"bleu": sacrebleu.corpus_bleu(list(predictions), [list(references)], tokenize=tokenize,
                                          lowercase=lowercase).score}


def chrf(predictions: Sequence[str], references: Sequence[str], word_order: int = 0) -> dict[str, float | None]:
    """Corpus chrF (sacrebleu; `word_order=2` for chrF++), one reference per prediction, 0-100."""
    import sacrebleu

    if not references:
        return {"chrf": None}
    return {"chrf": sacrebleu.corpus_chrf(list(predictions), [list(references)], word_order=word_order).score}


SHIPPED: dict[str, Callable[..., dict[str, float | None]]] = {
    "field_accuracy": field_accuracy, "rouge": rouge, "bleu": bleu, "chrf": chrf}


class ShippedMetric:
    """A shipped metric with the one method the gate calls on an `evaluate` metric (`compute`)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._compute = SHIPPED[name]

    def compute(self, *, predictions: Sequence[Any], references: Sequence[Any], **kwargs: Any) -> dict[str, float | None]:
        # evaluate casts both columns to strings (Features: Value("string")); so does this
        return self._compute([str(p) for p in predictions], [str(r) for r in references], **kwargs)
