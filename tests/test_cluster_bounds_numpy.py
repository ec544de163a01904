"""`cluster_bootstrap` decides that it has too few requests before numpy loads: `gate` on a run without
inter-token gaps (a non-streaming or single-token run: most) never imports numpy, and its figures are unchanged."""

from __future__ import annotations

import subprocess
import sys

import pytest

from releasegate.stats.cluster_bounds import ITL_MIN_REQUESTS, cluster_bootstrap

PROBE = """\
import sys
from releasegate.stats.cluster_bounds import cluster_bootstrap
groups = [[], [1.0, 2.0]] + [[float(i)] for i in range(int(sys.argv[1]))]
print(cluster_bootstrap(groups, 95.0), "numpy" in sys.modules)
"""


def bootstrap_in_a_fresh_interpreter(groups: int) -> str:
    return subprocess.run([sys.executable, "-c", PROBE, str(groups)], capture_output=True, text=True, check=True,
                          timeout=120).stdout.strip()


def test_too_few_requests_give_no_bounds_without_loading_numpy() -> None:
    assert bootstrap_in_a_fresh_interpreter(ITL_MIN_REQUESTS - 2) == "None False"


def test_enough_requests_load_numpy_and_give_bounds() -> None:
    bounds, loaded = bootstrap_in_a_fresh_interpreter(ITL_MIN_REQUESTS).rsplit(" ", 1)
    assert loaded == "True" and bounds.startswith("(")


@pytest.mark.parametrize("groups", [[], [[]] * 40, [[1.0]], [[], [1.0, 2.0], []]])
def test_empty_and_single_requests_give_none_with_min_groups_lowered(groups: list[list[float]]) -> None:
    assert cluster_bootstrap(groups, 50.0, min_groups=0) is None


def test_bad_arguments_are_still_refused_before_the_count() -> None:
    with pytest.raises(ValueError, match="confidence"):
        cluster_bootstrap([], 95.0, confidence=1.5)
    with pytest.raises(ValueError, match="statistic_q"):
        cluster_bootstrap([], 101.0)


def test_no_resamples_give_none() -> None:
    assert cluster_bootstrap([[float(i), i + 0.5] for i in range(40)], 95.0, resamples=0) is None


def test_the_count_is_of_non_empty_requests() -> None:
    """30 requests with gaps among 60 give bounds; 29 with gaps among 60 do not."""
    enough = [[float(i), i + 0.5] for i in range(ITL_MIN_REQUESTS)] + [[]] * 30
    assert cluster_bootstrap(enough, 95.0) is not None
    assert cluster_bootstrap(enough[1:], 95.0) is None
