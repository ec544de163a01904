"""How a stratified `sample:` suite speaks for its source: each sampled case stands for its stratum's rows over the
run's cases of that stratum, so rates are the source's, never the sample's equal allocation (see docs/guarantees.md "A sample
speaks for its source"). A case of any other suite stands for itself.

Every surface that combines cases into a rate weighs them here: the gate's metrics (`weighted_share`), the
reviewer-corrected judge accuracy and human approval (`case_weights`, `source_of`), and paired comparisons."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Protocol

__all__ = ["stratum_counts", "sample_only", "is_weighted", "weighted_share", "case_weights", "kish_n", "source_of",
           "two_phase_n", "StratumKey", "Strata"]


class _Stratum(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def population(self) -> int: ...
    @property
    def weighted(self) -> bool: ...


class _Stratified(Protocol):
    """What a record of a `sample:` suite carries (record.record_parts.Stratum on a journal record)."""

    @property
    def suite(self) -> str: ...
    @property
    def stratum(self) -> _Stratum | None: ...


StratumKey = tuple[str, str, int]
"""(suite, stratum, its population)."""
Strata = dict[StratumKey, int]
"""The run's cases per weighted stratum."""


def stratum_counts(records: Iterable[_Stratified]) -> Strata:
    """The run's cases per stratum of a weighted `sample:` suite: (suite, stratum, its population) -> cases."""
    return dict(Counter(_stratum_key(r) for r in records if is_weighted(r)))


def sample_only(records: Iterable[_Stratified]) -> list[str]:
    """The suites whose `sample.estimate: sample` makes their rates describe the sample only."""
    return sorted({r.suite for r in records if (s := getattr(r, "stratum", None)) is not None and not s.weighted})


def is_weighted(record: object) -> bool:
    """Whether the record is a case of a sample whose rates are weighted to its source."""
    stratum = getattr(record, "stratum", None)
    return stratum is not None and stratum.weighted


def source_of(record: _Stratified) -> StratumKey | None:
    """The weighted stratum a record stands for ((suite, stratum, population)); None for a case that stands for
    itself. Cases with the same source weigh alike."""
    return _stratum_key(record) if is_weighted(record) else None


def case_weights(records: Iterable[_Stratified], strata: Strata) -> list[float]:
    """Each record's weight: population / (the run's cases of its stratum, `strata` as `stratum_counts` gives it)
    for a case of a weighted sample, 1 for any other."""
    return [_stratum_key(r)[2] / (strata.get(_stratum_key(r)) or 1) if is_weighted(r) else 1.0 for r in records]


def kish_n(weights: list[float]) -> float:
    """Kish's effective n, (sum of weights)^2 / sum of squared weights: the size of a simple random sample whose
    share has the variance of the weighted share (the count itself when the weights are equal); 0 for none."""
    squares = sum(w * w for w in weights)
    return sum(weights) ** 2 / squares if squares else 0.0


def two_phase_n(point: float, cases_n: float, parts: list[tuple[float, float, float, float]]) -> float:
    """The effective n of a rate estimated in two phases: the run's cases (at their effective n, `cases_n`), then
    labels drawn from each part (post-stratum) of them. `parts`: (its share of the rows, its labels' rate, their
    effective n, the share of its cases labelled). The variance is the cases' own plus, per part, its share
    squared times its rate's variance with the finite-population correction (double sampling for
    stratification), each part's rate read as if it had two more labels at the overall rate, so that a few alike
    are not certainty; expressed as the size of a simple random sample with that variance (at most `cases_n`)."""
    labels = sum(n for _, _, n, _ in parts)
    overall = (sum(rate * n for _, rate, n, _ in parts) + 1) / (labels + 2)
    q = (point * cases_n + 0.5) / (cases_n + 1)  # the cases' own binomial variance, never 0 at a point of 0 or 1
    variance = q * (1 - q) / cases_n
    for share, rate, n, drawn in parts:
        smoothed = (rate * n + 2 * overall) / (n + 2)
        variance += share ** 2 * smoothed * (1 - smoothed) / n * (1 - drawn)
    return q * (1 - q) / variance


def weighted_share(hits: list[bool], records: Sequence[_Stratified], strata: Strata) -> tuple[float, float, float]:
    """(the weighted share of `hits`, Kish's effective n, the source rows the records stand for). The effective
    n is what a Wilson bound on the share is taken at."""
    weights = case_weights(records, strata)
    total = sum(weights)
    value = sum(w for w, hit in zip(weights, hits) if hit) / total
    return value, kish_n(weights), total


def _stratum_key(record: _Stratified) -> StratumKey:
    stratum = record.stratum
    assert stratum is not None  # only asked of a weighted record
    return record.suite, stratum.name, stratum.population
