"""A latency criterion under a late client: the client's measured lateness widens the figure's bounds instead of
blocking it. A figure read by a late client may be off by up to its lateness either way (a send stamped late reads
short, a chunk read late reads long, gaps read together are stamped together), so the criterion is decided on
[lower - lateness, upper + lateness]: PASS when even the widened safe side meets the threshold, FAIL when even
the widened other side misses it, INCONCLUSIVE (undecided) only when the widened bounds straddle it. A lateness
that can only have made figures read long (the in-process model's wait for a CPU: a starved step is slower, never
faster) widens below only: a figure that meets its limit as read met it in truth."""

from __future__ import annotations

import operator

__all__ = ["widened_latency", "widen"]

_OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}


def widen(bounds: tuple[float, float] | None, lateness_ms: float, *, reads_long: bool = False
          ) -> tuple[float, float] | None:
    """`bounds` widened by `lateness_ms` on each side, or below only when the lateness can only have made the
    figure read long (`reads_long`); None stays None."""
    if bounds is None:
        return None
    return bounds[0] - lateness_ms, bounds[1] + (0.0 if reads_long else lateness_ms)


def widened_latency(op: str, threshold: float, bounds: tuple[float, float], lateness_ms: float, *,
                    reads_long: bool = False) -> tuple[str, str]:
    """('pass' | 'fail' | 'insufficient', why) for a latency figure whose bounds (a point: both the same) are
    widened by `lateness_ms` on each side (below only with `reads_long`)."""
    lo, hi = widen(bounds, lateness_ms, reads_long=reads_long)  # type: ignore[misc]  # bounds given
    higher = op in (">=", ">")
    safe, other = (lo, hi) if higher else (hi, lo)
    sides = "below (a wait for a CPU only lengthens)" if reads_long else "on each side"
    span = f"[{lo:.4g}, {hi:.4g}] with the client's lateness ({lateness_ms:.1f} ms) {sides}"
    if _OPS[op](safe, threshold):
        return "pass", f"{span}: {op} {threshold:g}"
    if not _OPS[op](other, threshold):
        return "fail", f"{span}: not {op} {threshold:g}"
    return "insufficient", f"{span} straddles {threshold:g}: the client's lateness could set the verdict"
