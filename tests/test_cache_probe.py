"""The response-cache probe's simulation on hand-made vectors: the arrival process, the threshold edge, TTL expiry,
exact-key normalisation, harm judged against every answer a case could be served, paraphrase groups, bounds and
the recommendation; and the check a served answer must pass, made by the real scorers."""

from __future__ import annotations

import math

import pytest

from releasegate.decision.cache import recommend_threshold
from releasegate.gate.cache_probe import (
    ProbeCase,
    ProbeSettings,
    cosine,
    degenerate,
    normalised_key,
    simulate,
    simulate_all,
)
from releasegate.gate.cache_probe_gate import _harm, cache_metric
from releasegate.gate.cache_probe_records import answer_passes, probe_cases, question_of
from releasegate.record.decision_evidence import CacheEvidence
from releasegate.record.records import CaseRecord


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


def test_every_answer_a_case_could_be_served_is_checked_whatever_the_fill_order():
    cases = [case(0), case(1), case(2)]
    asked = set()

    def check(a, b):
        asked.add((a, b))
        return True

    # c1 is orthogonal to c0; c2 is within the threshold of both: either could fill the cache before it
    row = simulate(cases, check, semantic(), 0.1, [unit(0), unit(90), unit(80)])
    assert {(0, 2), (1, 2), (2, 0), (2, 1)} <= asked and row["hittable"] == 3


def test_a_harmful_hit_is_one_the_models_own_answer_gets_right():
    cases = [case(0, group="g"), case(1, group="g")]

    def one_way(a, b):  # c0's answer fails c1; c1's answer passes c0; each passes its own checks
        return not (a, b) == (0, 1)

    for order in ([unit(0), unit(1)], [unit(1), unit(0)]):  # the fill order does not change the verdict
        row = simulate(cases, one_way, semantic(), 0.9, order)
        assert (row["hits"], row["hittable"], row["harmful_hits"], row["right_hits"]) == (1, 2, 1, 1)

    def model_wrong_too(a, b):  # c0's answer fails c1, and so does c1's own: the cache did no harm
        return b == 0

    row = simulate(cases, model_wrong_too, semantic(), 0.9, [unit(0), unit(1)])
    assert row["harmful_hits"] == 0 and row["wrong_hits"] == 1 and row["right_hits"] == 1


def test_an_unknown_check_is_undecided_not_wrong():
    cases = [case(0, group="g"), case(1, group="g")]
    row = simulate(cases, lambda a, b: None if a != b else True, semantic(), 0.9, [unit(0), unit(1)])
    assert row["unknown_hits"] == 2 and row["harmful_hits"] == 0 and row["harmful_upper"] is None
    assert cache_metric("cache_wrong_hit_rate", {"mode": "semantic", "threshold": 0.9, "rows": [row]}).value is None


def test_across_groups_a_lenient_check_cannot_pass_another_questions_answer():
    lenient = [ProbeCase("a", "q", "x", "g1", expected="refund"), ProbeCase("b", "q", "x", "g2", expected="billing")]
    exact = [ProbeCase("a", "q", "x", "g1", expected="refund", exact_check=True),
             ProbeCase("b", "q", "x", "g2", expected="billing", exact_check=True)]
    vectors = [unit(0), unit(1)]
    assert simulate(lenient, always, semantic(), 0.9, vectors)["harmful_hits"] == 2  # a regex would pass it
    assert simulate(exact, always, semantic(), 0.9, vectors)["harmful_hits"] == 0  # an exact check decides


def test_degenerate_embeddings_are_named():
    assert "all zeros" in degenerate([[1.0, 0.0], [0.0, 0.0]])
    assert "same embedding" in degenerate([[1.0, 2.0], [2.0, 4.0], [0.5, 1.0]])
    assert "dimension" in degenerate([[1.0, 0.0], [1.0, 0.0, 0.0]])
    assert degenerate([[1.0, 0.0], [0.0, 1.0]]) is None


def test_rates_are_weighted_to_the_source_under_a_sample():
    heavy = [ProbeCase("a", "q", "x", "g", weight=9.0), ProbeCase("b", "q", "x", "g", weight=1.0),
             ProbeCase("c", "z", "x", "h", weight=1.0)]
    row = simulate(heavy, lambda a, b: not (a == 1 and b == 0), ProbeSettings(mode="exact"))
    assert row["harmful_share"] == pytest.approx(9 / 10)  # the harmed case stands for nine rows
    assert row["hit_rate"] == pytest.approx(1 / 11) and row["effective_hits"] == pytest.approx(100 / 82)


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


