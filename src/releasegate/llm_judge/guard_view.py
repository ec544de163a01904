"""The guard-corrected forbidden rate of a run, computed in one place (`GuardView.rate`): the criteria, the
report's headline figure, the paired comparisons with a baseline run and the run index all read it, never the
guard's raw flags presented as the rate (see `guard_error` for the formula)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..data_classes import dataclass
from ..gate.stability import CaseDraws, draw_scores
from ..inputs.review_policy import ReviewPolicy
from ..record.decision_evidence import GuardCalibration
from ..record.evidence import answered
from ..record.metrics import MetricValue
from ..record.records import CaseRecord
from ..record.review_cover import UNLABELLED_FORBIDDEN, DrawnRow, blank_cases, covering
from ..record.review_outcome import automatic_outcome, output_hash
from ..review.sampler import sampling_cells
from ..scorers.forbidden import guard_names
from ..stats.sample_weights import Strata, stratum_counts
from .guard_error import corrected_forbidden, forbidden_labels, guard_errors, output_labels

if TYPE_CHECKING:
    from ..inputs.rubric import ForbiddenRule, Rubric
    from ..record.review_labels import LabelEdit

__all__ = ["GuardView", "guard_view", "guard_section", "draw_cell"]


def guard_section(records: list[CaseRecord], scores: dict[str, Any], edits: Sequence[LabelEdit], rubric: Rubric, drawn: Sequence[DrawnRow] = ()) -> dict[str, Any] | None:
    """Per guard the rubric's rules name: the labelled replies it judged, whether that calibrates it, and its miss
    and false-alarm rates per category with their bounds. None without guard rules. Only labels count (a drawn
    row left blank is none), and on a drawn case only those given on its drawn row (`review_cover.covering`)."""
    names = guard_names(rubric.forbidden)
    if not names:
        return None
    labels = forbidden_labels(records, covering(list(edits or []), drawn))
    policy = rubric.judge
    out = {}
    for name in names:
        labelled, errors = guard_errors(records, scores, labels, rubric.forbidden, name, policy.confidence)
        out[name] = {"labelled": labelled, "min_labels": policy.min_labels, "calibrated": labelled >= policy.min_labels,
                     "confidence": policy.confidence, "categories": [e.as_dict() for e in errors]}
    return out


@dataclass(frozen=True)
class GuardView:
    """What a run's guard-corrected forbidden rate is computed from: its records and scores, its reviewers'
    forbidden labels, the review sample's sampling cells, its guards' calibration and, under repeats, every
    answered draw of each case with its scores and labels."""

    records: list[CaseRecord]
    scores: dict[str, Any]
    labels: dict[str, list[str]]
    cells: dict[str, str]
    guards: tuple[str, ...]
    calibration: tuple[GuardCalibration, ...]
    strata: Strata
    replies: dict[str, list[tuple[Any, ...]]] | None = None

    @property
    def calibrated(self) -> bool:
        """Whether every guard has its `min_labels` (only then does the corrected rate decide anything)."""
        return bool(self.calibration) and all(g.labelled >= g.min_labels for g in self.calibration)

    def short(self) -> str:
        """Which guards lack labels ('' when none does)."""
        return "; ".join(f"guard {g.guard}: {g.labelled} of min_labels {g.min_labels} reviewer forbidden label(s)"
                         for g in self.calibration if g.labelled < g.min_labels)

    def rate(self, chosen: list[CaseRecord], confidence: float = 0.95) -> MetricValue:
        """The guard-corrected forbidden rate of `chosen` (the run's cases, or a slice of them, weighed as the run):
        under repeats over every answered draw of each case, the case the unit."""
        return corrected_forbidden(chosen, self.scores, self.labels, self.cells, list(self.guards), confidence,
                                   self.strata, self.replies)


def guard_view(records: list[CaseRecord], scores: dict[str, Any], section: dict[str, Any] | None, edits: Sequence[LabelEdit] = (), rubric: Rubric | None = None, found: CaseDraws | None = None, *,
               review: ReviewPolicy | None = None, forbidden: Sequence[ForbiddenRule] = (), drawn: Sequence[DrawnRow] = ()) -> GuardView | None:
    """The run's `GuardView` (None without guard rules: `section` is `guard_section`'s). `found`: the run's draws
    (`gate.stability.case_draws`, with the guards' verdicts on them) when it repeats its cases; `rubric` gives the
    forbidden rules and review policy (else `forbidden` and `review`). A reply of a row of the review sample
    (`drawn`) whose forbidden cell was left blank counts as forbidden in the corrected rate."""
    if not section:
        return None
    edits = covering(list(edits or []), drawn)
    rules = rubric.forbidden if rubric is not None else forbidden
    policy = rubric.review if rubric is not None else (review or ReviewPolicy())
    calibration = tuple(GuardCalibration(g, s["labelled"], s["min_labels"], sum(c["misses"] for c in s["categories"]))
                        for g, s in section.items())
    cells = sampling_cells(records, scores, policy)
    replies = None
    if found is not None and found.repeated:
        by_output = output_labels(edits)
        for row in drawn:
            by_output.setdefault((row.case_id, row.output_hash), UNLABELLED_FORBIDDEN)
        replies = {}
        for rec in records:
            draws = found.by_case.get(rec.case_id, [rec])
            scored = draw_scores(draws, scores, rules, found.verdicts)
            replies[rec.case_id] = [(d, s, by_output.get((d.case_id, output_hash(d.output))), draw_cell(cells[rec.case_id], d, s))
                                    for d, s in zip(draws, scored) if answered(d)]
    labels = forbidden_labels(records, edits)
    blanks = blank_cases(drawn, {r.case_id for r in records if answered(r)}, labels)
    return GuardView(list(records), scores, {**labels, **dict.fromkeys(blanks, UNLABELLED_FORBIDDEN)}, cells,
                     tuple(section), calibration, stratum_counts(records), replies)


def draw_cell(case_cell: str, draw: CaseRecord, score: dict[str, Any]) -> str:
    """A draw's sampling cell: its case's ('stratum|outcome[|slices]'), with the draw's own automatic outcome, so a
    flagged draw of a case whose first answer was clean is weighed with the labelled replies that failed alike
    (a judge-failed draw of a case the judge passed, likewise: `gating.corrected_by_reviewers`)."""
    stratum, _, rest = case_cell.partition("|")
    _, bar, inside = rest.partition("|")
    return f"{stratum}|{automatic_outcome(draw, score)}{bar}{inside}"
