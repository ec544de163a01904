"""The response-cache probe's simulation on hand-made vectors: fill order, the threshold edge, TTL expiry,
exact-key normalisation, paraphrase groups, bounds and the recommendation; and the check a served answer
must pass, made by the real scorers."""

from __future__ import annotations

import math

import pytest

from releasegate.gate.cache_probe import (
    ProbeCase,
    ProbeSettings,
    cosine,
    normalised_key,
    recommend,
    simulate,
    simulate_all,
)
from releasegate.gate.cache_probe_records import answer_passes, probe_cases, question_of
from releasegate.record.records import CaseRecord
from releasegate.stats.intervals import wilson_bounds


def case(i: int, question: str = "q", *, output: str | None = "a", group: str | None = None, time: bool = False,
         tokens: tuple[int, int] = (10, 5)) -> ProbeCase:
    return ProbeCase(f"c{i}", question, output, group, time, *tokens)


def unit(deg: float) -> list[float]:
    """A 2-d unit vector at `deg` degrees: cosine with unit(0) is cos(deg)."""
    return [math.cos(math.radians(deg)), math.sin(math.radians(deg))]


def always(a: int, b: int) -> bool:
    return True


def semantic(**kw) -> ProbeSettings:
    return ProbeSettings(mode="semantic", **kw)


def test_cosine_and_exact_key():
    assert cosine([1, 0], [0, 1]) == 0 and cosine([2, 0], [1, 0]) == pytest.approx(1) and cosine([0, 0], [1, 0]) == 0
    assert normalised_key("  Where IS\tmy\n refund? ") == "where is my refund?"


def test_the_cache_fills_in_suite_order_and_a_hit_stores_nothing():
    # c0 at 0 degrees, c1 at 30 (cos .866 to c0), c2 at 60 (cos .5 to c0, .866 to c1)
    cases = [case(0), case(1), case(2)]
    vectors = [unit(0), unit(30), unit(60)]
    row = simulate(cases, always, semantic(), 0.8, vectors)
    # c1 hits c0; c1 is not stored, so c2 (.866 from c1, only .5 from c0) misses
    assert row["hits"] == 1 and row["n"] == 3 and row["hit_rate"] == pytest.approx(1 / 3)
    vectors_reordered = [unit(30), unit(0), unit(60)]  # c0 at 30: c1 hits it (.866), c2 hits it too (.866)
    assert simulate(cases, always, semantic(), 0.8, vectors_reordered)["hits"] == 2


def test_best_match_wins_and_ties_go_to_the_earliest():
    cases = [case(0), case(1), case(2)]
    served = []

    def passes(a, b):
        served.append((a, b))
        return True

    # c1 misses (orthogonal), c2 is at 10 degrees from c1 and 80 from c0: c1 serves it
    simulate(cases, passes, semantic(), 0.1, [unit(0), unit(90), unit(80)])
    assert served == [(1, 2)]
    served.clear()
    simulate(cases, passes, semantic(), 0.5, [unit(0), unit(90), unit(45)])  # equal similarity: the earliest
    assert served == [(0, 2)]


def test_a_similarity_equal_to_the_threshold_is_a_hit():
    cases = [case(0), case(1)]
    vectors = [[1.0, 0.0], [0.6, 0.8]]  # cosine exactly 0.6
    assert simulate(cases, always, semantic(), 0.6, vectors)["hits"] == 1
    assert simulate(cases, always, semantic(), 0.6000001, vectors)["hits"] == 0


def test_an_entry_older_than_the_ttl_has_expired():
    cases = [case(0, "x"), case(1, "x"), case(2, "x")]
    exact = dict(mode="exact", arrival_s=10.0)
    assert simulate(cases, always, ProbeSettings(**exact))["hits"] == 2  # no TTL
    assert simulate(cases, always, ProbeSettings(**exact, ttl_s=20.0))["hits"] == 2  # c0 is 20 s old at c2: live
    # ttl 10: c1 hits c0 (age 10, equal to the TTL: live); c2 arrives at 20, c0 has expired, and c1 (a hit) was
    # never stored: a miss
    assert simulate(cases, always, ProbeSettings(**exact, ttl_s=10.0))["hits"] == 1
    assert simulate(cases, always, ProbeSettings(**exact, ttl_s=9.9))["hits"] == 0


def test_time_sensitive_cases_served_an_old_answer_are_warned():
    cases = [case(0, "price?"), case(1, "price?", time=True), case(2, "price?")]
    row = simulate(cases, always, ProbeSettings(mode="exact", arrival_s=60.0, fresh_s=30.0))
    assert row["stale_time_sensitive"] == 1 and row["stale_cases"] == ["c1"]  # c2 is not time-sensitive
    row = simulate(cases, always, ProbeSettings(mode="exact", arrival_s=60.0, fresh_s=60.0))
    assert row["stale_time_sensitive"] == 0


