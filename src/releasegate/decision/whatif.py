"""A what-if (`gate RUN_DIR --rubric OTHER`): what another rubric would say of a saved run. It never exits 0
unless the run's recorded verdict (under its own rubric) is PASS too: another rubric's PASS is no release."""

from __future__ import annotations

from ..record.decision_evidence import WhatIfEvidence
from .verdicts import INCONCLUSIVE, PASS, Decision, decision

__all__ = ["decide_whatif"]


def decide_whatif(e: WhatIfEvidence, reason: str) -> Decision:
    """The what-if's decision: its own verdict and `reason`, except that a PASS over a run whose recorded verdict
    is not PASS is INCONCLUSIVE (exit 3)."""
    if e.whatif_verdict != PASS or e.recorded_verdict == PASS:
        return decision(e.whatif_verdict, reason)
    recorded = e.recorded_verdict or "unknown (no readable report.json)"
    return decision(INCONCLUSIVE, f"a what-if: this rubric would pass the run ({reason}), but the run's recorded "
                                  f"verdict under its own rubric is {recorded}; a what-if is no release")
