import math

import numpy as np
import pytest
from scipy import optimize
from scipy.stats import binom, norm

from releasegate.stats.cluster_bounds import _pooled_percentiles
from releasegate.stats.intervals import (
    bootstrap,
    cluster_bootstrap,
    mcnemar_exact,
    needed_n_for_rate,
    paired_bootstrap_delta,
    percentile,
    percentile_bounds,
    percentile_min_n,
    wilson,
    wilson_bounds,
    z_one_sided,
    z_value,
    zero_failure_n,
)


def test_percentile_linear_interpolation():
    xs = [15.0, 20.0, 35.0, 40.0, 50.0]
    assert percentile(xs, 50) == 35.0
    assert percentile(xs, 40) == pytest.approx(29.0)  # numpy 'linear': pos 1.6 -> 20 + 0.6*15
    assert percentile(xs, 100) == 50.0
    assert percentile(xs, 0) == 15.0
    assert percentile([], 95) is None
    assert percentile([7.0], 99) == 7.0


def test_z_one_sided_and_two_sided():
    assert z_one_sided(0.95) == pytest.approx(1.6448536, abs=1e-6)
    assert z_one_sided(0.99) == pytest.approx(norm.ppf(0.99), abs=1e-9)
    assert z_value(0.95) == pytest.approx(1.959964, abs=1e-6)  # two-sided, kept for central intervals
    with pytest.raises(ValueError):
        z_one_sided(1.0)


def test_wilson_published_values():
    # Wilson 95% interval for 81/263 (Newcombe 1998, method 3): 0.2553 to 0.3662
    lo, hi = wilson(81, 263)
    assert lo == pytest.approx(0.2553, abs=1e-4)
    assert hi == pytest.approx(0.3662, abs=1e-4)
    # 0/10: upper bound 0.2775
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)
    assert wilson(0, 0) is None


def test_wilson_bounds_are_one_sided():
    # each bound one-sided at c is the two-sided bound at 2c - 1: at 0.975 the published 95% interval
    lo, hi = wilson_bounds(81, 263, 0.975)
    assert lo == pytest.approx(0.2553, abs=1e-4) and hi == pytest.approx(0.3662, abs=1e-4)
    # 0/10 at 0.95 one-sided: z^2 / (n + z^2) = 1.6449^2 / (10 + 1.6449^2) = 0.2129 (not 0.2775)
    lo, hi = wilson_bounds(0, 10, 0.95)
    assert lo == 0.0 and hi == pytest.approx(0.2129, abs=1e-4)
    # 10/10: the mirror image
    lo, hi = wilson_bounds(10, 10, 0.95)
    assert hi == 1.0 and lo == pytest.approx(1 - 0.21294197, abs=1e-7)
    assert wilson_bounds(0, 0) is None


@pytest.mark.parametrize(
    ("successes", "n", "confidence"),
    [(81, 263, 0.95), (1, 20, 0.95), (19, 20, 0.9), (500, 1000, 0.99), (3, 7, 0.8), (123.4, 200, 0.95), (999, 1000, 0.95)],
)
def test_wilson_bounds_solve_the_score_equation(successes, n, confidence):
    # independent of the closed form: each bound is the proportion pi whose score statistic
    # (p_hat - pi) / sqrt(pi (1 - pi) / n) equals +z (lower bound) or -z (upper bound), z from scipy
    z = norm.ppf(confidence)
    p_hat = successes / n

    def score(pi):
        return (p_hat - pi) / math.sqrt(pi * (1 - pi) / n)

    lower = optimize.brentq(lambda pi: score(pi) - z, 1e-15, p_hat, xtol=1e-14)
    upper = optimize.brentq(lambda pi: score(pi) + z, p_hat, 1 - 1e-15, xtol=1e-14)
    lo, hi = wilson_bounds(successes, n, confidence)
    assert lo == pytest.approx(lower, abs=1e-10)
    assert hi == pytest.approx(upper, abs=1e-10)


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        # hand-computed: p = min(1, 2 * sum_{i<=min(b,c)} C(b+c, i) / 2^(b+c))
        (10, 2, 2 * (1 + 12 + 66) / 4096),  # 0.038574
        (5, 0, 2 / 32),  # 0.0625
        (6, 0, 2 / 64),  # 0.03125
        (3, 3, 1.0),
        (0, 0, 1.0),
        (1, 9, 2 * (1 + 10) / 1024),  # 0.021484
        (20, 10, 0.09873714670538902),  # 2 * P(X <= 10 | n=30, 1/2)
    ],
)
def test_mcnemar_exact_against_hand_table(b, c, p):
    assert mcnemar_exact(b, c) == pytest.approx(p, rel=1e-9)


