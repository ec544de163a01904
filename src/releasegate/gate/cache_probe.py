"""The response-cache probe's simulation: would a cache in front of the model, exact or semantic, answer the
suite's questions with earlier answers, and how often would such an answer harm the user who gets it?

A pure function of the cases, their embeddings and one check (`check(a, b)`: does case a's answer pass case b's
own checks; None when the check cannot be made). The arrival process is stated, not assumed: one case every
`arrival_s` seconds in suite order. A miss stores the case's own answer (a failed request stores nothing); a hit
serves a stored answer and stores nothing; an entry older than `ttl_s` has expired. Exact mode matches a normalised
question (whitespace collapsed, case folded); semantic mode matches a live entry whose cosine similarity is >= the
threshold.

Which case fills the cache first is chance, not suite order: every other answered case whose similarity is at or
above the threshold could have been cached before a case (any arrival order), so each such neighbour's answer is
one it could be served, not only the nearest's. A case with at least one neighbour (`hittable`) is judged against
every one of them and takes the worst. Hit rate and savings come from the stated arrival process; judgement does
not.
- wrong: at least one answer it could be served fails its checks, or it is stale;
- stale: it is time-sensitive and the TTL exceeds `fresh_s` (no TTL: entries never expire). Some arrival order
  serves it an answer as old as the TTL, whatever the arrival interval or the suite's time span;
- harmful: stale, or an answer it could be served fails its checks while the model's own fresh answer passes
  them (a wrong hit where the model was wrong too did no harm);
- right: every answer it could be served passes its checks, and it is not stale;
- unknown: a check could not be made (no judge verdict, no token count): undecided, never right or wrong.
Across paraphrase groups, an answer is wrong for the other case unless both expected answers are known and equal
or that case's answer check is exact (a lenient check, a regex or a label, cannot tell it served another
question's answer).
Rates are weighted to the source under a stratified sample (each case weighs what it stands for).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..data_classes import dataclass
from ..stats.intervals import wilson_bounds
from ..stats.sample_weights import kish_n

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["ProbeCase", "ProbeSettings", "simulate", "simulate_all", "normalised_key", "cosine", "degenerate", "Check",
           "WRONG_HITS_KEPT", "WRONG_CASES_KEPT", "may_be_stale"]

WRONG_HITS_KEPT = 20
"""Each threshold keeps this many wrong hits with their texts, the most dangerous first."""
WRONG_CASES_KEPT = 1000
"""Each threshold names this many cases with a wrong possible answer (ids and figures only), the most dangerous
first; `wrong_hits` counts them all."""


@dataclass(frozen=True)
class ProbeCase:
    """One case as the cache sees it."""

    case_id: str
    question: str
    """The text a cache keys on: the case's last user message (or its prompt)."""
    output: str | None
    """The model's own answer; None: the request failed, so there is nothing to store."""
    group: str | None = None
    """Its paraphrase group (the group tag's value); None: in no group."""
    time_sensitive: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    expected: str | None = None
    """Its expected answer, canonical (None: none)."""
    exact_check: bool = False
    """Whether its answer check is exact: only then can it tell another question's answer from its own."""
    weight: float = 1.0
    """What the case stands for: its stratum's rows over the run's cases of it under a weighted sample, else 1."""


@dataclass(frozen=True)
class ProbeSettings:
    """How the simulated cache behaves."""

    mode: str = "semantic"
    """`exact` (normalised question text) or `semantic` (cosine similarity of embeddings)."""
    ttl_s: float | None = None
    """An entry older than this has expired; None: entries never expire."""
    arrival_s: float = 1.0
    """Seconds between two cases arriving, in suite order."""
    fresh_s: float = 0.0
    """A time-sensitive case served an answer older than this is warned (0: any cached answer)."""
    confidence: float = 0.95
    input_usd_per_1m: float | None = None
    output_usd_per_1m: float | None = None


def normalised_key(text: str) -> str:
    """The exact-mode key: whitespace runs collapsed to one space, ends stripped, case folded."""
    return " ".join(text.split()).casefold()


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0.0 when either vector is all zeros."""
    dot = sum(x * y for x, y in zip(a, b))
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


Check = Callable[[int, int], "bool | None"]


def simulate(cases: Sequence[ProbeCase], check: Check, settings: ProbeSettings,
             threshold: float | None = None, embeddings: Sequence[Sequence[float]] | None = None) -> dict[str, Any]:
    """The cache's figures at one threshold (exact mode: `threshold` is ignored and reported as None)."""
    if settings.mode == "exact":
        return simulate_all(cases, check, settings, [])[0]
    if threshold is None:
        raise ValueError("semantic mode needs embeddings and a threshold")
    return simulate_all(cases, check, settings, [threshold], embeddings)[0]


