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