# --- percentile bounds --------------------------------------------------------------------------------------


def _brute_ranks(n, q, confidence):
    p = q / 100
    ks = np.arange(1, n + 1)
    lower_ok = ks[binom.sf(ks - 1, n, p) >= confidence]  # P(B >= k)
    upper_ok = ks[binom.cdf(ks - 1, n, p) >= confidence]  # P(B <= k - 1)
    return (int(lower_ok.max()) if lower_ok.size else None), (int(upper_ok.min()) if upper_ok.size else None)


@pytest.mark.parametrize(
    ("n", "q", "confidence"),
    [
        (1, 50, 0.95), (2, 95, 0.95), (10, 50, 0.95), (10, 50, 0.9), (20, 90, 0.8), (58, 95, 0.95), (59, 95, 0.95),
        (100, 95, 0.95), (100, 5, 0.95), (298, 99, 0.95), (299, 99, 0.95), (500, 99, 0.99), (1000, 95, 0.95),
        (2500, 99.9, 0.9), (20000, 99, 0.95), (100000, 95, 0.99),
    ],
)
def test_percentile_bounds_pick_the_binomial_order_statistic(n, q, confidence):
    k_lo, k_hi = _brute_ranks(n, q, confidence)
    xs = list(np.random.default_rng(n).permutation(n).astype(float) + 1)  # value k is the k-th order statistic
    lo, hi = percentile_bounds(xs, q, confidence)
    assert lo == (float(k_lo) if k_lo else None)
    assert hi == (float(k_hi) if k_hi else None)


def test_percentile_bounds_small_n():
    assert percentile_bounds([], 95) == (None, None)
    # one sample: P(X_(1) <= P95) = 0.95, a lower bound; no upper bound at 95% until n = 59
    assert percentile_bounds([3.0], 95) == (3.0, None)
    assert percentile_bounds([1.0, 2.0], 95) == (1.0, None)  # not [min, max]
    assert percentile_bounds([3.0], 95, 0.96) == (None, None)
    lo, hi = percentile_bounds(list(range(59)), 95, 0.95)
    assert hi == 58  # the maximum, the first n at which it covers P95 at 95%
    assert percentile_bounds(list(range(58)), 95, 0.95)[1] is None


@pytest.mark.parametrize("q", [50, 90, 95, 99, 99.9])
@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.99])
@pytest.mark.parametrize("side", ["upper", "lower"])
def test_percentile_min_n_is_the_first_n_with_a_bound(q, confidence, side):
    expected = percentile_min_n(q, confidence, side)
    p = q / 100

    def exists(n):  # brute force with scipy over every order statistic
        ks = np.arange(1, n + 1)
        if side == "upper":
            return bool((binom.cdf(ks - 1, n, p) >= confidence).any())
        return bool((binom.sf(ks - 1, n, p) >= confidence).any())

    assert exists(expected)
    assert not any(exists(n) for n in range(max(1, expected - 50), expected))
    assert expected == 1 or not exists(1)
    lo, hi = percentile_bounds(list(range(expected)), q, confidence)
    assert (hi if side == "upper" else lo) is not None
    lo, hi = percentile_bounds(list(range(expected - 1)), q, confidence)
    assert (hi if side == "upper" else lo) is None


def test_percentile_min_n_known_values():
    assert percentile_min_n(95, 0.95) == 59
    assert percentile_min_n(99, 0.95) == 299
    assert percentile_min_n(95, 0.99) == 90
    assert percentile_min_n(99, 0.99) == 459
    assert percentile_min_n(95, 0.95, "lower") == 1
    with pytest.raises(ValueError):
        percentile_min_n(100, 0.95, "upper")