def test_exact_mode_normalises_whitespace_and_case_only():
    cases = [case(0, "Where is my refund?"), case(1, "  where is MY   refund? "), case(2, "where is my refund")]
    row = simulate_all(cases, always, ProbeSettings(mode="exact"), [0.5, 0.9])
    assert len(row) == 1 and row[0]["threshold"] is None and row[0]["hits"] == 1  # punctuation still differs


def test_a_failed_request_stores_nothing():
    cases = [case(0, "x", output=None), case(1, "x"), case(2, "x")]
    row = simulate(cases, always, ProbeSettings(mode="exact"))
    assert row["hits"] == 1  # c1 missed (nothing stored) and was stored; c2 hit it


def test_wrong_hits_groups_bounds_savings_and_danger_order():
    # two groups: refund (c0, c1) and billing (c2, c3), all four near-identical vectors
    cases = [case(0, group="refund"), case(1, group="refund"), case(2, group="billing"), case(3, group="billing")]
    vectors = [unit(0), unit(1), unit(2), unit(3)]

    def passes(a, b):  # an answer passes only its own group's cases
        return cases[a].group == cases[b].group

    settings = semantic(input_usd_per_1m=1.0, output_usd_per_1m=2.0)
    row = simulate(cases, passes, settings, 0.9, vectors)
    assert row["hits"] == 3 and row["within_group"] == 1 and row["across_group"] == 2  # all served by c0
    assert row["wrong_hits"] == 2 and row["wrong_across_group"] == 2 and row["wrong_hit_rate"] == 0.5
    assert row["wrong_hit_upper"] == pytest.approx(wilson_bounds(2, 4, 0.95)[1])
    assert row["tokens_saved"] == {"input": 30, "output": 15}
    assert row["cost_saved_usd"] == pytest.approx((30 * 1 + 15 * 2) / 1e6)
    assert [w["case_id"] for w in row["wrong"]] == ["c2", "c3"]  # the most similar first
    assert row["wrong"][0]["cached_case_id"] == "c0" and row["wrong"][0]["similarity"] > row["wrong"][1]["similarity"]
    assert simulate(cases, passes, semantic(), 0.9, vectors)["cost_saved_usd"] is None  # not priced


def test_rows_come_highest_threshold_first_and_the_recommendation_is_the_highest_safe_hit_rate():
    cases = [case(i, group=str(i // 2)) for i in range(40)]
    vectors = [unit(i * 3.0) for i in range(40)]  # neighbours 3 degrees apart (cos .9986), pairs share a group

    def passes(a, b):
        return cases[a].group == cases[b].group

    rows = simulate_all(cases, passes, semantic(), [0.5, 0.9999, 0.998], vectors)
    assert [r["threshold"] for r in rows] == [0.9999, 0.998, 0.5]
    tight, middle, loose = rows
    assert tight["hits"] == 0 and middle["hits"] == 20 and middle["wrong_hits"] == 0
    assert loose["wrong_hits"] > 0
    assert recommend(rows, 0.1) is middle  # its upper bound at 0/40 is about 0.063
    assert recommend(rows, 0.05) is None  # even 0 wrong of 40 does not bound the rate under 0.05


def test_semantic_mode_needs_embeddings():
    with pytest.raises(ValueError):
        simulate([case(0)], always, semantic(), 0.9, None)


def record(case_id: str, question: str, output: str, expected: dict, tags: dict | None = None) -> CaseRecord:
    return CaseRecord(case_id=case_id, suite="s", tags=tags or {}, expected=expected,
                      input={"messages": [{"role": "system", "content": "Classify."}, {"role": "user", "content": question}]},
                      answer={"type": "json_fields", "fields": ["intent"]}, output=output,
                      format=[{"type": "max_length", "max_chars": 40}])


def test_the_served_answer_is_checked_by_the_new_cases_own_scorers():
    records = [record("a", "refund please", '{"intent": "refund"}', {"intent": "refund"}, {"g": "r", "ts": "yes"}),
               record("b", "refund now", '{"intent": "refund"}', {"intent": "refund"}),
               record("c", "wrong bill", '{"intent": "billing"}', {"intent": "billing"}),
               record("d", "long", '{"intent": "refund", "padding": "xxxxxxxxxxxxxxxxxxxxxxxx"}', {"intent": "refund"})]
    passes = answer_passes(records, [])
    assert passes(0, 1) and not passes(0, 2) and not passes(2, 0)
    assert not passes(3, 0)  # the right intent, but longer than a's max_length: fails a's format check
    assert question_of(records[0]) == "refund please"
    cases = probe_cases(records, group_tag="g", time_sensitive_tag="ts")
    assert cases[0].group == "r" and cases[0].time_sensitive and cases[1].group is None and not cases[1].time_sensitive
