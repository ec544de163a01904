"""Which cases the flip probe may speak on: a case's answer asked alone paired with its answers asked beside
others, as each request observed it (`Timing.in_flight_most`: the most requests in flight on the client while it
was), never as the config declared it. A closed loop of 4 whose server answers before the next request is sent,
or an open loop whose arrivals never overlap, asked nothing beside another, however large its declared cap.

A pair is a case answered in the quality phase with 1 in flight (observed) that has at least one load answer
asked with 2 or more in flight (observed); a case whose load answers were all asked alone is no pair. The pairs
must cover `min_share` of the criterion's cases (the rubric's `min_load_pair_share`, default 0.9, as quality
parity must cover 0.9 of a comparison's reference): short of it the probe is undecided, naming how many of how
many cases it covered, since a flip rate from the half of the suite a load phase happened to ask says nothing of
the other half. A run whose requests did not record what they observed (made before they were recorded, a
replay) shows no pair: the probe is undecided and says why."""

from __future__ import annotations

from dataclasses import field

from ..data_classes import dataclass
from ..record.record_parts import DEFAULT_MIN_PAIR_SHARE
from ..record.records import CaseRecord
from ..stats.sample_weights import case_weights, is_weighted, stratum_counts
from .stability import answer_key

__all__ = ["LoadPairs", "load_pairs", "DEFAULT_MIN_PAIR_SHARE"]

_UNRECORDED = ("its requests did not record how many were in flight (a run made before they were recorded, or "
               "a replay): nothing shows which answers were asked alone and which beside others; run `check` again")


@dataclass(frozen=True)
class LoadPairs:
    """The quality records the probe speaks on (`cases`), or why it cannot (`problem`), with a note saying how
    many cases were paired."""

    cases: list[CaseRecord] = field(default_factory=list)
    problem: str | None = None
    note: str = ""


def load_pairs(chosen: list[CaseRecord], by_case: dict[str, list[CaseRecord]],
               min_share: float = DEFAULT_MIN_PAIR_SHARE) -> LoadPairs:
    """The pairs among `chosen` (their load answers: `by_case`), and whether they cover `min_share` of them."""
    asked = [a for r in chosen for a in by_case.get(r.case_id, ())]
    if not chosen:
        return LoadPairs(problem="no case to pair")
    if all(r.timing.in_flight_most is None for r in chosen):
        return LoadPairs(problem=f"the quality phase: {_UNRECORDED}")
    if asked and all(a.timing.in_flight_most is None for a in asked):
        return LoadPairs(problem=f"the load phase: {_UNRECORDED}")
    pairs, crowded, unanswered, lonely, unasked = [], 0, 0, 0, 0
    for rec in chosen:
        answers = by_case.get(rec.case_id, [])
        if rec.timing.in_flight_most != 1:
            crowded += 1  # not observed alone: more in flight, or not recorded
        elif answer_key(rec) is None:
            unanswered += 1  # no answer alone to compare (it counts in error_rate)
        elif not answers:
            unasked += 1
        elif not any((a.timing.in_flight_most or 0) >= 2 for a in answers):
            lonely += 1  # every load answer of the case was asked alone: nothing beside another
        else:
            pairs.append(rec)
    share = _covered(pairs, chosen)
    why = ", ".join(f"{n} {what}" for n, what in (
        (crowded, "not asked alone in the quality phase"), (unanswered, "not answered alone"),
        (unasked, "not asked under load"), (lonely, "asked under load only with 1 in flight")) if n)
    note = f"{len(pairs)} of {len(chosen)} cases paired" + (f" ({why})" if why else "")
    if not pairs or share < min_share:
        of = " of the population they stand for" if _weighted(chosen) else ""
        return LoadPairs(problem=f"the flip probe covers {len(pairs)} of {len(chosen)} cases ({share:.0%}{of}; at "
                                 f"least {min_share:.0%} needed): {why or 'none asked'}")
    return LoadPairs(pairs, None, note)


def _weighted(chosen: list[CaseRecord]) -> bool:
    return any(is_weighted(r) for r in chosen)


def _covered(pairs: list[CaseRecord], chosen: list[CaseRecord]) -> float:
    """The share of `chosen` the pairs cover: of the cases, or under a weighted `sample:` of the population the
    cases stand for (ten cases standing for 10,000 rows weigh as those rows do, so leaving them out is seen)."""
    if not chosen:
        return 0.0
    if not _weighted(chosen):
        return len(pairs) / len(chosen)
    weights = dict(zip((id(r) for r in chosen), case_weights(chosen, stratum_counts(chosen)), strict=True))
    return sum(weights[id(r)] for r in pairs) / sum(weights.values())