def test_a_stale_time_sensitive_hit_counts_against_the_cache():
    cases = [case(0, "price?"), case(1, "price?", time=True), case(2, "price?")]
    row = simulate(cases, always, ProbeSettings(mode="exact", arrival_s=60.0, ttl_s=3600.0, fresh_s=30.0))
    assert row["stale_time_sensitive"] == 1 and row["stale_cases"] == ["c1"]  # c2 is not time-sensitive
    assert row["harmful_hits"] == 1 and row["wrong"][0]["stale"] and row["wrong"][0]["wrong_neighbours"] == 2
    # a TTL within the tolerance never serves an answer older than it, whatever the arrival order
    row = simulate(cases, always, ProbeSettings(mode="exact", arrival_s=60.0, ttl_s=60.0, fresh_s=60.0))
    assert row["stale_time_sensitive"] == 0 and row["harmful_hits"] == 0


def test_exact_mode_normalises_whitespace_and_case_only():
    cases = [case(0, "Where is my refund?"), case(1, "  where is MY   refund? "), case(2, "where is my refund")]
    row = simulate_all(cases, always, ProbeSettings(mode="exact"), [0.5, 0.9])
    assert len(row) == 1 and row[0]["threshold"] is None and row[0]["hits"] == 1  # punctuation still differs


def test_a_failed_request_stores_nothing():
    cases = [case(0, "x", output=None), case(1, "x"), case(2, "x")]
    row = simulate(cases, always, ProbeSettings(mode="exact"))
    assert row["hits"] == 1  # c1 missed (nothing stored) and was stored; c2 hit it


def test_harmful_hits_groups_bounds_savings_and_danger_order():
    # two groups: refund (c0, c1) and billing (c2, c3), all four near-identical vectors
    cases = [case(0, group="refund"), case(1, group="refund"), case(2, group="billing"), case(3, group="billing")]
    vectors = [unit(0), unit(1), unit(2), unit(3)]

    def passes(a, b):  # an answer passes only its own group's cases
        return cases[a].group == cases[b].group

    settings = semantic(input_usd_per_1m=1.0, output_usd_per_1m=2.0)
    row = simulate(cases, passes, settings, 0.9, vectors)
    assert row["hits"] == 3 and row["hittable"] == 4  # each could be served the other group's answer
    assert row["harmful_hits"] == 4 and row["right_hits"] == 0 and row["harmful_share"] == 1.0
    assert row["harmful_upper"] == pytest.approx(1.0)
    assert row["tokens_saved"] == {"input": 30, "output": 15}
    assert row["cost_saved_usd"] == pytest.approx((30 * 1 + 15 * 2) / 1e6)
    assert all(not w["within_group"] and w["harmful"] for w in row["wrong"])
    assert simulate(cases, passes, semantic(), 0.9, vectors)["cost_saved_usd"] is None  # not priced


def _recommend(rows, limit, min_hits=10):
    evidence = CacheEvidence(tuple(_harm(r) for r in rows), limit, min_hits, None)
    return recommend_threshold(evidence, exact=False)


def test_the_recommendation_maximises_right_hits_on_enough_hits_under_the_harm_bound():
    cases = [case(i, group=str(i // 2)) for i in range(40)]
    # a pair 1 degree apart (cos .99985) shares a group; pairs 9 degrees apart (cos .988)
    vectors = [unit((i // 2) * 10.0 + i % 2) for i in range(40)]

    def passes(a, b):
        return cases[a].group == cases[b].group

    rows = simulate_all(cases, passes, semantic(), [0.5, 0.99999, 0.999], vectors)
    assert [r["threshold"] for r in rows] == [0.99999, 0.999, 0.5]
    tight, middle, loose = rows
    assert tight["hittable"] == 0 and middle["hittable"] == 40 and middle["harmful_hits"] == 0
    assert middle["right_hits"] == 40 and loose["harmful_hits"] == 40 and loose["right_hits"] == 0
    chosen = _recommend(rows, 0.1)
    assert chosen.threshold == 0.999 and "40 of 40" in chosen.why  # 0 of 40: upper bound about 0.063
    assert _recommend(rows, 0.05).threshold is None  # even 0 harmful of 40 does not bound the share under 0.05
    assert _recommend(rows, 0.1, min_hits=41).threshold is None  # too few hits to recommend on


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
