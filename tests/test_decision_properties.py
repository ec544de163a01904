"""Properties of the one decision module, on generated evidence: no PASS, choice, recommendation or exit 0 when
any rule's precondition fails, and a PASS exactly when every one holds."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from releasegate.decision.cache import recommend_threshold
from releasegate.decision.choice import choose, why_not
from releasegate.decision.comparison import decide_comparison
from releasegate.decision.gate import decide_gate
from releasegate.decision.verdicts import EXIT_CODES, PASS
from releasegate.decision.whatif import decide_whatif
from releasegate.record.decision_evidence import (
    Arm,
    CacheEvidence,
    CacheRow,
    ComparisonEvidence,
    Contender,
    GateEvidence,
    Health,
    Obligations,
    Outcome,
    Population,
    Provenance,
    Requests,
    WhatIfEvidence,
)

SETTINGS = settings(max_examples=300, deadline=None)
VERDICTS = st.sampled_from(["PASS", "FAIL", "NEEDS_REVIEW", "INCONCLUSIVE", "TARGET_ERROR"])
MAYBE = st.sampled_from([(), ("a problem",)])

outcomes = st.builds(Outcome, name=st.text(min_size=1, max_size=4), origin=st.sampled_from(["rubric", "guard", "review", "baseline"]),
                     verdict=st.sampled_from(["pass", "fail", "insufficient"]),
                     cause=st.sampled_from([None, "samples", "client", "review"]), relaxable=st.booleans(),
                     awaits_labels=st.booleans())
populations = st.builds(Population, planned=st.integers(0, 50), evaluated=st.integers(0, 50),
                        cuts=st.sampled_from([(), ("--limit 5",)]))
requests = st.builds(Requests, attempts=st.integers(0, 50), failed=st.integers(0, 5), answered=st.integers(0, 50),
                     cached=st.integers(0, 5), fresh=st.integers(0, 50))
healths = st.builds(Health, problems=MAYBE, target_error=st.sampled_from([None, "most requests failed"]),
                    client_lag_ms=st.sampled_from([None, 3.0]))
gate_evidence = st.builds(
    GateEvidence, outcomes=st.lists(outcomes, max_size=5).map(tuple), population=populations, requests=requests,
    obligations=st.builds(Obligations, review_pending=st.booleans(), review_waived=st.booleans(), undecided=st.just(())),
    health=healths, provenance=st.builds(Provenance, rubric=st.just("r.yaml"), overrides=st.just(()),
                                         inputs_changed=st.sampled_from([(), ("suite s.jsonl changed",)])),
    allow_insufficient=st.booleans(), sample_only=st.just(()))


_AWAITING = GateEvidence(
    outcomes=(Outcome(name="a", origin="rubric", verdict="pass", cause=None, relaxable=False, awaits_labels=False),
              Outcome(name="g", origin="rubric", verdict="insufficient", cause=None, relaxable=True,
                      awaits_labels=True)),
    population=Population(planned=0, evaluated=0, cuts=()), requests=Requests(0, 0, 0, 0, 0),
    obligations=Obligations(review_pending=False, review_waived=False, undecided=()),
    health=Health(problems=(), target_error=None, client_lag_ms=None),
    provenance=Provenance(rubric="r.yaml", overrides=(), inputs_changed=()), allow_insufficient=True, sample_only=())


@SETTINGS
@given(gate_evidence)
@example(_AWAITING)  # allow_insufficient and a criterion waiting for labels: NEEDS_REVIEW, not PASS
def test_a_gate_passes_exactly_when_every_precondition_holds(e):
    decided = decide_gate(e)
    preconditions = (
        e.health.target_error is None, not e.health.problems, not e.provenance.inputs_changed, not e.population.cut,
        not any(o.verdict == "fail" for o in e.outcomes),
        any(o.verdict == "pass" and o.origin == "rubric" for o in e.outcomes),
        not e.obligations.review_pending,
        # allow_insufficient waives an undecided criterion, never one that waits for reviewers' labels
        all(o.verdict != "insufficient" or (e.allow_insufficient and o.relaxable and not o.awaits_labels)
            for o in e.outcomes),
    )
    assert (decided.verdict == PASS) == all(preconditions)
    assert decided.exit_code == EXIT_CODES[decided.verdict] and (decided.exit_code == 0) == (decided.verdict == PASS)
    if decided.verdict == PASS and e.obligations.review_waived:
        assert "waived" in decided.reason
    # a failure labels cannot change is a FAIL; one only labels can change never is, nor a PASS
    hard_fail = any(o.verdict == "fail" and not o.awaits_labels for o in e.outcomes)
    if e.health.target_error is None:
        assert (decided.verdict == "FAIL") == hard_fail


arms = st.builds(Arm, name=st.sampled_from(["ref", "cand"]), verdict=VERDICTS, population=populations,
                 requests=requests, health=healths, review_waived=st.booleans())


@SETTINGS
@given(st.builds(ComparisonEvidence, reference=arms, candidate=arms,
                 metric_verdicts=st.lists(st.tuples(st.just("accuracy"), st.sampled_from(["pass", "fail", "insufficient"])),
                                          max_size=3).map(tuple),
                 pairs=st.integers(0, 200), changed=st.integers(0, 2), reference_cases=st.integers(0, 200),
                 min_share=st.sampled_from([0.0, 0.9]), require_reference_pass=st.booleans()))
def test_non_inferior_only_on_whole_healthy_arms_and_enough_pairs(e):
    if decide_comparison(e).verdict != PASS:
        return
    assert e.metric_verdicts and all(v == "pass" for _, v in e.metric_verdicts) and e.pairs and not e.changed
    for arm in (e.reference, e.candidate):
        assert not arm.health.problems and not arm.population.cut
    assert e.reference.health.target_error is None and e.candidate.health.target_error is None
    assert not e.min_share or e.pairs >= e.min_share * e.reference_cases
    assert not e.require_reference_pass or e.reference.verdict == PASS


RANGES = st.one_of(st.none(), st.tuples(st.floats(0, 10), st.floats(0, 10)).map(lambda t: (min(t), max(t))))
contenders = st.builds(
    Contender, name=st.text(min_size=1, max_size=3), is_reference=st.just(False), verdict=VERDICTS,
    review_waived=st.booleans(), not_comparable=st.sampled_from([None, "another rubric"]),
    parity=st.sampled_from([None, "PASS", "FAIL", "INCONCLUSIVE"]), swept=st.booleans(), capacity=RANGES, cost=RANGES,
    e2e_p95=RANGES, speculative=st.booleans(), draft_tokens=st.sampled_from([None, 0, 40]),
    speculation_changed=st.sampled_from([None, "changed answers"]))


@SETTINGS
@given(st.lists(contenders, min_size=1, max_size=4, unique_by=lambda c: c.name))
def test_a_choice_qualifies_and_beats_a_qualifying_reference_by_its_interval(rows):
    rows = [Contender(**{**vars(rows[0]), "is_reference": True}), *rows[1:]]
    picked = choose(rows)
    ref = rows[0]
    if picked.chosen is None:
        assert picked.decision.verdict != PASS
        return
    best = next(c for c in rows if c.name == picked.chosen)
    assert why_not(ref) is None and why_not(best) is None
    assert not (best.speculative and not best.draft_tokens)
    if picked.decision.verdict == PASS:
        assert not ref.review_waived and not best.review_waived
    if best is not ref:
        mine, theirs = getattr(best, _FIELD[picked.basis]), getattr(ref, _FIELD[picked.basis])
        better = mine[0] > theirs[1] if picked.basis == "capacity" else mine[1] < theirs[0]
        assert better


_FIELD = {"cost": "cost", "capacity": "capacity", "latency": "e2e_p95"}

rows = st.builds(CacheRow, threshold=st.floats(0.5, 1.0), hits=st.integers(0, 60), right_hits=st.integers(0, 60),
                 harmful_hits=st.integers(0, 60), unknown_hits=st.integers(0, 2),
                 harmful_upper=st.one_of(st.none(), st.floats(0, 1)))


@SETTINGS
@given(st.builds(CacheEvidence, rows=st.lists(rows, max_size=5).map(tuple),
                 limit=st.one_of(st.none(), st.floats(0.01, 0.5)), min_hits=st.integers(1, 20),
                 error=st.sampled_from([None, "embeddings down"])))
def test_a_recommended_threshold_is_bounded_on_enough_checked_hits(e):
    rec = recommend_threshold(e, exact=False)
    if rec.row is None:
        return
    assert e.error is None and e.limit is not None
    assert rec.row.harmful_upper is not None and rec.row.harmful_upper < e.limit
    assert rec.row.hits >= e.min_hits and not rec.row.unknown_hits
    assert all(rec.row.right_hits >= r.right_hits for r in e.rows if r.harmful_upper is not None
               and r.harmful_upper < e.limit and r.hits >= e.min_hits and not r.unknown_hits)


@SETTINGS
@given(VERDICTS, st.one_of(st.none(), VERDICTS))
def test_a_whatif_exits_0_only_over_a_run_that_passed(whatif, recorded):
    decided = decide_whatif(WhatIfEvidence(whatif, recorded, ()), "why")
    assert decided.exit_code != 0 or (whatif == PASS and recorded == PASS)