def simulate_all(cases: Sequence[ProbeCase], check: Check, settings: ProbeSettings,
                 thresholds: Sequence[float], embeddings: Sequence[Sequence[float]] | None = None) -> list[dict[str, Any]]:
    """`simulate` at every threshold, highest first (exact mode: one row); the similarities computed once."""
    if settings.mode == "exact":
        return _simulate(cases, check, settings, [None], _SameQuestion(cases))
    if embeddings is None:
        raise ValueError("semantic mode needs embeddings")
    return _simulate(cases, check, settings, sorted(set(thresholds), reverse=True), _Similarity(embeddings))


class _Similarity:
    """The cases' cosine similarities, a row at a time: unit vectors made once (a zero vector is similar to
    nothing), each row one matrix product, so a probe of thousands of cases at several thresholds stays seconds
    in memory linear in the cases."""

    def __init__(self, embeddings: Sequence[Sequence[float]]) -> None:
        import numpy as np  # only for a semantic probe

        matrix = np.asarray(embeddings, dtype=np.float64)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        self.unit = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)

    def row(self, i: int) -> NDArray[Any]:
        row: NDArray[Any] = self.unit @ self.unit[i]
        return row


class _SameQuestion:
    """Exact mode's similarities: 1.0 between cases with one normalised question, else 0.0 (matched at 1.0)."""

    def __init__(self, cases: Sequence[ProbeCase]) -> None:
        import numpy as np

        ids: dict[str, int] = {}
        self.keys = np.array([ids.setdefault(normalised_key(c.question), len(ids)) for c in cases])

    def row(self, i: int) -> NDArray[Any]:
        row: NDArray[Any] = (self.keys == self.keys[i]).astype(float)
        return row


class _Cache:
    """The stated arrival process's cache: which cases' answers are live entries, as a mask, so a lookup is one
    vectorised pass over the cases rather than a loop over the entries. Entries are stored in arrival order, so
    they expire in that order too."""

    def __init__(self, n: int, ttl_s: float | None) -> None:
        import numpy as np

        self.np, self.ttl_s = np, ttl_s
        self.live, self.stored_at = np.zeros(n, dtype=bool), np.zeros(n)
        self.stored: deque[int] = deque()  # the live entries' cases, oldest first

    def serve(self, row: NDArray[Any], threshold: float, now: float) -> float | None:
        """The age of the entry that serves this row's case (None: a miss): the most similar live entry at or
        above the threshold, the earliest stored among equals (exact mode: the earliest with its key)."""
        while self.ttl_s is not None and self.stored and now - self.stored_at[self.stored[0]] > self.ttl_s:
            self.live[self.stored.popleft()] = False
        match = self.live & (row >= threshold)
        if not match.any():
            return None
        best = int(self.np.argmax(self.np.where(match, row, -self.np.inf)))  # the first of equals: stored earliest
        return float(now - self.stored_at[best])

    def store(self, i: int, now: float) -> None:
        self.live[i], self.stored_at[i] = True, now
        self.stored.append(i)


def _simulate(cases: Sequence[ProbeCase], check: Check, settings: ProbeSettings, thresholds: Sequence[float | None],
              sims: _Similarity | _SameQuestion) -> list[dict[str, Any]]:
    """One pass in arrival order, every threshold side by side (each case's similarities computed once): the
    stated arrival process decides the hits (a miss stores its answer, a hit stores nothing, an entry older than
    the TTL expires), and every case another answered case matches is judged against each answer it could be
    served, whatever the fill order. A threshold None: exact mode."""
    if not thresholds:
        return []
    cuts = [1.0 if t is None else t for t in thresholds]
    caches = [_Cache(len(cases), settings.ttl_s) for _ in thresholds]
    answered = caches[0].np.array([c.output is not None for c in cases], dtype=bool)
    answers = _answer_ids(cases)
    judged: list[list[_Hit]] = [[] for _ in thresholds]
    for i, case in enumerate(cases):
        now = i * settings.arrival_s
        row = sims.row(i)
        for cache, cut, found in zip(caches, cuts, judged):
            age = cache.serve(row, cut, now)
            if age is None and case.output is not None:
                cache.store(i, now)
            donors = _neighbours(row, cut, answered, i, answers)
            if donors.total:
                found.append(_hit(cases, check, settings, donors, i, age))
    return [_figures(cases, found, settings, t) for found, t in zip(judged, thresholds)]


