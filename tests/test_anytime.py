"""The betting e-process and confidence sequence (stats.anytime) against the paper's formulas written out
directly, hand-checked first steps, Ville's bound, and hostile input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from releasegate.stats.anytime import (
    TRUNCATION,
    binomial_tail,
    confidence_bounds,
    confidence_sequence,
    e_value_at,
    exact_rate_shown,
    first_crossing,
    log_wealth,
    plugin_bets,
)


def _paper_wealth(xs: list[float], m: float, alpha: float, side: str) -> list[float]:
    """Waudby-Smith & Ramdas (2024) eq. (26)-(27), one value at a time, as the paper writes it."""
    wealth, out, total, squares = 1.0, [], 0.0, 0.0
    for t, x in enumerate(xs, start=1):
        sigma2_before = (0.25 + squares) / t  # sigma2_{t-1} = (1/4 + sum_{i<t} (x_i - mu_i)^2) / t
        lam = math.sqrt(2 * math.log(1 / alpha) / (sigma2_before * t * math.log(1 + t)))
        if side == "above":
            wealth *= 1 + min(lam, TRUNCATION / m) * (x - m)
        else:
            wealth *= 1 - min(lam, TRUNCATION / (1 - m)) * (x - m)
        total += x
        mu = (0.5 + total) / (t + 1)
        squares += (x - mu) ** 2
        out.append(wealth)
    return out


def test_first_steps_by_hand():
    # t = 1: sigma2_0 = 1/4, lambda = sqrt(2 ln 20 / (0.25 * 1 * ln 2)) = 6.57, capped at 0.75 / 0.5 = 1.5
    assert plugin_bets([1.0, 1.0], 0.05)[0] == pytest.approx(math.sqrt(2 * math.log(20) / (0.25 * math.log(2))))
    # mu_1 = 1.5 / 2 = 0.75, sigma2_1 = (0.25 + 0.0625) / 2 = 0.15625; lambda_2 = sqrt(2 ln 20 / (0.15625 * 2 ln 3))
    assert plugin_bets([1.0, 1.0], 0.05)[1] == pytest.approx(math.sqrt(2 * math.log(20) / (0.15625 * 2 * math.log(3))))
    wealth = np.exp(log_wealth([1.0, 1.0, 0.0], 0.5, "above", 0.05))
    assert wealth == pytest.approx([1.75, 1.75 ** 2, 1.75 ** 2 * 0.25])  # every bet capped at 1.5: x=0 keeps 1/4


@pytest.mark.parametrize("side", ["above", "below"])
@pytest.mark.parametrize("m", [0.1, 0.5, 0.9])
def test_wealth_matches_the_paper_formulas(side, m):
    rng = np.random.default_rng(3)
    xs = list(rng.beta(2, 3, size=300))
    ours = np.exp(log_wealth(xs, m, side, 0.025))
    assert ours == pytest.approx(_paper_wealth(xs, m, 0.025, side), rel=1e-9)


def test_many_paths_at_once_equal_one_at_a_time():
    rng = np.random.default_rng(5)
    paths = (rng.random((7, 120)) < 0.8).astype(float)
    together = first_crossing(paths, 0.6, "above", 0.05)
    assert list(together) == [int(first_crossing(p, 0.6, "above", 0.05)) for p in paths]


def test_ville_bounds_the_chance_of_ever_crossing_under_the_null():
    rng = np.random.default_rng(11)
    paths = (rng.random((3000, 1000)) < 0.7).astype(float)  # the mean is exactly m: the worst null
    rate = float((first_crossing(paths, 0.7, "above", 0.05) > 0).mean())
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 3000)


def test_a_clear_difference_crosses_and_the_wrong_side_does_not():
    rng = np.random.default_rng(2)
    xs = (rng.random(2000) < 0.95).astype(float)
    at = int(first_crossing(xs, 0.8, "above", 0.01))
    assert 0 < at < 300
    assert int(first_crossing(xs, 0.8, "below", 0.01)) == 0
    assert e_value_at(xs[:at], 0.8, "above", 0.01) >= 100


def test_nothing_can_be_shown_beyond_zero_or_one():
    ones = np.ones(500)
    assert int(first_crossing(ones, 1.0, "below", 0.05)) == 0
    assert int(first_crossing(np.zeros(500), 0.0, "above", 0.05)) == 0
    assert e_value_at(np.zeros(0), 0.5, "above", 0.05) == 1.0


def test_the_confidence_sequence_covers_and_narrows():
    rng = np.random.default_rng(8)
    xs = rng.beta(8, 2, size=800)  # mean 0.8
    lower, upper = confidence_sequence(xs, 0.025)
    assert np.all(np.diff(lower) >= 0) and np.all(np.diff(upper) <= 0)  # a running intersection
    assert np.all(lower <= 0.8) and np.all(upper >= 0.8)
    assert upper[-1] - lower[-1] < 0.1 < upper[9] - lower[9]
    # the bound is where the e-process stops rejecting: just below it rejected, a grid step above it not
    assert int(first_crossing(xs, max(lower[-1] - 0.001, 0.0), "above", 0.025)) > 0
    assert int(first_crossing(xs, lower[-1] + 0.001, "above", 0.025)) == 0 or lower[-1] < 0.7


@pytest.mark.parametrize("n,m,k", [(10, 0.5, 7), (100, 0.9, 97), (2000, 0.9, 1827), (50, 0.02, 0), (50, 0.02, 51)])
def test_binomial_tail_is_scipys(n, m, k):
    assert binomial_tail(n, m, k) == pytest.approx(float(scipy_stats.binom.sf(k - 1, n, m)), rel=1e-9, abs=1e-300)


def test_exact_rate_shown_is_the_binomial_test():
    assert exact_rate_shown(100, 100, 0.95, "above", 0.025)  # 0.95^100 = 0.006
    assert not exact_rate_shown(60, 60, 0.95, "above", 0.025)  # 0.95^60 = 0.046
    assert exact_rate_shown(0, 100, 0.05, "below", 0.025)
    assert not exact_rate_shown(3, 100, 0.05, "below", 0.025)
    assert not exact_rate_shown(5, 0, 0.5, "above", 0.05)  # nothing asked, or a count that cannot be


@pytest.mark.parametrize("bad", [[float("nan")], [1.5], [-0.1], [float("inf")], [[[0.5]]]])
def test_values_outside_zero_one_are_refused(bad):
    with pytest.raises(ValueError):
        log_wealth(bad, 0.5, "above", 0.05)


@pytest.mark.parametrize("alpha", [0.0, 1.0, -1.0, float("nan")])
def test_a_level_outside_zero_one_is_refused(alpha):
    with pytest.raises(ValueError):
        first_crossing([0.5], 0.5, "above", alpha)


def test_a_mean_outside_zero_one_or_a_wrong_side_is_refused():
    for m in (-0.1, 1.1, float("nan")):
        with pytest.raises(ValueError):
            log_wealth([0.5], m, "above", 0.05)
    with pytest.raises(ValueError):
        log_wealth([0.5], 0.5, "sideways", 0.05)  # type: ignore[arg-type]


def test_the_bisected_bounds_are_the_sequence_s_end():
    rng = np.random.default_rng(4)
    for xs in (rng.beta(5, 2, size=300), (rng.random(500) < 0.3).astype(float), np.ones(40)):
        lower, upper = confidence_sequence(xs, 0.01)
        lo, hi = confidence_bounds(xs, 0.01)
        assert lower[-1] - 0.0006 <= lo <= lower[-1] + 0.0006 and upper[-1] - 0.0006 <= hi <= upper[-1] + 0.0006
        assert lo <= float(np.mean(xs)) <= hi
