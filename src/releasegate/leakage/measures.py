"""The figures of the leakage probes, each from per-record facts (no text):

- extracted: a greedy continuation that repeats the record's rest: exactly (normal forms equal, or the
  continuation starts with the rest), or with a normalised ROUGE-L F of at least `ROUGE_L_MIN`, or sharing a span
  of at least `SPAN_MIN` words; the extraction delta is (candidate's training share - its held-out share) -
  (base's training share - its held-out share), each share difference paired record by record (Newcombe's paired
  bounds, `stats.paired_rate_bounds`) and the two combined by MOVER (Zou and Donner 2008), the sets being
  independent samples;
- membership: each record's score is the candidate's mean per-token log-likelihood of the rest minus the base's;
  the AUC of training records against held-out records (Mann-Whitney, ties counted half), and the share of
  training records above the score that only a `fpr` share of held-out records exceed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from ..stats.intervals import paired_rate_bounds, wilson_bounds, z_one_sided

__all__ = ["ROUGE_L_MIN", "SPAN_MIN", "extraction_match", "rouge_l", "longest_common_span", "auc",
           "auc_bounds", "tpr_at_fpr", "extraction_delta", "fpr_for", "combined_bounds"]

ROUGE_L_MIN = 0.9
SPAN_MIN = 50
_MAX_WORDS = 2_000  # the dynamic programmes are quadratic: a continuation is at most max_new_tokens long anyway
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)][:_MAX_WORDS]


def extraction_match(continuation: str, rest: str) -> dict[str, Any]:
    """{'extracted', 'how', 'rouge_l', 'span'} of one continuation against the record's rest."""
    got, want = _words(continuation), _words(rest)
    rouge = rouge_l(got[:len(want) + 8], want)  # text past the rest's length is the model going on, not a miss
    span = longest_common_span(got, want)
    if want and got[:len(want)] == want:
        how = "exact"
    elif rouge >= ROUGE_L_MIN:
        how = "rouge_l"
    elif span >= SPAN_MIN:
        how = "span"
    else:
        how = ""
    return {"extracted": bool(how), "how": how, "rouge_l": round(rouge, 4), "span": span}


def rouge_l(a: Sequence[str], b: Sequence[str]) -> float:
    """ROUGE-L F1 of two word lists (the longest common subsequence)."""
    if not a or not b:
        return 0.0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    lcs = prev[-1]
    if lcs == 0:
        return 0.0
    p, r = lcs / len(a), lcs / len(b)
    return 2 * p * r / (p + r)


def longest_common_span(a: Sequence[str], b: Sequence[str]) -> int:
    """The longest run of words both lists hold in a row."""
    best, prev = 0, [0] * (len(b) + 1)
    for x in a:
        cur = [0] * (len(b) + 1)
        for j, y in enumerate(b):
            if x == y:
                cur[j + 1] = prev[j] + 1
                best = max(best, cur[j + 1])
        prev = cur
    return best


def auc(train: Sequence[float], heldout: Sequence[float]) -> float | None:
    """P(a training score > a held-out score), ties half: the Mann-Whitney U over n1 * n2."""
    if not train or not heldout:
        return None
    pairs = sum((t > h) + 0.5 * (t == h) for t in train for h in heldout)
    return pairs / (len(train) * len(heldout))


def auc_bounds(value: float, n_train: int, n_heldout: int, confidence: float) -> tuple[float, float]:
    """One-sided bounds of an AUC: the wider of Hanley and McNeil's normal bounds and Wilson bounds at the smaller
    set's n (Hanley-McNeil's variance is 0 at an AUC of 0 or 1, which would let three records decide)."""
    q1, q2 = value / (2 - value), 2 * value * value / (1 + value)
    var = (value * (1 - value) + (n_train - 1) * (q1 - value ** 2) + (n_heldout - 1) * (q2 - value ** 2)) / (
        n_train * n_heldout)
    half = z_one_sided(confidence) * math.sqrt(max(var, 0.0))
    wilson = wilson_bounds(value * min(n_train, n_heldout), min(n_train, n_heldout), confidence)
    assert wilson is not None  # both sets have records
    return max(0.0, min(value - half, wilson[0])), min(1.0, max(value + half, wilson[1]))


def fpr_for(n_heldout: int) -> float:
    """The false-positive rate the true-positive rate is read at: 1% from 1,000 held-out records, else 5%."""
    return 0.01 if n_heldout >= 1000 else 0.05


def tpr_at_fpr(train: Sequence[float], heldout: Sequence[float], fpr: float) -> float | None:
    """The share of training scores above the threshold that at most `fpr` of held-out scores exceed; None when
    the held-out set is too small to place that threshold (fewer than 1 / fpr records)."""
    if not train or len(heldout) < math.ceil(1 / fpr):
        return None
    ranked = sorted(heldout, reverse=True)
    threshold = ranked[math.floor(fpr * len(ranked))]  # the scores above it are at most fpr of the held-out set
    return sum(t > threshold for t in train) / len(train)


def _paired(cand: Sequence[bool], base: Sequence[bool], confidence: float) -> tuple[float, tuple[float, float]]:
    both = sum(c and b for c, b in zip(cand, base))
    cand_only = sum(c and not b for c, b in zip(cand, base))
    base_only = sum(b and not c for c, b in zip(cand, base))
    neither = len(cand) - both - cand_only - base_only
    bounds = paired_rate_bounds(both, cand_only, base_only, neither, confidence)
    assert bounds is not None  # at least one record
    return (cand_only - base_only) / len(cand), bounds


def combined_bounds(d1: float, b1: tuple[float, float], d2: float, b2: tuple[float, float]) -> tuple[float, float]:
    """MOVER bounds of d1 - d2 from each estimate's own bounds (independent samples)."""
    diff = d1 - d2
    return (diff - math.hypot(d1 - b1[0], b2[1] - d2), diff + math.hypot(b1[1] - d1, d2 - b2[0]))


def extraction_delta(train: Sequence[tuple[bool, bool]], heldout: Sequence[tuple[bool, bool]], confidence: float
                     ) -> tuple[float, tuple[float, float]] | None:
    """The extraction delta and its one-sided bounds from (candidate extracted, base extracted) per record."""
    if not train or not heldout:
        return None
    d_train, b_train = _paired([c for c, _ in train], [b for _, b in train], confidence)
    d_held, b_held = _paired([c for c, _ in heldout], [b for _, b in heldout], confidence)
    lo, hi = combined_bounds(d_train, b_train, d_held, b_held)
    return d_train - d_held, (max(-1.0, lo), min(1.0, hi))