ANSWERS_JUDGED = 128
"""A case with more neighbours than this is judged once per distinct answer among them (neighbours giving one
answer text, from one group with one expected answer, give one outcome), the most similar answers first and at
most this many: embeddings that put thousands of questions at one point would otherwise cost a check per pair.
Past that, the case is unknown unless a judged answer already harms it: the probe decides nothing on answers it
did not check."""


@dataclass(frozen=True)
class _Donors:
    """The answers a case could be served: one donor per distinct answer (its case, similarity and how many
    neighbours give that answer), and how many neighbours were left unjudged past ANSWERS_JUDGED."""

    judged: list[tuple[int, float, int]]
    unjudged: int

    @property
    def total(self) -> int:
        return sum(count for _, _, count in self.judged) + self.unjudged


def _answer_ids(cases: Sequence[ProbeCase]) -> NDArray[Any]:
    """Each case's answer as a number: cases whose answers any check tells apart never share one."""
    import numpy as np

    ids: dict[tuple[object, ...], int] = {}
    return np.array([ids.setdefault((c.output, c.output_tokens, c.group, c.expected), len(ids)) for c in cases])


def _neighbours(row: NDArray[Any], threshold: float, answered: NDArray[Any], i: int,
                answers: NDArray[Any]) -> _Donors:
    """Every answered case other than i at or above the threshold: the answers i could be served (past
    ANSWERS_JUDGED, one donor per distinct answer, the most similar giving it)."""
    import numpy as np

    mask = (row >= threshold) & answered
    mask[i] = False
    index = mask.nonzero()[0]
    if len(index) <= ANSWERS_JUDGED:
        return _Donors([(j, sim, 1) for j, sim in zip(index.tolist(), row[index].tolist())], 0)
    index = index[np.argsort(-row[index], kind="stable")]
    _, first, counts = np.unique(answers[index], return_index=True, return_counts=True)
    order = np.argsort(first, kind="stable")[:ANSWERS_JUDGED]
    judged = [(int(index[first[k]]), float(row[index[first[k]]]), int(counts[k])) for k in order.tolist()]
    return _Donors(judged, len(index) - int(counts[order].sum()))


def degenerate(vectors: Sequence[Sequence[float]]) -> str | None:
    """Why embeddings cannot place questions (a zero vector, one dimension for some and another for others, or
    every question at one point); None when they can."""
    if not vectors:
        return None
    if len({len(v) for v in vectors}) > 1:
        return "the embeddings have more than one dimension"
    zero = next((i for i, v in enumerate(vectors) if not any(v)), None)
    if zero is not None:
        return f"embedding {zero} is all zeros: it is similar to nothing"
    first = vectors[0]
    if len(vectors) > 1 and all(cosine(v, first) >= 1 - 1e-9 for v in vectors[1:]):
        return "every question has the same embedding: the model tells none apart"
    return None


def _served(cases: Sequence[ProbeCase], check: Check, donor: int, i: int) -> bool | None:
    """Whether donor's answer passes case i's checks; another question's answer across groups with another expected
    answer is wrong unless i's check is exact."""
    new, old = cases[i], cases[donor]
    across = (new.group or old.group) is not None and new.group != old.group
    same_answer = new.expected is not None and new.expected == old.expected  # unknown answers never match
    if across and not same_answer and not new.exact_check:
        return False
    return check(donor, i)


def may_be_stale(settings: ProbeSettings) -> bool:
    """Whether a time-sensitive case could be served an answer older than it tolerates: an entry lives up to the
    TTL (for ever without one), and some arrival order serves it at that age."""
    return settings.ttl_s is None or settings.ttl_s > settings.fresh_s


@dataclass(frozen=True)
class _Hit:
    """A case judged against every answer the cache could serve it (`_hit`)."""

    case: ProbeCase
    cached: ProbeCase
    """Its worst neighbour."""
    similarity: float
    hit: bool
    """The arrival process made it a hit."""
    wrong: bool
    harmful: bool
    unknown: bool
    right: bool
    stale: bool
    donors: int
    wrong_neighbours: int

    @property
    def within_group(self) -> bool:
        return self.case.group is not None and self.case.group == self.cached.group


