"""Stable answers: what a case's repeated draws (`generation.repeats`) say, case by case.

A case asked k times is one cluster: every bound here counts cases, never draws, so nothing gains n by
repeating. A case's draws are its record in records.jsonl (draw 0) and its lines in draws.jsonl (draws 1..k-1,
the last line of a (case, draw) winning, as in records.jsonl). What the journal does not hold as planned
(run.json `repeats`) is named, never counted: a draw missing, a draw answered from the response cache, a draw
of a case the run does not have, a draw number past k. The figures are then unknown, and `draw_problems` makes
the run incomplete.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import field, replace
from typing import TYPE_CHECKING, Any

from ..data_classes import dataclass
from ..errors import ReleasegateError
from ..record.evidence import answered, failure
from ..record.judge_verdicts import Verdicts
from ..record.metrics import MetricValue
from ..record.records import CaseRecord, RunDir, RunInfo
from ..scorers import normalize, score_record
from ..scorers.forbidden import guard_names
from ..stats.intervals import cluster_share_bounds, wilson_bounds
from ..stats.sample_weights import Strata, case_weights, is_weighted, kish_n, stratum_counts
from .case_scores import answer_type, case_scores

if TYPE_CHECKING:
    from ..inputs.rubric import ForbiddenRule

__all__ = ["CaseDraws", "case_draws", "draw_metric", "per_draw_rate", "draw_problems", "answer_key", "draws_table",
           "unstable_cases", "DRAW_METRICS", "guards_only", "draw_verdicts", "draw_scores", "draw_share"]

DRAW_METRICS = ("pass_all_k", "pass_any_k", "flip_rate", "answer_agreement")
_NAMED = 10  # cases a note names before it says how many more


@dataclass
class CaseDraws:
    """Every case's draws as the gate reads them, and what did not fit the plan."""

    by_case: dict[str, list[CaseRecord]] = field(default_factory=dict)
    """Case id -> its draws, draw 0 first (only cases planned with more than one draw)."""
    planned: dict[str, int] = field(default_factory=dict)
    """Case id -> the draws it must have."""
    missing: list[str] = field(default_factory=list)
    """Cases with fewer draws than planned."""
    cached: list[str] = field(default_factory=list)
    """Cases with a draw marked as answered from the response cache (repeats are always asked anew)."""
    foreign: int = 0
    """draws.jsonl lines of no planned (case, draw): a case the run does not have, a draw number past k, another
    question or other checks than the case's."""
    twice: list[str] = field(default_factory=list)
    """Cases with a draw answered twice: a draw is asked again only after it failed (a resume, --retry-errors)."""
    verdicts: Verdicts | None = None
    """The judge's and the guards' verdicts on the draws (`draw_verdicts`: the judge stage grades every answered
    draw of a judge-scored case, the guard stage classifies every answered draw)."""

    @property
    def repeated(self) -> bool:
        return bool(self.by_case)

    def problem(self) -> str | None:
        """Why the draws cannot be counted as planned (None: they can)."""
        parts = []
        if self.missing:
            parts.append(f"{len(self.missing)} case(s) lack planned draws ({_names(self.missing)})")
        if self.cached:
            parts.append(f"{len(self.cached)} case(s) have a draw from the response cache ({_names(self.cached)})")
        if self.foreign:
            parts.append(f"draws.jsonl holds {self.foreign} draw(s) of no planned case and draw")
        if self.twice:
            parts.append(f"{len(self.twice)} case(s) have a draw answered twice ({_names(self.twice)})")
        return "; ".join(parts) or None


