"""The bounds comparisons decide on: Newcombe's paired score interval against a published worked example, the
minimum of shared cases it implies, and seeded simulations of the error rates the rules promise."""

from __future__ import annotations

import math

import numpy as np
import pytest

from releasegate.decision.comparison import non_inferiority as _non_inferiority
from releasegate.gate.paired_comparison import _LATENCY_TAIL_SHARE, LATENCY_MIN_PAIRS
from releasegate.stats.intervals import (
    ITL_MIN_REQUESTS,
    cluster_bootstrap,
    paired_bootstrap_delta,
    paired_min_n,
    paired_rate_bounds,
)


def test_newcombe_paired_interval_matches_the_published_example():
    # Cavo et al. (2012), complete response before and after consolidation therapy, as worked in Fagerland,
    # Lydersen & Laake, Statistical Analysis of Contingency Tables (2017), ch. 8: Newcombe square-and-add
    # estimate -0.0621, 95% CI -0.1186 to -0.0046 (two-sided 0.95: each bound one-sided at 0.975)
    lo, hi = paired_rate_bounds(59, 6, 16, 80, confidence=0.975)
    assert (round(lo, 4), round(hi, 4)) == (-0.1186, -0.0046)


def test_no_pair_disagreeing_does_not_collapse_the_bound():
    lo, hi = paired_rate_bounds(3, 0, 0, 0)
    assert lo < -0.3 and hi > 0.3  # three ties say little about a difference
    assert paired_rate_bounds(0, 0, 0, 0) is None


@pytest.mark.parametrize("margin", [0.01, 0.02, 0.05, 0.1])
def test_below_the_minimum_no_table_of_ties_shows_the_margin(margin):
    # whatever the split of the agreeing pairs (all good, nearly none): the n at which any tie shows the margin
    needed = paired_min_n(margin)
    assert all(paired_rate_bounds(a, 0, 0, needed - a)[1] <= margin for a in range(needed + 1))
    for n in range(1, needed):
        assert any(paired_rate_bounds(a, 0, 0, n - a)[1] > margin for a in range(n + 1))


def test_a_zero_margin_can_never_be_shown():
    assert paired_min_n(0.0) is None
    verdict, note = _non_inferiority(10_000, -0.01, 0.001, 0.0, None)
    assert verdict == "insufficient" and "above 0" in note


def _false_non_inferior_rate(n: int, margin: float, reps: int, rng) -> float:
    """Baseline good in 85% of cases; the candidate loses 2 x margin: worse on w of cases, better on 2%."""
    better = 0.02
    worse = better + 2 * margin
    both = 0.85 - worse
    cells = rng.multinomial(n, [both, worse, better, 1 - both - worse - better], size=reps)
    needed = paired_min_n(margin)
    hits = 0
    for a, b, c, d in cells:
        lo, hi = paired_rate_bounds(int(a), int(b), int(c), int(d))
        hits += _non_inferiority(n, lo, hi, margin, needed)[0] == "pass"
    return hits / reps


@pytest.mark.parametrize("margin", [0.02, 0.1])
@pytest.mark.parametrize("n", [5, 10, 30, 100])
def test_a_candidate_twice_the_margin_worse_is_rarely_non_inferior(n, margin):
    reps = 2000
    rate = _false_non_inferior_rate(n, margin, reps, np.random.default_rng(n * 1000 + int(margin * 100)))
    allowed = 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps)  # 1 - confidence plus Monte Carlo error
    assert rate <= allowed, (n, margin, rate)


def test_a_tied_candidate_is_shown_non_inferior_once_there_are_enough_cases():
    # the rule is not merely "never pass": 400 cases, 85% good in both, 2% discordant each way
    cells = (332, 8, 8, 52)
    lo, hi = paired_rate_bounds(*cells)
    assert _non_inferiority(400, lo, hi, 0.05, paired_min_n(0.05))[0] == "pass"


def _requests(rng, n: int, spread: float = 0.2) -> list[np.ndarray]:
    """Requests whose gap level varies lognormally between requests, 20-200 gaps each."""
    return [20 * math.exp(rng.normal(0, spread)) * np.exp(rng.normal(0, 0.4, int(rng.integers(20, 201))))
            for _ in range(n)]


def test_the_itl_bound_covers_at_the_minimum_it_accepts():
    rng = np.random.default_rng(11)
    truth = float(np.percentile(np.concatenate(_requests(rng, 20000)), 95))
    reps = 200
    covered = sum(cluster_bootstrap(_requests(rng, ITL_MIN_REQUESTS), 95, 0.95, resamples=400, seed=i)[1] >= truth
                  for i in range(reps))
    assert covered / reps >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / reps)
    assert cluster_bootstrap(_requests(rng, ITL_MIN_REQUESTS - 1), 95, 0.95) is None


def test_the_latency_bound_covers_at_the_minimum_it_accepts():
    rng = np.random.default_rng(12)
    reps, level = 300, 1 - 0.05 * _LATENCY_TAIL_SHARE
    covered = 0
    for i in range(reps):
        diffs = rng.gamma(2.0, 10.0, LATENCY_MIN_PAIRS) - 20.0  # right-skewed, true mean difference 0
        _, (lo, hi) = paired_bootstrap_delta([0.0] * LATENCY_MIN_PAIRS, list(diffs), confidence=level,
                                             resamples=500, seed=i, sided="one")
        covered += hi >= 0.0
    assert covered / reps >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / reps)
