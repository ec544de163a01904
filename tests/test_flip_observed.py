"""The flip probe speaks only on what each request observed: a quality answer asked alone (1 in flight) paired
with load answers asked beside others (2 or more in flight), covering the rubric's share of the cases, weighted
to the source under a stratified sample. The declared concurrency (run.json `load_phase.concurrency`, an open
loop's cap) is never read: generated load phases, judged by `gate_run` itself, and the stub through the CLI."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import gate_run
from releasegate.decision.verdicts import PASS
from releasegate.record.records import Stratum
from releasegate.stats.intervals import wilson_bounds
from releasegate.stats.sample_weights import kish_n
from test_stable_answers_hostile import INFO, crit, load_rec, rec, row, rubric

CASES = 40
DECLARED = INFO.model_copy(update={"repeats": None, "cases": CASES, "phases": ["quality", "load"],
                                   "load_phase": {"requests": 2 * CASES, "planned": 2 * CASES, "concurrency": 256}})
"""A run that declares an open loop capped at 256 in flight: the cap says nothing of what was in flight."""

_case = st.fixed_dictionaries({
    "alone": st.sampled_from([1, 1, 1, 2, 4, None]),  # the quality answer's observed in flight
    "load": st.lists(st.tuples(st.sampled_from([1, 2, 3, 8, None]), st.booleans()), max_size=3),  # (in flight, changed)
})


def _run(cases: list[dict]) -> tuple[list, list]:
    records = [rec(i, "yes", in_flight=c["alone"]) for i, c in enumerate(cases)]
    load, n = [], 0
    for i, c in enumerate(cases):
        for in_flight, changed in c["load"]:
            load.append(load_rec(n, i, "no" if changed else "yes", in_flight=in_flight))
            n += 1
    return records, load


def _truth(cases: list[dict], share: float) -> tuple[float | None, int]:
    """(the flip rate the rule gives, pairs); None when the pairs cover less than `share` of the cases."""
    pairs = [c for c in cases if c["alone"] == 1 and any((f or 0) >= 2 for f, _ in c["load"])]
    if not pairs or len(pairs) < share * len(cases):
        return None, len(pairs)
    return sum(any(changed for _, changed in c["load"]) for c in pairs) / len(pairs), len(pairs)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases=st.lists(_case, min_size=CASES, max_size=CASES), share=st.sampled_from([0.5, 0.9]))
def test_the_probe_speaks_only_on_observed_pairs_covering_the_share(cases, share):
    records, load = _run(cases)
    if not load:
        return
    policy = replace(rubric(crit("load_flip_rate", "<=", 0.5)), min_load_pair_share=share)
    flip = row(gate_run(DECLARED, records, policy, None, load), "load_flip_rate")
    value, pairs = _truth(cases, share)
    if value is None:
        assert flip["value"] is None and flip["verdict"] != "pass"
        if any(c["alone"] is not None for c in cases) and any(f is not None for c in cases for f, _ in c["load"]):
            assert f"covers {pairs} of {CASES} cases" in flip["reason"]
    else:
        assert flip["value"] == pytest.approx(value) and flip["n"] == pairs
        assert f"{pairs} of {CASES} cases paired" in flip["note"]


@pytest.mark.parametrize("load_in_flight", [1, None])
def test_a_load_phase_that_never_had_two_in_flight_never_passes_whatever_it_declared(load_in_flight):
    """Every load answer the same as alone, the rubric's bar trivially met, a declared cap of 256: undecided."""
    records = [rec(i, "yes") for i in range(CASES)]
    load = [load_rec(i, i, "yes", in_flight=load_in_flight) for i in range(CASES)]
    report = gate_run(DECLARED, records, rubric(crit("load_flip_rate", "<=", 0.5), crit("accuracy", ">=", 0.5)),
                      None, load)
    flip = row(report, "load_flip_rate")
    assert flip["value"] is None and flip["verdict"] == "insufficient" and report["verdict"] != PASS
    why = "only with 1 in flight" if load_in_flight else "did not record how many were in flight"
    assert why in flip["reason"]
    assert row(report, "accuracy")["verdict"] == "pass"  # the run itself was fine: only the probe cannot speak