def case_draws(info: RunInfo, records: list[CaseRecord], draws: list[CaseRecord],
               verdicts: Verdicts | None = None) -> CaseDraws:
    """The run's draws by case, checked against the plan in run.json `repeats` (none planned: no draws);
    `verdicts`: the run's (`llm_judge.run_verdicts`), with which the draws are scored (`draw_verdicts`)."""
    out = CaseDraws(verdicts=draw_verdicts(verdicts))
    plan = info.repeats or {}
    latest: dict[tuple[str, int], CaseRecord] = {}
    twice = set()
    for rec in draws:
        prior = latest.get((rec.case_id, rec.draw))
        if prior is not None and failure(prior) is None:
            twice.add(rec.case_id)  # never asked again once answered: a copied line, not a draw
        latest[(rec.case_id, rec.draw)] = rec  # a failed draw asked again (a resume, --retry-errors): the last wins
    of_case: dict[str, list[CaseRecord]] = {}
    for (case_id, _), rec in sorted(latest.items(), key=lambda kv: kv[0][1]):
        of_case.setdefault(case_id, []).append(rec)
    used = 0
    for rec in records:
        k = plan.get(rec.suite, 1)
        if k <= 1:
            continue
        # the journal's draws of the case, never a count to k: run.json's plan is read, not trusted to be small
        found = [d for d in of_case.get(rec.case_id, ()) if 1 <= d.draw < k and _same_case(rec, d)]
        used += len(found)
        out.by_case[rec.case_id], out.planned[rec.case_id] = [rec, *found], k
        if len(found) < k - 1:
            out.missing.append(rec.case_id)
        if any(r.cached for r in (rec, *found)):
            out.cached.append(rec.case_id)
    out.foreign = len(latest) - used
    out.twice = sorted(twice)
    return out


def guards_only(verdicts: Verdicts | None) -> Verdicts | None:
    """The guards' verdicts of `verdicts`, none of the judge's (None without guards): what a load answer, which
    no judge grades, is classified with."""
    if verdicts is None or not verdicts.guards:
        return None
    return replace(verdicts, fingerprint=None, baseline_hashes={})


def draw_verdicts(verdicts: Verdicts | None) -> Verdicts | None:
    """The verdicts a repeated draw is scored with: the judge's on its output (the judge stage grades every
    answered draw; a draw that said what another reply of its case said shares that reply's verdict) and the
    guards'; no pairwise comparison (the baseline run's output is compared with the case's draw 0 alone)."""
    if verdicts is None or (verdicts.fingerprint is None and not verdicts.guards):
        return None
    return replace(verdicts, baseline_hashes={})


def draw_scores(draws: list[CaseRecord], scores: dict[str, Any], forbidden: Sequence[ForbiddenRule], verdicts: Verdicts | None = None,
                stored: bool = True) -> list[dict[str, Any]]:
    """Each draw's scores: the first is the case's own record, scored already (`scores`; `stored`), every other
    is scored here with the judge's and the guards' verdicts on it (`verdicts`, as `draw_verdicts` keeps them)."""
    return [scores.get(rec.case_id, {}) if i == 0 and stored else score_record(rec, forbidden, draw_verdicts(verdicts))
            for i, rec in enumerate(draws)]


def _same_case(case: CaseRecord, draw: CaseRecord) -> bool:
    """Whether a draw asked the case's question and is checked as the case is (else it is no draw of it)."""
    return (draw.suite, draw.input, draw.expected, draw.answer, draw.format) == (
        case.suite, case.input, case.expected, case.answer, case.format)


def draw_problems(info: RunInfo, records: list[CaseRecord], draws: list[CaseRecord]) -> list[str]:
    """What makes the run's draws other than planned: a run missing some is incomplete (INCONCLUSIVE)."""
    problem = case_draws(info, records, draws).problem()
    return [f"repeated draws: {problem}"] if problem else []


_NORMALISING = ("normalized", "label")
"""Answer checks that compare normalised text (lower case, no punctuation or articles): two outputs they cannot
tell apart are one answer. Any other check may tell '1.5' from '15' or '-3' from '3'."""


