import pytest

from releasegate.stats import percentile, wilson


def test_percentile_linear_interpolation():
    xs = [15.0, 20.0, 35.0, 40.0, 50.0]
    assert percentile(xs, 50) == 35.0
    assert percentile(xs, 40) == pytest.approx(29.0)  # numpy 'linear': pos 1.6 -> 20 + 0.6*15
    assert percentile(xs, 100) == 50.0
    assert percentile(xs, 0) == 15.0
    assert percentile([], 95) is None
    assert percentile([7.0], 99) == 7.0


def test_wilson_published_values():
    # Wilson 95% interval for 81/263 (Newcombe 1998, method 3): 0.2553 to 0.3662
    lo, hi = wilson(81, 263)
    assert lo == pytest.approx(0.2553, abs=1e-4)
    assert hi == pytest.approx(0.3662, abs=1e-4)
    # 0/10: upper bound 0.2775
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)
    assert wilson(0, 0) is None


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
    from releasegate.stats import mcnemar_exact

    assert mcnemar_exact(b, c) == pytest.approx(p, rel=1e-9)


def test_rule_of_three_sample_sizes():
    from releasegate.stats import needed_n_for_rate, zero_failure_n

    assert zero_failure_n(0.001) == 2995  # ln(0.05) / ln(0.999)
    assert zero_failure_n(0.01) == 299
    assert needed_n_for_rate(0.0, 0.001, higher_is_better=False, confidence=0.95) == 2995
    n = needed_n_for_rate(0.95, 0.9, higher_is_better=True, confidence=0.95)
    lo, _ = wilson(round(0.95 * n), n)
    assert lo >= 0.9 and wilson(round(0.95 * (n - 1)), n - 1)[0] < 0.9 or n < 2


def test_bootstrap_is_seeded_and_brackets_the_statistic():
    from releasegate.stats import bootstrap

    xs = [float(i) for i in range(1, 101)]
    a = bootstrap(xs, lambda s: percentile(s, 95))
    assert a == bootstrap(xs, lambda s: percentile(s, 95))
    assert a[0] <= percentile(xs, 95) <= a[1]
    assert bootstrap([1.0], lambda s: s[0]) is None
