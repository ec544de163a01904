"""How far two raters agree on approve/reject: Cohen's kappa with the raw agreement and the 2x2 table it is
counted from. Used for reviewer-reviewer agreement (double labelling, `review.labels_per_case: 2`) and for the
agreement between the automatic verdict and the human label.

Kappa is (po - pe) / (1 - pe): po the share of cases the two agree on, pe the agreement expected by chance from
each rater's own approval rate, p1 p2 + (1 - p1)(1 - p2) (sklearn's `cohen_kappa_score` and statsmodels'
`cohens_kappa` count the same). When chance agreement is total kappa is
undefined (both raters gave every case the same one label): None, never 1.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from ..data_classes import dataclass
from ..model_base import Model
from ..record.records import CaseRecord
from ..record.review_labels import APPROVE, LabelEdit, awaiting_adjudication, reviewer_pairs

__all__ = ["cohen_kappa", "Kappa", "kappa_of", "kappa_figures", "ReviewerAgreement", "kappa_words", "reviewer_agreement", "agreement_words", "DoubleLabels",
           "double_labels"]


def cohen_kappa(pairs: list[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of two yes/no raters; None with no pairs or when chance agreement is total (undefined)."""
    n = len(pairs)
    if not n:
        return None
    observed = sum(a == b for a, b in pairs) / n
    p_a, p_b = sum(a for a, _ in pairs) / n, sum(b for _, b in pairs) / n
    chance = p_a * p_b + (1 - p_a) * (1 - p_b)
    return None if chance >= 1 else (observed - chance) / (1 - chance)


@dataclass(frozen=True)
class Kappa:
    """Kappa with what explains it (see `kappa_figures`)."""

    kappa: float | None
    agreement: float | None
    """The raw share of pairs that agree."""
    prevalence: float | None
    """The share of all ratings, both raters pooled, that are yes: pass or approve."""


def kappa_of(pairs: list[tuple[bool, bool]]) -> Kappa:
    """`kappa_figures`, typed."""
    n = len(pairs)
    return Kappa(cohen_kappa(pairs), sum(a == b for a, b in pairs) / n if n else None,
                 sum(a + b for a, b in pairs) / (2 * n) if n else None)


def kappa_figures(pairs: list[tuple[bool, bool]]) -> dict[str, Any]:
    """Kappa with what explains it, as report.json keeps them beside it: `kappa`, `kappa_agreement` (the raw share
    of pairs that agree) and `kappa_prevalence` (the share of all ratings, both raters pooled, that are yes: pass or
    approve). Near 0 or 1, kappa is near 0 however well the raters agree (94.8% agreement with 97% of the labels
    'pass' can be kappa 0.00): a reader needs the three together."""
    found = kappa_of(pairs)
    return {"kappa": found.kappa, "kappa_agreement": found.agreement, "kappa_prevalence": found.prevalence}


def kappa_words(kappa: float | None, agreement: float | None, prevalence: float | None, *, yes: str = "pass",
                no: str = "fail", short: bool = False) -> str:
    """'kappa 0.00 at 94.8% agreement, 97% of labels 'pass'' (`short`, for a table cell: '0.00 (94.8% agree, 97%
    pass)'); the kappa alone when the report predates the other two."""
    shown = "undefined" if kappa is None else f"{kappa:.2f}"
    if agreement is None or prevalence is None:
        return shown if short else f"kappa {shown}"
    share, word = (prevalence, yes) if prevalence >= 0.5 else (1 - prevalence, no)
    if short:
        return f"{shown} ({agreement:.1%} agree, {share:.0%} {word})"
    return f"kappa {shown} at {agreement:.1%} agreement, {share:.0%} of labels '{word}'"


class ReviewerAgreement(Model):
    """The first and second reviewer's labels of the double-labelled cases, as report.json keeps them."""

    model_config = ConfigDict(extra="allow")  # a newer report read by an older renderer keeps what it does not know

    cases: int
    agreed: int
    agreement: float
    """agreed / cases"""
    kappa: float | None = None
    prevalence: float | None = None
    """Absent from a report older than it."""
    table: dict[str, int] = {}
    """The counts of each (first, second) pair of labels, e.g. 'approve/reject'."""


def reviewer_agreement(pairs: list[tuple[str, str]]) -> dict[str, Any] | None:
    """The first and second reviewer's labels of each double-labelled case, as report.json keeps them: `cases`,
    `agreed`, `agreement` (agreed / cases), `kappa`, and `table`, the counts of each (first, second) pair of
    labels; None when no case has two labels."""
    if not pairs:
        return None
    table = {f"{a}/{b}": sum(p == (a, b) for p in pairs) for a in ("approve", "reject") for b in ("approve", "reject")}
    agreed = sum(a == b for a, b in pairs)
    figures = kappa_of([(a == APPROVE, b == APPROVE) for a, b in pairs])
    return {"cases": len(pairs), "agreed": agreed, "agreement": agreed / len(pairs), "kappa": figures.kappa,
            "prevalence": figures.prevalence, "table": table}


def agreement_words(agreement: dict[str, Any] | None) -> str | None:
    """'reviewers agree on 18 of 20 double-labelled cases (90.0%), kappa 0.78 at 90.0% agreement, 60% of labels
    'approve''; None without double labels."""
    if agreement is None:
        return None
    said = ReviewerAgreement.model_validate(agreement)
    kappa = kappa_words(said.kappa, said.agreement, said.prevalence, yes="approve", no="reject")
    return f"reviewers agree on {said.agreed} of {said.cases} double-labelled cases ({said.agreement:.1%}), {kappa}"


@dataclass(frozen=True)
class DoubleLabels:
    """What several labels per case add to a review summary: the cases awaiting an adjudicator (only where the
    policy asks for two labels per case: with one, the disagreement rule decided them), and each double-labelled
    case's (first, second) reviewer labels."""

    awaiting: frozenset[str]
    pairs: dict[str, tuple[str, str]]

    def awaiting_in(self, chosen: list[CaseRecord]) -> int:
        """A summary row's `awaiting_adjudication`: the cases `chosen` awaiting an adjudicator."""
        return sum(r.case_id in self.awaiting for r in chosen)

    def agreement_in(self, chosen: list[CaseRecord]) -> dict[str, Any] | None:
        """A summary row's `reviewer_agreement` over the cases `chosen`."""
        return reviewer_agreement([self.pairs[r.case_id] for r in chosen if r.case_id in self.pairs])


def double_labels(edits: list[LabelEdit], labels_per_case: int) -> DoubleLabels:
    """The double labelling of `edits` (labels on the outputs the run holds) under the policy's `labels_per_case`."""
    awaiting = frozenset(awaiting_adjudication(edits)) if labels_per_case > 1 else frozenset()
    return DoubleLabels(awaiting, reviewer_pairs(edits))