def answer_key(record: CaseRecord, checked_as: CaseRecord | None = None) -> str | None:
    """What two answers are compared by (None: no answer): the output normalised as the case's answer check
    normalises it (`checked_as`: the case, when `record` is a load request), else the output itself, surrounding
    whitespace aside, so a normalisation never hides a change the check would see."""
    if not answered(record) or record.output is None:
        return None
    kind = answer_type((checked_as or record).answer)
    return normalize(record.output) if kind in _NORMALISING else record.output.strip()


def _passes(draws: list[CaseRecord], scores: dict[str, Any], forbidden: Sequence[ForbiddenRule], key: str = "answer",
            stored: bool = True, verdicts: Verdicts | None = None) -> list[bool | None]:
    """Each draw's outcome on `key`: True, False (a failed request counts as wrong), None (unknown; forbidden: also
    a failed request, no reply to count). `stored`: the first is the case's own record, scored already (`scores`);
    every other is scored here, with the judge's and the guards' `verdicts` (`draw_scores`)."""
    out: list[bool | None] = []
    for rec, s in zip(draws, draw_scores(draws, scores, forbidden, verdicts, stored)):
        if not answered(rec):
            out.append(None if key == "forbidden" else False)
            continue
        scored = case_scores(s)
        if key == "forbidden":  # a guard with no verdict on the draw (and no rule hit): unknown, never clean
            found = scored.forbidden
            out.append(None if found is None or found.unknown else found.hit)
        else:
            part = scored.part(key)
            out.append(None if part is None or part.unknown else bool(part.passed))
    return out


def draw_share(draws: list[CaseRecord], scores: dict[str, Any], forbidden: Sequence[ForbiddenRule], key: str, verdicts: Verdicts | None = None
               ) -> float | None:
    """A case's share of its draws that pass on `key` (answer, format) or hit (forbidden), as the gate's per-draw
    rates count it: a failed draw fails (forbidden: is no reply, left out); None when a draw could not be checked
    or no draw counts."""
    outcomes = _passes(draws, scores, forbidden, key, True, verdicts)
    if any(o is None and (key != "forbidden" or answered(d)) for d, o in zip(draws, outcomes)):
        return None
    known = [o for o in outcomes if o is not None]
    return sum(known) / len(known) if known else None


def draw_metric(name: str, chosen: list[CaseRecord], found: CaseDraws, scores: dict[str, Any], forbidden: Sequence[ForbiddenRule],
                confidence: float = 0.95, strata: Strata | None = None) -> MetricValue:
    """`pass_all_k`, `pass_any_k`, `flip_rate` or `answer_agreement` over the cases of `chosen` that repeat;
    cases of a stratified sample weigh as the source rows they stand for (`strata`: the run's cases per
    stratum), bounded at Kish's effective n."""
    unchecked = 0
    if name != "answer_agreement":  # pass and flip are read off the answer check: a case with none has neither
        unchecked = sum(not _checked(r, "answer") for r in chosen)
        chosen = [r for r in chosen if _checked(r, "answer")]
    repeated = [r for r in chosen if r.case_id in found.by_case]
    cases = [r.case_id for r in repeated]
    if not cases:
        return MetricValue(None, 0, note="no case has repeated draws (set generation.repeats)" + _unchecked(unchecked))
    problem = found.problem()
    if problem:
        return MetricValue(None, len(cases), note=problem)
    # a case asked once can neither disagree nor flip: these two read only the cases that repeat, and say so
    apart = f"{len(chosen) - len(cases)} case(s) asked once left out" if len(chosen) > len(cases) else ""
    if name == "answer_agreement":
        shares = [_agreement(found.by_case[c]) for c in cases]
        return _per_case(shares, repeated, confidence, strata, "; ".join(x for x in ("bounded per case", apart) if x))
    once = []
    if name != "flip_rate":  # a case asked once (its suite's repeats: 1) passes all its draws or none: it counts
        once = [r for r in chosen if r.case_id not in found.by_case]
        repeated, cases = repeated + once, cases + [r.case_id for r in once]
    draws_of = {**{r.case_id: [r] for r in once}, **found.by_case}
    outcomes = {c: _passes(draws_of[c], scores, forbidden, verdicts=found.verdicts) for c in cases}
    unknown = [c for c, o in outcomes.items() if None in o]
    if unknown:
        return MetricValue(None, len(cases), note=f"{len(unknown)} case(s) have a draw that could not be checked "
                                                  f"({_names(unknown)})")
    test: Callable[[list[Any]], bool] = {"pass_all_k": all, "pass_any_k": any, "flip_rate": lambda o: len(set(o)) > 1}[name]
    hits = [c for c, o in outcomes.items() if test(o)]
    note = "; ".join(x for x in (f"flipping: {_names(hits)}" if hits else "", apart) if x) if name == "flip_rate" else ""
    if once:
        note = f"{len(once)} case(s) asked once count their one draw"
    note = "; ".join(x for x in (note, _unchecked(unchecked)[2:]) if x)
    return _per_case([float(c in hits) for c in cases], repeated, confidence, strata, note)