def test_half_the_suite_under_load_is_undecided_naming_the_coverage():
    records = [rec(i, "yes") for i in range(CASES)]
    load = [load_rec(i, i, "yes") for i in range(CASES // 2)]
    report = gate_run(DECLARED, records, rubric(crit("load_flip_rate", "<=", 0.5), crit("load_accuracy_delta", ">=", -1)),
                      None, load)
    for metric in ("load_flip_rate", "load_accuracy_delta"):
        assert row(report, metric)["value"] is None
        assert f"covers {CASES // 2} of {CASES} cases (50%; at least 90% needed)" in row(report, metric)["reason"]
    assert report["verdict"] != PASS


@given(flip_a=st.integers(0, 20), flip_b=st.integers(0, 20), pop_a=st.integers(20, 5000), pop_b=st.integers(20, 5000))
@settings(max_examples=40, deadline=None)
def test_under_a_stratified_sample_the_flip_rate_and_its_bound_are_the_sources(flip_a, flip_b, pop_a, pop_b):
    """20 cases drawn from each of two strata of the source: the rate is the population-weighted share, its bound
    Wilson at Kish's effective n, never the sample's plain share."""
    def stratum(name: str, population: int) -> Stratum:
        return Stratum(name=name, population=population)

    records, load = [], []
    for i in range(40):
        a = i < 20
        r = rec(i, "yes").model_copy(update={"stratum": stratum("a" if a else "b", pop_a if a else pop_b)})
        records.append(r)
        changed = (i < flip_a) if a else (i - 20 < flip_b)
        load.append(load_rec(i, i, "no" if changed else "yes"))
    flip = row(gate_run(DECLARED, records, rubric(crit("load_flip_rate", "<=", 0.5, confidence=0.95)), None, load),
               "load_flip_rate")
    weights = [pop_a / 20] * 20 + [pop_b / 20] * 20
    truth = (flip_a * pop_a / 20 + flip_b * pop_b / 20) / (pop_a + pop_b)
    assert flip["value"] == pytest.approx(truth)
    bounds = wilson_bounds(truth * kish_n(weights), kish_n(weights), 0.95)
    assert flip["bounds"] == pytest.approx(list(bounds), abs=1e-6)  # report.json rounds to 6 places


def test_a_stratified_sample_whose_flips_sit_in_the_large_stratum_fails():
    """The source is 80% stratum a, which flips every answer; the sample is half a, half b: plain share 0.5."""
    records = [rec(i, "yes").model_copy(update={"stratum": Stratum(name="a" if i < 20 else "b",
                                                                    population=800 if i < 20 else 200)})
               for i in range(40)]
    load = [load_rec(i, i, "no" if i < 20 else "yes") for i in range(40)]
    report = gate_run(DECLARED, records, rubric(crit("load_flip_rate", "<=", 0.6), crit("load_accuracy_delta", ">=", -0.6)),
                      None, load)
    assert row(report, "load_flip_rate")["value"] == pytest.approx(0.8)
    assert row(report, "load_accuracy_delta")["value"] == pytest.approx(-0.8)
    assert report["verdict"] != PASS


# --- through the CLI: the stub changes a seeded 30% of answers whenever another request is in flight --------------

STUB_CASES = 150


@pytest.mark.parametrize(("load", "verdict", "why"), [
    ("{concurrency: 1, requests: 150}", "insufficient", "150 asked under load only with 1 in flight"),
    ("{rate: 40, arrival: constant, requests: 150}", "insufficient", "asked under load only with 1 in flight"),
    ("{concurrency: 4, requests: 75}", "insufficient", "covers 75 of 150 cases"),
    ("{concurrency: 4, requests: 150}", "fail", "flipped under load"),
])
def test_the_stub_through_the_cli_is_judged_on_what_was_in_flight(tmp_path, cli, load, verdict, why):
    """One request at a time, or an open loop whose arrivals (every 25 ms, capped at 256) never overlap a 2 ms
    answer: nothing was asked beside another, so the probe cannot pass; half the suite under load covers too
    little; 4 in flight shows the flips."""
    from releasegate.testing import StubBehaviour, StubServer
    from test_stable_answers import FLIP_RUBRIC, _yes, check, criterion, project

    behaviour = StubBehaviour(ttft_ms=2, itl_ms=0.5, tokens=2, reply=_yes, flip_share=0.3, flip_above=1, flip_seed=5)
    with StubServer(behaviour) as stub:
        config = project(tmp_path, stub.base_url, cases=STUB_CASES, rubric=FLIP_RUBRIC, extra=f"load: {load}\n")
        code, report, run = check(cli, config)
    flip = criterion(report, "load_flip_rate")
    assert flip["verdict"] == verdict and why in (flip["reason"] + (flip.get("note") or ""))
    assert report["verdict"] != "PASS" and code != 0
    assert all(r.timing.in_flight_most == 1 for r in run.read_records())  # the quality phase, asked alone
    observed = [r.timing.in_flight_most for r in run.read_records("load.jsonl")]
    assert all(isinstance(n, int) and n >= 1 for n in observed)
    if "concurrency: 1" in load:
        assert set(observed) == {1}


# --- servers and served variants: the flip rule at any temperature ---------------------------------------------

def _contender(**over):
    from releasegate.record.decision_evidence import Contender

    base = dict(name="q8", is_reference=False, verdict=PASS, review_waived=False, not_comparable=None, parity=PASS,
                swept=False, capacity=None, cost=None, e2e_p95=None, speculative=False, draft_tokens=None,
                speculation_changed=None, flip_margin=0.02)
    return Contender(**{**base, **over})


def test_a_contender_whose_probe_could_not_speak_is_not_chosen():
    from releasegate.decision.choice import why_not

    unknown = _contender(load_flip=None, load_flip_unknown="the flip probe covers 60 of 120 cases")
    assert "not shown stable" in why_not(unknown) and "60 of 120" in why_not(unknown)
    assert why_not(_contender(load_flip=None)) is None  # no load phase asked a case: nothing to show


@given(value=st.floats(0, 1), upper_extra=st.floats(0, 0.5), variation=st.one_of(st.none(), st.floats(0, 0.5)))
def test_at_any_temperature_flips_count_beyond_the_contenders_own_draws(value, upper_extra, variation):
    """The rule is on whatever the temperature; at temperature > 0 the change its own draws show alone is
    allowed for, and nothing more."""
    from releasegate.decision.choice import why_not

    upper = min(1.0, value + upper_extra)
    reason = why_not(_contender(load_flip=(value, upper), flip_variation=variation))
    assert (reason is None) == (upper <= 0.02 + (variation or 0.0))


def test_draw_variation_is_the_lower_bound_of_how_often_two_draws_disagree():
    from releasegate.gate.load_quality import draw_variation

    records = [rec(i, "yes") for i in range(CASES)]
    draws = [rec(i, "no" if (i < 10 and d == 2) else "yes", draw=d) for i in range(CASES) for d in (1, 2)]
    info = INFO.model_copy(update={"repeats": {"s": 3}})
    # ten cases draw yes, yes, no: two of their three pairs of draws disagree
    assert draw_variation(info, records, draws) == pytest.approx(wilson_bounds(10 * 2 / 3, CASES)[0])
    assert draw_variation(info, records, draws[:-1]) is None  # a draw missing: not as planned
    assert draw_variation(INFO.model_copy(update={"repeats": None}), records, []) is None


# --- what each request observed --------------------------------------------------------------------------------

@given(st.lists(st.booleans(), min_size=1, max_size=60))
def test_each_request_records_the_requests_in_flight_it_saw(steps):
    """A random interleaving of sends (True) and answers (False, the oldest request still in flight): each
    request's `at_send` and `most` equal a count over the whole schedule."""
    from contextlib import ExitStack

    from releasegate.backends._in_flight import InFlight

    in_flight, open_, seen, spans, t = InFlight(), [], [], [], 0
    with ExitStack() as stack:
        for send in steps:
            t += 1
            if send:
                open_.append((len(seen), stack.enter_context(ExitStack())))
                seen.append(open_[-1][1].enter_context(in_flight.request()))
                spans.append([t, None])
            elif open_:
                i, ctx = open_.pop(0)
                ctx.close()
                spans[i][1] = t
    end = t + 1
    live = [(a, b if b is not None else end) for a, b in spans]
    for (start, stop), got in zip(live, seen):
        assert got.at_send == sum(a <= start < b for a, b in live)
        assert got.most == max(sum(a <= u < b for a, b in live) for u, _ in live if start <= u < stop)


def test_a_timing_writes_what_was_in_flight_only_when_known():
    from releasegate.record.records import Timing

    assert "in_flight_most" not in Timing(ttft_ms=1.0).model_dump()  # an older run's line reads and writes as before
    assert Timing.model_validate({"ttft_ms": 1.0}).in_flight_most is None
    dumped = Timing(in_flight_at_send=2, in_flight_most=3).model_dump(mode="json")
    assert (dumped["in_flight_at_send"], dumped["in_flight_most"]) == (2, 3)
