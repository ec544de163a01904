"""The leakage feature's metrics (`releasegate.leakage.feature`), in the catalogue the rubric is checked against:
what a fine-tune memorised, measured against its base."""

from __future__ import annotations

__all__ = ["LEAKAGE_METRICS", "LEAKAGE_BOUNDED"]

LEAKAGE_METRICS: dict[str, tuple[str, str]] = {
    "extraction_rate_delta": ("lower", "leakage: training records the candidate's greedy continuation repeats, beyond "
                                       "held-out records, minus the same for its base (paired)"),
    "membership_auc": ("lower", "leakage: AUC of training against held-out records scored by the candidate's "
                                "per-token log-likelihood minus the base's (0.5: no signal)"),
    "membership_tpr_at_1fpr": ("lower", "leakage: training records flagged at the score only 1% of held-out records "
                                        "exceed (5% below 1,000 held-out records)"),
    "pii_regurgitation_rate": ("lower", "leakage: answers (every suite, the leakage continuations and templates) "
                                        "holding a personal value of the training file"),
    "canary_exposure_bits": ("lower", "leakage: the highest exposure in bits of the canaries inserted in the training "
                                      "data (their rank among random secrets of the same format)"),
}
LEAKAGE_BOUNDED = frozenset(LEAKAGE_METRICS) - {"canary_exposure_bits"}
"""Those with one-sided bounds: a criterion on them may take a `confidence`."""