def _unchecked(n: int) -> str:
    """The note on the cases a pass or flip metric leaves out: those with no answer check (a probe case is checked
    by the forbidden rules alone: its forbidden_rate is per draw)."""
    return (f"; {n} case(s) with no answer check left out (probe cases and others checked by the forbidden rules "
            "alone: their forbidden_rate counts every draw)") if n else ""


def _per_case(shares: list[float], cases: list[CaseRecord], confidence: float, strata: Strata | None,
              note: str) -> MetricValue:
    """The mean of per-case shares with one-sided bounds over the cases (`cluster_share_bounds`); for a weighted
    sample the population-weighted mean, Wilson at Kish's effective n (as `record.metrics` weighs rates)."""
    if not any(is_weighted(r) for r in cases):
        return MetricValue(sum(shares) / len(shares), len(shares), cluster_share_bounds(shares, confidence), note,
                           confidence)
    weights = case_weights(cases, strata if strata is not None else stratum_counts(cases))
    value = sum(w * s for w, s in zip(weights, shares)) / sum(weights)
    effective = kish_n(weights)
    note = "; ".join(x for x in (note, f"population-weighted, effective n {effective:.1f}") if x)
    return MetricValue(value, len(shares), wilson_bounds(value * effective, effective, confidence), note, confidence)


def per_draw_rate(name: str, chosen: list[CaseRecord], draws_of: dict[str, list[CaseRecord]], scores: dict[str, Any],
                  forbidden: Sequence[ForbiddenRule], confidence: float = 0.95, problem: str | None = None, stored: bool = True,
                  strata: Strata | None = None, verdicts: Verdicts | None = None) -> MetricValue:
    """accuracy, format_compliance or forbidden_rate over every draw of each case (its repeated draws, or its
    answers under load: `stored` False), bounded per case: a case's share of its draws weighs as one case.
    Forbidden rules of kind guard read the guards' `verdicts` on each draw (the guard stage classifies every
    repeated draw; load answers it never sees), a judge-scored answer the judge's (the judge stage grades every
    repeated draw; load answers it never sees): a draw with no verdict leaves the rate unknown."""
    key = {"accuracy": "answer", "format_compliance": "format", "forbidden_rate": "forbidden"}[name]
    if key == "forbidden" and guard_names(forbidden) and (not stored or guards_only(verdicts) is None):
        what = "load answers" if not stored else "repeated draws"
        return MetricValue(None, len(chosen), note=f"guard rules: no guard verdict on {what}")
    shares, unknown, counted = [], [], []
    for rec in chosen:
        draws = draws_of.get(rec.case_id)
        if not draws or (key != "forbidden" and not _checked(rec, key)):
            continue
        outcomes = _passes(draws, scores, forbidden, key, stored, verdicts)
        if any(o is None and (key != "forbidden" or answered(d)) for d, o in zip(draws, outcomes)):
            unknown.append(rec.case_id)
        known = [o for o in outcomes if o is not None]
        if known:
            shares.append(sum(known) / len(known))
            counted.append(rec)
    if problem:
        return MetricValue(None, len(shares), note=problem)
    if unknown:
        return MetricValue(None, len(shares), note=f"{len(unknown)} case(s) could not be checked ({_names(unknown)})")
    if not shares:
        return MetricValue(None, 0, note="no case with draws to score")
    asked = sum(len(draws_of[r.case_id]) for r in chosen if r.case_id in draws_of)
    return _per_case(shares, counted, confidence, strata, f"{asked} draws of {len(shares)} cases, bounded per case")