def test_percentile_bounds_cover_the_true_percentile():
    rng = np.random.default_rng(12345)
    n, q, c = 100, 95, 0.95
    true_p95 = -math.log(0.05)  # exponential with rate 1
    covered_hi = covered_lo = 0
    draws = 2000
    for _ in range(draws):
        lo, hi = percentile_bounds(list(rng.exponential(size=n)), q, c)
        covered_hi += hi >= true_p95
        covered_lo += lo <= true_p95
    k_lo, k_hi = _brute_ranks(n, q, c)
    exact_hi = binom.cdf(k_hi - 1, n, q / 100)  # the bound's exact coverage, >= c
    exact_lo = binom.sf(k_lo - 1, n, q / 100)
    assert exact_hi >= c and exact_lo >= c
    # seeded, so deterministic; 0.02 is about 4.5 standard errors at 2000 draws
    assert abs(covered_hi / draws - exact_hi) < 0.02
    assert abs(covered_lo / draws - exact_lo) < 0.02
    assert covered_hi / draws >= 0.93 and covered_lo / draws >= 0.93


# --- needed n -----------------------------------------------------------------------------------------------


def _decided(rate, threshold, higher, confidence, n):
    lo, hi = wilson_bounds(rate * n, n, confidence)
    if higher:
        return lo >= threshold if rate > threshold else hi < threshold
    return hi <= threshold if rate < threshold else lo > threshold


GRID = [
    (0.95, 0.9, True, 0.95), (0.85, 0.9, True, 0.95), (0.92, 0.9, True, 0.99), (0.5, 0.6, True, 0.9),
    (1.0, 0.9, True, 0.95), (0.0, 0.3, True, 0.95), (0.99, 0.98, True, 0.95),
    (0.0, 0.01, False, 0.95), (0.0, 0.001, False, 0.95), (0.005, 0.01, False, 0.95), (0.02, 0.01, False, 0.95),
    (0.1, 0.05, False, 0.99), (0.03, 0.05, False, 0.8), (1.0, 0.5, False, 0.95), (0.0, 0.05, False, 0.99),
]


@pytest.mark.parametrize(("rate", "threshold", "higher", "confidence"), GRID)
def test_needed_n_is_the_first_n_the_gate_bound_decides(rate, threshold, higher, confidence):
    n = needed_n_for_rate(rate, threshold, higher_is_better=higher, confidence=confidence)
    assert n is not None
    brute = next(m for m in range(1, 50_000) if _decided(rate, threshold, higher, confidence, m))
    assert n == brute
    # monotone: decided at every larger n in a checked range
    assert all(_decided(rate, threshold, higher, confidence, m) for m in range(n, n + 3000))


def test_needed_n_undecidable_and_cap():
    assert needed_n_for_rate(0.9, 0.9, higher_is_better=True, confidence=0.95) is None
    # about z^2 p (1 - p) / delta^2 = 2.7 * 0.09 / 0.0005^2, nearly a million cases: past a cap of 100k
    n = needed_n_for_rate(0.9005, 0.9, higher_is_better=True, confidence=0.95)
    assert n > 100_000
    assert _decided(0.9005, 0.9, True, 0.95, n) and not _decided(0.9005, 0.9, True, 0.95, n - 1)
    assert needed_n_for_rate(0.9005, 0.9, higher_is_better=True, confidence=0.95, cap=100_000) is None
    assert needed_n_for_rate(0.9005, 0.9, higher_is_better=True, confidence=0.95, cap=n) == n
    assert needed_n_for_rate(0.9005, 0.9, higher_is_better=True, confidence=0.95, cap=n - 1) is None


def test_zero_failure_n_uses_the_gate_rule():
    z = norm.ppf(0.95)
    assert zero_failure_n(0.001) == math.ceil(z * z * 0.999 / 0.001) == 2703  # not the rule of three's 2995
    assert zero_failure_n(0.01) == math.ceil(z * z * 0.99 / 0.01) == 268
    assert zero_failure_n(0.01, 0.99) == math.ceil(norm.ppf(0.99) ** 2 * 0.99 / 0.01)
    n = zero_failure_n(0.001)
    assert wilson_bounds(0, n)[1] <= 0.001 < wilson_bounds(0, n - 1)[1]
    assert needed_n_for_rate(0.0, 0.001, higher_is_better=False, confidence=0.95) == n
    assert zero_failure_n(1.0) == 1


# --- bootstraps ---------------------------------------------------------------------------------------------


def test_bootstrap_is_seeded_and_brackets_the_statistic():
    xs = [float(i) for i in range(1, 101)]
    a = bootstrap(xs, lambda s: percentile(s, 95))
    assert a == bootstrap(xs, lambda s: percentile(s, 95))
    assert a[0] <= percentile(xs, 95) <= a[1]
    assert bootstrap([1.0], lambda s: s[0]) is None