def _hit(cases: Sequence[ProbeCase], check: Check, settings: ProbeSettings, donors: _Donors, i: int,
         age: float | None) -> _Hit:
    """Case i judged against every answer the cache could serve it (`donors`: every answered neighbour at or above
    the threshold); `age`: the served entry's age when the arrival process made it a hit (None: a miss there)."""
    new = cases[i]
    fresh = check(i, i) if new.output is not None else False  # a failed request of its own answered nothing
    outcomes = [(_served(cases, check, j, i), j, similarity, count) for j, similarity, count in donors.judged]
    failing = sum(count for o, _, _, count in outcomes if o is False)
    stale = new.time_sensitive and may_be_stale(settings)
    harmful = stale or (failing > 0 and fresh is True)
    unknown = not harmful and (donors.unjudged > 0 or any(o is None or (o is False and fresh is None)
                                                          for o, _, _, _ in outcomes))
    # the worst neighbour: a failing answer, else an unchecked one, the most similar first (a tighter threshold
    # keeps it longest)
    _, donor, similarity, _ = min(outcomes, key=lambda x: (x[0] is not False, x[0] is not None, -x[2]))
    return _Hit(case=new, cached=cases[donor], similarity=round(similarity, 6), hit=age is not None,
                wrong=failing > 0 or stale, harmful=harmful, unknown=unknown,
                right=not harmful and not unknown and all(o is True for o, _, _, _ in outcomes), stale=stale,
                donors=donors.total, wrong_neighbours=donors.total if stale else failing)


def _figures(cases: Sequence[ProbeCase], judged: list[_Hit], settings: ProbeSettings, threshold: float | None) -> dict[str, Any]:
    """`hits`, `hit_rate` and savings from the arrival process; `right_hits`, `harmful_hits`, staleness and the
    harmful share (with its bound) over every case the cache could serve (`hittable`), whatever the fill order;
    `wrong_hits` and `wrong_hit_rate`: the cases with at least one wrong possible answer, over every case seen."""
    n, total = len(cases), sum(c.weight for c in cases)
    hits = [h for h in judged if h.hit]
    wrong = [h for h in judged if h.wrong]
    ranked = sorted(wrong, key=_danger)
    hit_weight = sum(h.case.weight for h in hits)
    judged_weight = sum(h.case.weight for h in judged)
    harmful = sum(h.case.weight for h in judged if h.harmful)
    unknown = sum(h.unknown for h in judged)
    share = harmful / judged_weight if judged_weight else None
    n_eff = kish_n([h.case.weight for h in judged])
    bounds = wilson_bounds(share * n_eff, n_eff, settings.confidence) if share is not None and not unknown else None
    saved_in, saved_out = sum(h.case.input_tokens for h in hits), sum(h.case.output_tokens for h in hits)
    cost = None
    if settings.input_usd_per_1m is not None and settings.output_usd_per_1m is not None:
        cost = (saved_in * settings.input_usd_per_1m + saved_out * settings.output_usd_per_1m) / 1e6
    return {
        "threshold": threshold, "n": n, "hits": len(hits), "hit_rate": hit_weight / total if total else None,
        "hittable": len(judged), "right_hits": sum(h.right for h in judged),
        "harmful_hits": sum(h.harmful for h in judged),
        "unknown_hits": unknown, "harmful_share": share,
        "harmful_upper": bounds[1] if bounds else None, "effective_hits": n_eff,
        "wrong_hits": len(wrong), "wrong_hit_rate": sum(h.case.weight for h in wrong) / total if total else None,
        "wrong_hit_upper": bounds[1] if bounds else None, "confidence": settings.confidence,
        "within_group": sum(h.within_group for h in judged),
        "across_group": sum(not h.within_group for h in judged),
        "wrong_across_group": sum(not h.within_group for h in wrong),
        "tokens_saved": {"input": saved_in, "output": saved_out},
        "cost_saved_usd": cost,
        "stale_time_sensitive": sum(h.stale for h in judged),
        "stale_cases": [h.case.case_id for h in judged if h.stale][:WRONG_HITS_KEPT],
        "wrong": [_shown(h) for h in ranked[:WRONG_HITS_KEPT]],
        "wrong_cases": [_named(h) for h in ranked[:WRONG_CASES_KEPT]],
    }


def _danger(hit: _Hit) -> tuple[Any, ...]:
    """Most dangerous first: harmful, across paraphrase groups, then the most similar (a tighter threshold keeps
    it)."""
    return (not hit.harmful, hit.within_group, -hit.similarity, hit.case.case_id)


def _shown(hit: _Hit) -> dict[str, Any]:
    return {**_named(hit), "question": hit.case.question, "cached_question": hit.cached.question,
            "answer": hit.case.output, "cached_answer": hit.cached.output}


def _named(hit: _Hit) -> dict[str, Any]:
    """A case with a wrong possible answer, without its texts: its worst neighbour and how many are wrong."""
    return {"case_id": hit.case.case_id, "cached_case_id": hit.cached.case_id, "similarity": hit.similarity,
            "within_group": hit.within_group, "harmful": hit.harmful, "stale": hit.stale,
            "wrong_neighbours": hit.wrong_neighbours, "donors": hit.donors}
