"""The LLM judge: open-ended answers graded by a model, and how far reviewers agree with it.

    settings      the config's `judge:` section (JudgeSettings) and the rubric's calibration policy
    prompt        the judge's messages, the verdict's JSON schema, and robust parsing of its reply
    journal       judgments.jsonl: one Judgment per graded case, appended as verdicts come back
    stage         the judging stage of `check` (and `releasegate judge RUN_DIR`): asks, caches, records
    calibration   judge verdicts against reviewers' labels: agreement, Cohen's kappa, confusion tables
    correction    reviewer-corrected accuracy and agreement, post-stratified by how the review sample was drawn
    gating        what the judge means for the verdict: undecided criteria, corrected accuracy

A case is judge-scored when its answer spec is `{type: judge, ...}`. The judge is any target backend (an
OpenAI-compatible endpoint, a local hf model, or a replay file of scripted verdicts); what it said is kept
in the run directory, so `gate` and `report` re-judge a run without asking again.
"""

import importlib
from typing import TYPE_CHECKING

__all__ = [
    "JudgeSettings", "criterion_of", "Judgment", "read_judgments", "JUDGMENTS_FILE", "CalibrationPolicy", "calibrate",
]

_HOMES = {
    "JudgeSettings": "settings", "criterion_of": "settings", "CalibrationPolicy": "settings",
    "Judgment": "journal", "read_judgments": "journal", "JUDGMENTS_FILE": "journal", "calibrate": "calibration",
}

if TYPE_CHECKING:
    from .calibration import calibrate
    from .journal import JUDGMENTS_FILE, Judgment, read_judgments
    from .settings import CalibrationPolicy, JudgeSettings, criterion_of


def __getattr__(name: str):
    """Names load on first use: the rubric reads the calibration policy without the judge's machinery."""
    if name not in _HOMES:
        raise AttributeError(name)

    return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