def test_bootstrap_with_no_resamples_has_no_interval():
    assert bootstrap([1.0, 2.0, 3.0], lambda s: sum(s) / len(s), resamples=0) is None  # not (None, None)


def test_bootstrap_one_sided_bounds_sit_inside_the_two_sided_interval():
    xs = [float(i) for i in range(1, 201)]
    two = bootstrap(xs, lambda s: sum(s) / len(s), confidence=0.9, resamples=1000)
    one = bootstrap(xs, lambda s: sum(s) / len(s), confidence=0.9, resamples=1000, sided="one")
    two_at_80 = bootstrap(xs, lambda s: sum(s) / len(s), confidence=0.8, resamples=1000)
    assert two[0] < one[0] < one[1] < two[1]
    assert one == two_at_80  # one-sided at 0.9 each = central at 0.8 (same seed, same resamples)
    with pytest.raises(ValueError):
        bootstrap(xs, sum, sided="both")
    delta, interval = paired_bootstrap_delta(xs, [x + 1 for x in xs], sided="one")
    assert delta == pytest.approx(1.0) and interval == pytest.approx((1.0, 1.0))


def _slow_pooled_percentile(groups, counts, q):
    pooled = np.concatenate([np.repeat(np.asarray(g, dtype=float)[None, :], c, axis=0).ravel() for g, c in zip(groups, counts)])
    return np.percentile(pooled, q)


def test_pooled_percentile_of_a_resample_matches_materialising_it():
    rng = np.random.default_rng(7)
    groups = [rng.exponential(scale, size=size) for scale, size in [(1, 5), (10, 40), (3, 1), (50, 17), (2, 23)]]
    groups.append(np.array([1.0, 1.0, 2.0]))  # ties across groups
    sizes = np.array([len(g) for g in groups])
    values = np.concatenate(groups)
    gid = np.repeat(np.arange(len(groups)), sizes)
    order = np.argsort(values, kind="stable")
    counts = rng.multinomial(len(groups), [1 / len(groups)] * len(groups), size=200)
    counts[0] = [0, 0, 6, 0, 0, 0]  # a resample of one single-gap group, drawn 6 times
    for q in (0, 50, 90, 95, 99, 100):
        fast = _pooled_percentiles(values[order], gid[order], sizes, counts, q)
        slow = [_slow_pooled_percentile(groups, row, q) for row in counts]
        np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=0)


def _correlated_groups(seed=3, n_groups=30, size=200):
    # each request has its own speed: gaps within a request are close, requests differ a lot
    rng = np.random.default_rng(seed)
    return [rng.lognormal(math.log(rng.uniform(10, 100)), 0.05, size=size) for _ in range(n_groups)]


def test_cluster_bootstrap_is_seeded_and_brackets_the_estimate():
    groups = _correlated_groups()
    a = cluster_bootstrap(groups, 95, 0.95, resamples=500, seed=1)
    assert a == cluster_bootstrap(groups, 95, 0.95, resamples=500, seed=1)
    assert a != cluster_bootstrap(groups, 95, 0.95, resamples=500, seed=2)
    point = percentile(np.concatenate(groups), 95)
    assert a[0] <= point <= a[1]
    # one-sided at 0.95 each: narrower than one-sided at 0.99 each, same resamples
    b = cluster_bootstrap(groups, 95, 0.99, resamples=500, seed=1)
    assert b[0] < a[0] < a[1] < b[1]


def test_cluster_bootstrap_is_wider_than_treating_gaps_as_independent():
    groups = _correlated_groups()
    pooled = np.concatenate(groups)
    lo, hi = cluster_bootstrap(groups, 95, 0.95, resamples=500)
    naive_lo, naive_hi = cluster_bootstrap([[x] for x in pooled], 95, 0.95, resamples=500)
    assert hi - lo > 3 * (naive_hi - naive_lo)


def test_cluster_bootstrap_needs_two_groups():
    assert cluster_bootstrap([[1.0, 2.0, 3.0]], 95) is None
    assert cluster_bootstrap([[1.0, 2.0, 3.0], []], 95) is None
    assert cluster_bootstrap([], 95) is None
    assert cluster_bootstrap([[1.0], [2.0]], 50, min_groups=2) is not None
    assert cluster_bootstrap([[1.0]] * 29, 50) is None and cluster_bootstrap([[1.0]] * 30, 50) is not None
