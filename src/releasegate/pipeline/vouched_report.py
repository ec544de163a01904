"""The report a `report` command renders, vouched for: in a sealed run the seal vouches for report.json
(`record.gate_report.load_report`); a run with no seal at all (older, or built by hand, or one whose `sealed` key
was deleted) has nothing that does, so a PASS it says is rendered only when its records, judged again by its own
rubric snapshot, say PASS too. Its other verdicts are rendered as they are: none of them lets anything ship."""

from __future__ import annotations

from ..border.files import exists, sha256_file
from ..decision.verdicts import PASS
from ..errors import InputError
from ..record.gate_report import load_report
from ..record.records import RunDir
from ..record.sealed import seal_of

__all__ = ["require_vouched_report"]


def require_vouched_report(run: RunDir) -> None:
    """Refuse (InputError, exit 2) to render an unsealed run whose report.json says PASS and whose records do not."""
    path = run.path / "report.json"
    if not exists(path) or seal_of(run.path, "report.json", sha256_file(path, what="report.json")) != "unsealed":
        return  # missing, sealed, or not what the seal names: `load_report` says which as it renders
    if load_report(run).verdict != PASS:
        return
    # imported here: judging again loads the gate's features, which rendering a sealed run never needs
    from .regate import judged_again

    again = judged_again(run.path)
    if again != PASS:
        raise InputError(f"report.json says PASS, but nothing seals this run and its records, judged again by its "
                         f"own rubric, say {again or 'nothing (no usable rubric snapshot)'}", file=path,
                         hint=f"judge it again: releasegate gate {run.path}")
