"""The review line while required review is pending: what is missing, why, and the next command."""

from __future__ import annotations

from .slice_row import SliceRow

__all__ = ["pending_line"]


def pending_line(review: dict[str, SliceRow], row: SliceRow, all_name: str) -> str:
    """'human review: PENDING: 25 required label(s) missing (domain=medical 0/25); domain=medical needs 25 labels,
    not min_reviewed 10: ...; next: releasegate review export RUN_DIR' from the review rows (`row`: the run's,
    `all_name`). A slice that needs more labels than `min_reviewed` says why (its `needed_why`)."""
    short = {name: r.needed - r.reviewed - (r.awaiting_adjudication or 0) for name, r in review.items()
             if name != all_name and r.required and r.status == "pending"}  # a disputed case: adjudication's
    waiting = {name: r for name, r in review.items() if short.get(name, 0) > 0}
    missing = sum(short[name] for name in waiting)
    allowed = " (allowed by --allow-pending)" if row.status != "pending" else ""
    awaiting = row.awaiting_adjudication or 0
    why = "".join(dict.fromkeys(f"; {name} needs {r.needed_why}" for name, r in waiting.items() if r.needed_why))
    parts = [f"{missing} required label(s) missing ("
             + ", ".join(f"{name} {r.reviewed}/{r.needed}" for name, r in waiting.items()) + f"){why}"] \
        if missing else []
    if awaiting:
        parts.append(f"{awaiting} disagreement(s) await adjudication")
    blanks = (row.unlabelled_drawn or 0) - missing - awaiting  # the sample's other rows left blank
    if blanks > 0:
        parts.append(f"{blanks} row(s) of the review sample left blank (every drawn row needs its label)")
    step = "review export RUN_DIR" + (" --adjudication" if awaiting and not missing else "")
    return f"human review: PENDING{allowed}: {'; '.join(parts)}; next: releasegate {step}"