def unstable_cases(info: RunInfo, records: list[CaseRecord], draws: list[CaseRecord],
                   load_records: list[CaseRecord]) -> set[str]:
    """Cases whose answer is not stable: draws that disagree (normalised answers), or an answer changed under
    load (a load request that failed changed it: as the flip probe counts it). What a reviewer may want to see
    first."""
    out = {c for c, d in case_draws(info, records, draws).by_case.items() if _agreement(d) < 1}
    cases = {r.case_id: r for r in records}
    for rec in load_records:
        case = cases.get(str(rec.tags.get("prompt_of")))
        if case is not None and case.input == rec.input and answered(case) \
                and (not answered(rec) or answer_key(rec, case) != answer_key(case)):
            out.add(case.case_id)
    return out


def draws_table(found: CaseDraws, scores: dict[str, Any], forbidden: Sequence[ForbiddenRule], limit: int = 1000) -> list[dict[str, Any]]:
    """One row per repeated case for the reports: its modal answer, agreement and which draws failed; cases
    with a failing or disagreeing draw first."""
    rows: list[tuple[tuple[bool, float], dict[str, Any]]] = []
    for case_id, draws in found.by_case.items():
        outcomes = _passes(draws, scores, forbidden, verdicts=found.verdicts)
        modal, _ = _modal(draws)
        agreement = round(_agreement(draws), 6)
        failing = [d.draw for d, o in zip(draws, outcomes) if o is False]
        rows.append(((not failing and agreement == 1, agreement),
                     {"case_id": case_id, "draws": len(draws), "planned": found.planned[case_id],
                      "modal_answer": modal, "agreement": agreement, "failing_draws": failing}))
    rows.sort(key=lambda row: row[0])
    return [row for _, row in rows[:limit]]


def _checked(record: CaseRecord, key: str) -> bool:
    return bool(record.answer) if key == "answer" else bool(record.format)


def _modal(draws: list[CaseRecord]) -> tuple[str | None, int]:
    """The most frequent normalised answer (ties: the earliest draw's) and how many draws gave it."""
    keys = [answer_key(d) for d in draws]
    counts = Counter(k for k in keys if k is not None)
    if not counts:
        return None, 0
    best = max(counts.values())
    modal = next(k for k in keys if k is not None and counts[k] == best)
    return next(d.output for d, k in zip(draws, keys) if k == modal), best


def _agreement(draws: list[CaseRecord]) -> float:
    """The share of a case's draws equal to its modal answer (a failed request agrees with nothing)."""
    return _modal(draws)[1] / len(draws)


def _names(ids: list[str]) -> str:
    more = f" and {len(ids) - _NAMED} more" if len(ids) > _NAMED else ""
    return ", ".join(ids[:_NAMED]) + more


def saved_draws(run: RunDir, records: list[CaseRecord], verdicts: Verdicts | None) -> CaseDraws | None:
    """Another saved run's repeated draws (a baseline's), None when it has none or no readable run.json (its
    standing says so)."""
    draws = run.read_records("draws.jsonl", required=False)
    if not draws:
        return None
    try:
        return case_draws(run.read_info(), records, draws, verdicts)
    except ReleasegateError:
        return None
