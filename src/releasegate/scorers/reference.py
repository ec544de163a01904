"""Reference-metric answer scorers: ROUGE, BLEU and chrF of one output against its expected text, with a threshold.

A case passes when its sentence-level score reaches `min`; `accuracy` over such cases is the share that do.
The same libraries back the shipped corpus-level `evaluate` modules (`releasegate:rouge`, `:bleu`, `:chrf`);
they are imported on first use, so loading the scorers stays light.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from ._registry import Score, Spec, scorer
from ._text import as_text

if TYPE_CHECKING:  # imported on first use (see the module docstring)
    from rouge_score.rouge_scorer import RougeScorer
    from sacrebleu.metrics.bleu import BLEU
    from sacrebleu.metrics.chrf import CHRF

__all__ = ["ROUGE_VARIANTS", "rouge_score_of", "bleu_score_of", "chrf_score_of"]

ROUGE_VARIANTS = ("rouge1", "rouge2", "rougeL", "rougeLsum")
_EPS = 1e-9  # a perfect BLEU comes out as 100.00000000000004 or 99.99999999999997: both meet `min: 100`


@cache
def _rouge(variant: str) -> RougeScorer:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer([variant], use_stemmer=False)


@cache
def _sacrebleu(kind: str) -> BLEU | CHRF:
    from sacrebleu.metrics.bleu import BLEU
    from sacrebleu.metrics.chrf import CHRF

    return BLEU(effective_order=True) if kind == "bleu" else CHRF()


def rouge_score_of(output: str, reference: str, variant: str = "rougeL") -> float:
    """ROUGE F-measure in [0, 1], as `RougeScorer([variant]).score(reference, output)` gives it."""
    if variant not in ROUGE_VARIANTS:
        raise ValueError(f"unknown rouge variant {variant!r} (known: {', '.join(ROUGE_VARIANTS)})")
    return float(_rouge(variant).score(reference, output)[variant].fmeasure)


def bleu_score_of(output: str, reference: str) -> float:
    """Sentence BLEU in [0, 100], as `sacrebleu.sentence_bleu(output, [reference])` gives it."""
    return float(_sacrebleu("bleu").sentence_score(output, [reference]).score)


def chrf_score_of(output: str, reference: str) -> float:
    """Sentence chrF in [0, 100], as `sacrebleu.sentence_chrf(output, [reference])` gives it."""
    return float(_sacrebleu("chrf").sentence_score(output, [reference]).score)


def _judge(name: str, value: float, spec: Spec) -> Score:
    threshold = spec.get("min")
    if threshold is None:
        return Score(False, f"{name} {value:.4g}, no 'min' threshold in the answer spec", unknown=True)
    passed = value >= threshold - _EPS * max(1.0, abs(threshold))
    return Score(passed, f"{name} {value:.4g} {'>=' if passed else '<'} min {threshold:g}")


@scorer("answer", "rouge")
def rouge(output: str, expected: Any, spec: Spec) -> Score:
    """ROUGE F-measure of `variant` (default rougeL) against the expected text reaches `min` (0..1)."""
    variant = spec.get("variant", "rougeL")
    if variant not in ROUGE_VARIANTS:
        return Score(False, f"unknown rouge variant {variant!r}", unknown=True)
    return _judge(variant, rouge_score_of(output, as_text(expected), variant), spec)


@scorer("answer", "bleu")
def bleu(output: str, expected: Any, spec: Spec) -> Score:
    """Sentence BLEU against the expected text reaches `min` (0..100)."""
    return _judge("bleu", bleu_score_of(output, as_text(expected)), spec)


@scorer("answer", "chrf")
def chrf(output: str, expected: Any, spec: Spec) -> Score:
    """Sentence chrF against the expected text reaches `min` (0..100)."""
    return _judge("chrf", chrf_score_of(output, as_text(expected)), spec)
