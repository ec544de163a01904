"""Anytime-valid tests and confidence sequences for a mean in [0, 1], by betting.

Waudby-Smith and Ramdas, "Estimating means of bounded random variables by betting" (JRSSB 2024). To show that
the mean of values x_1, x_2, ... in [0, 1] lies above m, a gambler starts with wealth 1 and before each value
bets a share lambda_t, chosen from the values before it only (predictable), that x_t comes out above m:

    K_t(m) = prod_{i <= t} (1 + lambda_i (x_i - m)),      0 <= lambda_i <= c / m  (c < 1: wealth stays positive)

When the mean is at most m, K_t(m) is a nonnegative supermartingale, so by Ville's inequality the chance that it
EVER reaches 1 / alpha is at most alpha: "the mean is above m" said the first time K_t(m) >= 1 / alpha holds at
level alpha however the stopping time was chosen (after every case, on a look at the data). Testing "below m" is
the same bet on 1 - x against 1 - m. The bets are the paper's predictable plug-in (its eq. (26)-(27)):

    lambda_t = sqrt(2 log(1 / alpha) / (sigma2_{t-1} t log(1 + t)))   capped at c / m
    mu_t = (1/2 + sum_{i<=t} x_i) / (t + 1),   sigma2_t = (1/4 + sum_{i<=t} (x_i - mu_i)^2) / (t + 1)

(the paper's two-sided log(2 / alpha) is one side's log(1 / alpha) at half the level). The set of m that no
side has rejected is a confidence sequence: `confidence_sequence` gives its running lower and upper bounds.

Every function takes one path of values (shape (n,)) or many paths at once (shape (runs, n)): a simulation of
thousands of runs is one numpy pass.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # numpy loads where a stopping run computes: every `gate` imports this module, few need it
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

__all__ = ["Side", "TRUNCATION", "plugin_bets", "log_wealth", "first_crossing", "confidence_sequence",
           "e_value_at", "binomial_tail", "exact_rate_shown", "confidence_bounds"]

Side = Literal["above", "below"]
"""'above': evidence that the mean exceeds m (against 'mean <= m'); 'below': that it is under m."""

TRUNCATION = 0.75
"""c: no bet stakes more than c of what a single value could lose (the paper's 1/2 or 3/4)."""

_GRID = 2001  # candidate means of a confidence sequence's bounds: a resolution of 0.0005


def _paths(values: ArrayLike) -> NDArray[np.float64]:
    import numpy as np

    x = np.asarray(values, dtype=np.float64)
    if x.ndim not in (1, 2):
        raise ValueError(f"values must be one path (n,) or many (runs, n), got shape {x.shape}")
    if x.size and (not np.all(np.isfinite(x)) or x.min() < 0.0 or x.max() > 1.0):
        raise ValueError("values must be finite and in [0, 1]")
    return x


def _check_level(alpha: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")


def plugin_bets(values: ArrayLike, alpha: float) -> NDArray[np.float64]:
    """The predictable plug-in bet lambda_t for each value (before any cap at c / m): lambda_t reads the values
    before t only. Same shape as `values`."""
    import numpy as np

    _check_level(alpha)
    x = _paths(values)
    n = x.shape[-1]
    t = np.arange(1, n + 1, dtype=np.float64)
    mu = (0.5 + np.cumsum(x, axis=-1)) / (t + 1)
    sigma2 = (0.25 + np.cumsum((x - mu) ** 2, axis=-1)) / (t + 1)
    before = np.concatenate([np.full(x.shape[:-1] + (1,), 0.25), sigma2[..., :-1]], axis=-1)  # sigma2_{t-1}
    return np.sqrt(2.0 * math.log(1.0 / alpha) / (before * t * np.log1p(t)))


def _check_mean(m: float) -> None:
    if not 0.0 <= m <= 1.0 or math.isnan(m):
        raise ValueError(f"the mean tested must be in [0, 1], got {m!r}")


def log_wealth(values: ArrayLike, m: float, side: Side, alpha: float,
               bets: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """log K_t(m) after each value: the running log e-process against 'mean <= m' (side 'above') or 'mean >= m'
    (side 'below'). At m = 0 ('above') or m = 1 ('below') nothing can be shown (the null is any mean at all):
    -inf throughout, never a crossing. `bets`: `plugin_bets(values, alpha)` when already computed."""
    import numpy as np

    _check_mean(m)
    x = _paths(values)
    lam = plugin_bets(x, alpha) if bets is None else bets
    if side == "above":
        gain, room = x - m, m
    elif side == "below":
        gain, room = m - x, 1.0 - m
    else:
        raise ValueError(f"side must be 'above' or 'below', got {side!r}")
    if room <= 0.0:
        return np.full(x.shape, -np.inf)
    stake = np.minimum(lam, TRUNCATION / room)
    return np.cumsum(np.log1p(stake * gain), axis=-1)


def first_crossing(values: ArrayLike, m: float, side: Side, alpha: float,
                   bets: NDArray[np.float64] | None = None) -> NDArray[np.int64]:
    """The number of values after which K_t(m) first reaches 1 / alpha (1-based), or 0 where it never does: a
    scalar array for one path, one per run for many. `bets`: as for `log_wealth` (a bet sized for another level
    is still a predictable bet: the crossing stays valid at `alpha`)."""
    import numpy as np

    _check_level(alpha)
    wealth = log_wealth(values, m, side, alpha, bets)
    hit = wealth >= math.log(1.0 / alpha)
    first = np.argmax(hit, axis=-1) + 1
    return np.where(hit.any(axis=-1), first, 0).astype(np.int64)


def e_value_at(values: ArrayLike, m: float, side: Side, alpha: float) -> float:
    """The e-process's running maximum over one path: the largest wealth it reached (1.0 before any value)."""
    import numpy as np

    x = _paths(values)
    if x.ndim != 1:
        raise ValueError("e_value_at takes one path")
    if x.size == 0:
        return 1.0
    return float(np.exp(max(0.0, float(np.max(log_wealth(x, m, side, alpha))))))


def confidence_sequence(values: ArrayLike, alpha: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(lower, upper) after each value of one path: the running intersection of {m : K_t(m) < 1 / alpha} on each
    side, each side at `alpha` (together a two-sided sequence at 2 alpha). The bounds are on a grid of 2001
    candidate means, each rounded outward (lower down, upper up), so they never claim more than the bets showed."""
    import numpy as np

    x = _paths(values)
    if x.ndim != 1:
        raise ValueError("confidence_sequence takes one path")
    n = x.shape[0]
    if n == 0:
        return np.zeros(0), np.zeros(0)
    grid = np.linspace(0.0, 1.0, _GRID)[:, None]
    bets = plugin_bets(x, alpha)[None, :]
    level = math.log(1.0 / alpha)
    with np.errstate(divide="ignore"):  # m = 0 and m = 1 leave no room: an infinite cap, replaced below
        above_stake = np.minimum(bets, TRUNCATION / grid)
        below_stake = np.minimum(bets, TRUNCATION / (1.0 - grid))
    # rejected[g, t]: m = grid[g] rejected by time t (running: once rejected, for good)
    above = np.maximum.accumulate(np.cumsum(np.log1p(above_stake * (x - grid)), axis=1), axis=1) >= level
    below = np.maximum.accumulate(np.cumsum(np.log1p(below_stake * (grid - x)), axis=1), axis=1) >= level
    above[0], below[-1] = above[1], below[-2]  # m = 0 (1) cannot be bet against: rejected with its neighbour
    # K(m) 'above' falls as m rises: the rejected means are a prefix of the grid; the lower bound is the first
    # grid mean not rejected (the one before it was, so the true bound is at or above it)
    lower_at = np.argmin(above, axis=0)
    lower_at = np.where(above.all(axis=0), _GRID - 1, lower_at)
    grid = grid[:, 0]
    lower = grid[np.maximum(lower_at - 1, 0)]
    upper_at = _GRID - 1 - np.argmin(below[::-1], axis=0)
    upper_at = np.where(below.all(axis=0), 0, upper_at)
    upper = grid[np.minimum(upper_at + 1, _GRID - 1)]
    return lower, upper


def binomial_tail(n: int, m: float, at_least: int) -> float:
    """P(Binomial(n, m) >= at_least), exactly (log-space sums: no overflow at any n)."""
    import numpy as np

    if at_least <= 0:
        return 1.0
    if at_least > n:
        return 0.0
    if m <= 0.0 or m >= 1.0:
        return 0.0 if m <= 0.0 else 1.0
    log_factorial = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n + 1, dtype=np.float64)))])
    k = np.arange(at_least, n + 1)
    log_choose = log_factorial[n] - log_factorial[k] - log_factorial[n - k]
    logs = log_choose + k * math.log(m) + (n - k) * math.log1p(-m)
    top = float(logs.max())
    return float(min(1.0, math.exp(top) * float(np.exp(logs - top).sum())))


def exact_rate_shown(successes: int, n: int, m: float, side: Side, alpha: float) -> bool:
    """Whether n yes/no cases with `successes` yes show, by the exact binomial test at level `alpha` (the
    Clopper-Pearson bound's), that the rate is above m ('above') or below m ('below')."""
    _check_level(alpha)
    _check_mean(m)
    if n <= 0 or not 0 <= successes <= n:
        return False
    if side == "above":
        return binomial_tail(n, m, successes) <= alpha
    return binomial_tail(n, 1.0 - m, n - successes) <= alpha


def confidence_bounds(values: ArrayLike, alpha: float, tolerance: float = 1e-4) -> tuple[float, float]:
    """The confidence sequence's (lower, upper) after the last value of one path, by bisection on each side (the
    running maximum of K_t(m) falls as m moves away from where the values lie), rounded outward to `tolerance`:
    what `confidence_sequence` gives at its end, in O(n log(1 / tolerance)) time and O(n) memory."""
    import numpy as np

    x = _paths(values)
    if x.ndim != 1:
        raise ValueError("confidence_bounds takes one path")
    if x.size == 0:
        return 0.0, 1.0
    bets = plugin_bets(x, alpha)
    level = math.log(1.0 / alpha)

    def rejected(m: float, side: Side) -> bool:
        return bool(np.max(log_wealth(x, m, side, alpha, bets)) >= level)

    lo, hi = 0.0, 1.0  # lower bound: the largest m rejected 'above' lies in [lo, hi)
    while hi - lo > tolerance:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if rejected(mid, "above") else (lo, mid)
    lower = lo
    lo, hi = 0.0, 1.0  # upper bound: the smallest m rejected 'below' lies in (lo, hi]
    while hi - lo > tolerance:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if rejected(mid, "below") else (mid, hi)
    return lower, hi
