"""The response-cache probe's simulation: would a cache in front of the model, exact or semantic, answer the
suite's questions with earlier answers, and how often would such an answer be wrong for the new question?

A pure function of the cases, their embeddings and one check (`passes(a, b)`: does case a's answer pass case
b's own checks). The cache fills in suite order, one case every `arrival_s` seconds: a miss stores the case's
own answer (a failed request stores nothing), a hit serves the stored answer and stores nothing. Exact mode
matches a normalised question (whitespace collapsed, case folded); semantic mode matches the live stored entry
with the highest cosine similarity, a hit when it is >= the threshold (ties: the earliest entry). An entry older
than `ttl_s` has expired and serves nothing. A wrong hit is a hit whose served answer fails the new case's own
checks; its rate is over every case the cache saw (what a user of the cache is exposed to), with the one-sided
Wilson upper bound. Paraphrase groups (a case tag) say which hits are expected (same group) and which are the
dangerous ones (across groups). A time-sensitive case (a tag) served an answer older than `fresh_s` is warned.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..stats.intervals import wilson_bounds

__all__ = ["ProbeCase", "ProbeSettings", "simulate", "simulate_all", "normalised_key", "cosine", "recommend",
           "WRONG_HITS_KEPT"]

WRONG_HITS_KEPT = 20
"""Each threshold keeps this many wrong hits, the most dangerous first."""


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


@dataclass
class _Entry:
    index: int
    stored_at: float


def simulate(cases: Sequence[ProbeCase], passes: Callable[[int, int], bool], settings: ProbeSettings,
             threshold: float | None = None, embeddings: Sequence[Sequence[float]] | None = None) -> dict:
    """The cache's figures at one threshold (exact mode: `threshold` is ignored and reported as None)."""
    exact = settings.mode == "exact"
    if not exact and (embeddings is None or threshold is None):
        raise ValueError("semantic mode needs embeddings and a threshold")
    entries: list[_Entry] = []
    hits: list[dict] = []
    for i, case in enumerate(cases):
        now = i * settings.arrival_s
        if settings.ttl_s is not None:
            entries = [e for e in entries if now - e.stored_at <= settings.ttl_s]
        found = _lookup(cases, entries, i, None if exact else embeddings, threshold)
        if found is None:
            if case.output is not None:
                entries.append(_Entry(i, now))
            continue
        entry, similarity = found
        hits.append(_hit(cases, passes, settings, entry, i, now, similarity))
    return _figures(cases, hits, settings, None if exact else threshold)


def simulate_all(cases: Sequence[ProbeCase], passes: Callable[[int, int], bool], settings: ProbeSettings,
                 thresholds: Sequence[float], embeddings: Sequence[Sequence[float]] | None = None) -> list[dict]:
    """`simulate` at every threshold, highest first (exact mode: one row)."""
    if settings.mode == "exact":
        return [simulate(cases, passes, settings)]
    return [simulate(cases, passes, settings, t, embeddings) for t in sorted(set(thresholds), reverse=True)]


def recommend(rows: Sequence[dict], limit: float) -> dict | None:
    """The row with the highest hit rate whose wrong-hit upper bound is under `limit` (ties: the highest
    threshold, the safer one); None when no row qualifies."""
    ok = [r for r in rows if r["wrong_hit_upper"] is not None and r["wrong_hit_upper"] < limit]
    if not ok:
        return None
    return max(ok, key=lambda r: (r["hit_rate"], r["threshold"] if r["threshold"] is not None else math.inf))


def _lookup(cases, entries: list[_Entry], i: int, embeddings, threshold) -> tuple[_Entry, float] | None:
    if embeddings is None:
        key = normalised_key(cases[i].question)
        return next(((e, 1.0) for e in entries if normalised_key(cases[e.index].question) == key), None)
    best: tuple[_Entry, float] | None = None
    for e in entries:  # earliest first: a later entry wins only when strictly more similar
        similarity = cosine(embeddings[i], embeddings[e.index])
        if similarity >= threshold and (best is None or similarity > best[1]):
            best = (e, similarity)
    return best


def _hit(cases, passes, settings: ProbeSettings, entry: _Entry, i: int, now: float, similarity: float) -> dict:
    new, cached = cases[i], cases[entry.index]
    same_group = new.group is not None and new.group == cached.group
    age = now - entry.stored_at
    return {
        "case_id": new.case_id, "cached_case_id": cached.case_id, "similarity": round(similarity, 6),
        "age_s": age, "within_group": same_group, "wrong": not passes(entry.index, i),
        "stale": new.time_sensitive and age > settings.fresh_s,
        "question": new.question, "cached_question": cached.question,
        "answer": new.output, "cached_answer": cached.output,
        "input_tokens": new.input_tokens, "output_tokens": new.output_tokens,
    }


def _figures(cases: Sequence[ProbeCase], hits: list[dict], settings: ProbeSettings, threshold) -> dict:
    n, wrong = len(cases), [h for h in hits if h["wrong"]]
    bounds = wilson_bounds(len(wrong), n, settings.confidence)
    saved_in, saved_out = sum(h["input_tokens"] for h in hits), sum(h["output_tokens"] for h in hits)
    cost = None
    if settings.input_usd_per_1m is not None and settings.output_usd_per_1m is not None:
        cost = (saved_in * settings.input_usd_per_1m + saved_out * settings.output_usd_per_1m) / 1e6
    return {
        "threshold": threshold, "n": n, "hits": len(hits), "hit_rate": len(hits) / n if n else None,
        "wrong_hits": len(wrong), "wrong_hit_rate": len(wrong) / n if n else None,
        "wrong_hit_upper": bounds[1] if bounds else None, "confidence": settings.confidence,
        "within_group": sum(h["within_group"] for h in hits),
        "across_group": sum(not h["within_group"] for h in hits),
        "wrong_across_group": sum(not h["within_group"] for h in wrong),
        "tokens_saved": {"input": saved_in, "output": saved_out},
        "cost_saved_usd": cost,
        "stale_time_sensitive": sum(h["stale"] for h in hits),
        "stale_cases": [h["case_id"] for h in hits if h["stale"]][:WRONG_HITS_KEPT],
        "wrong": [_shown(h) for h in sorted(wrong, key=_danger)[:WRONG_HITS_KEPT]],
    }


def _danger(hit: dict) -> tuple:
    """Most dangerous first: across paraphrase groups, then the most similar (a tighter threshold keeps it)."""
    return (hit["within_group"], -hit["similarity"], hit["case_id"])


def _shown(hit: dict) -> dict:
    keep = ("case_id", "cached_case_id", "similarity", "within_group", "question", "cached_question", "answer",
            "cached_answer")
    return {k: hit[k] for k in keep}
