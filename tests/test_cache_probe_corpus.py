"""Corpus and properties of the response-cache probe on generated suites: paraphrase groups of near-duplicate
questions whose right answers differ ("delivery time to <city>", asked several ways), judged by the real scorers.
Every answered neighbour at or above the threshold is an answer a case could be served, nearest or not; a
time-sensitive case is stale whenever the TTL exceeds its tolerance, whatever the arrival interval or the suite's
time span."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import write_jsonl
from releasegate.decision.criterion import CriterionEvidence, decide_criterion
from releasegate.gate.cache_probe import ProbeCase, ProbeSettings, simulate, simulate_all
from releasegate.gate.cache_probe_gate import cache_metric, cache_section
from releasegate.gate.cache_probe_records import answer_passes, probe_cases
from releasegate.inputs.rubric import Criterion
from releasegate.record.cache_probe_report import CacheProbeSection
from releasegate.record.records import CaseRecord
from releasegate.report.cache_probe_section import cache_probe_lines, wrong_hit_lines

PROPERTY = settings(max_examples=60, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
CITIES = ["Paris", "Rome", "Oslo", "Lima", "Cairo", "Osaka", "Quito", "Perth"]
PHRASES = ["How long is delivery to {}?", "Delivery time to {}?", "When does a parcel reach {}?", "Days to ship to {}?"]
LIMIT = Criterion(name="cache", metric="cache_wrong_hit_rate", op="<=", threshold=0.25, confidence=0.95)
# an exact answer check, and a lenient one that any city's answer passes: across groups only the first can tell
CHECKS = {"json_fields": ({"type": "json_fields", "fields": ["days"]}, lambda d: {"days": d}, lambda c, d: json.dumps({"days": d})),
          "regex": ({"type": "regex", "pattern": r"\d+ days"}, lambda d: f"{d} days",
                    lambda c, d: f"Delivery to {c} takes {d} days.")}


def delivery_suite(days: list[int], members: int, check: str = "json_fields", *, time_sensitive: bool = False
                   ) -> list[CaseRecord]:
    """One paraphrase group per city, `members` phrasings each, every answer right for its own city."""
    spec, expected, output = CHECKS[check]
    return [CaseRecord(case_id=f"{city.lower()}-{k}", suite="delivery", tags={"group": city, "ts": time_sensitive},
                       input={"messages": [{"role": "user", "content": PHRASES[k].format(city)}]},
                       answer=spec, expected=expected(d), output=output(city, d))
            for city, d in zip(CITIES, days) for k in range(members)]


def geometry(cities: int, members: int, city_weight: float, phrase_weight: float) -> tuple[list, float, float]:
    """Vectors with one shared topic axis, one axis per city and one per phrasing: every question about a city is
    nearer its own group (similarity `within`) than any other city's (`across`), and every other city's is at
    `across`."""
    dims = 1 + cities + cities * members
    vectors = []
    for c in range(cities):
        for k in range(members):
            v = [0.0] * dims
            v[0], v[1 + c], v[1 + cities + c * members + k] = 1.0, city_weight, phrase_weight
            vectors.append(v)
    norm2 = 1 + city_weight ** 2 + phrase_weight ** 2
    return vectors, 1 / norm2, (1 + city_weight ** 2) / norm2


def verdict(rows: list[dict], threshold: float) -> str:
    probe = {"mode": "semantic", "threshold": threshold, "rows": rows}
    value = cache_metric("cache_wrong_hit_rate", probe, LIMIT.confidence)
    return str(decide_criterion(CriterionEvidence(LIMIT, value)).verdict)


def probe(records: list[CaseRecord], vectors, thresholds, **kw) -> list[dict]:
    cases = probe_cases(records, group_tag="group", time_sensitive_tag="ts")
    return simulate_all(cases, answer_passes(records, []), ProbeSettings(mode="semantic", **kw), thresholds, vectors)


suites = st.fixed_dictionaries({
    "days": st.lists(st.integers(1, 30), min_size=3, max_size=len(CITIES), unique=True),
    "members": st.integers(3, len(PHRASES)),
    "city_weight": st.floats(0.1, 0.6),
    "phrase_weight": st.floats(0.01, 0.1),
    "check": st.sampled_from(sorted(CHECKS)),
    "order": st.randoms(use_true_random=False),
})


@PROPERTY
@given(suites)
def test_a_neighbour_from_another_group_fails_the_cache_even_when_it_is_never_the_nearest(s):
    records = delivery_suite(s["days"], s["members"], s["check"])
    vectors, across, within = geometry(len(s["days"]), s["members"], s["city_weight"], s["phrase_weight"])
    order = list(range(len(records)))
    s["order"].shuffle(order)  # any suite order: which case reaches the cache first is chance
    records, vectors = [records[i] for i in order], [vectors[i] for i in order]
    loose, tight = across - 1e-9, (across + within) / 2
    rows = {r["threshold"]: r for r in probe(records, vectors, [loose, tight])}
    n, others = len(records), (len(s["days"]) - 1) * s["members"]
    for i, v in enumerate(vectors):  # every case's nearest neighbour is in its own group
        nearest = max((j for j in range(n) if j != i), key=lambda j: sum(a * b for a, b in zip(v, vectors[j])))
        assert records[nearest].tags["group"] == records[i].tags["group"]
    row = rows[loose]  # other cities' questions reach the threshold: each is an answer a case could be served
    assert row["harmful_hits"] == row["wrong_hits"] == row["hittable"] == n and row["wrong_hit_rate"] == 1.0
    assert verdict(list(rows.values()), loose) == "fail"
    for wrong in row["wrong_cases"]:
        assert not wrong["within_group"] and wrong["similarity"] == pytest.approx(across)
        assert (wrong["wrong_neighbours"], wrong["donors"]) == (others, n - 1)
    assert len(row["wrong_cases"]) == n
    row = rows[tight]  # no other city reaches it: every case could be served only its own city's answer
    assert row["harmful_hits"] == row["wrong_hits"] == 0 and row["right_hits"] == row["hittable"] == n
    assert row["wrong_cases"] == [] and verdict(list(rows.values()), tight) == "pass"


def test_the_report_names_each_wrong_case_its_worst_neighbour_and_how_many():
    records = delivery_suite([2, 5, 9], 3, "regex")
    vectors, across, _ = geometry(3, 3, 0.3, 0.05)
    rows = probe(records, vectors, [across - 1e-9])
    section = CacheProbeSection.model_validate(cache_section(
        {"mode": "semantic", "threshold": rows[0]["threshold"], "rows": rows}, [LIMIT]))
    row = section.rows[0]
    assert [w.case_id for w in row.wrong_cases] == [w.case_id for w in row.wrong][:9] and len(row.wrong_cases) == 9
    assert all(w.wrong_neighbours == 6 and w.donors == 8 for w in row.wrong_cases)
    lines = wrong_hit_lines(section)
    assert "; 6 of the 8 answer(s) it could be served wrong" in lines[0] and "across groups" in lines[0]
    assert any(line.startswith("9 case(s) could be served a wrong answer (100.0% of the cases)")
               for line in cache_probe_lines(section))


# --- a random cache: the judged figures are a function of the neighbourhood, not of the arrival process ---

def _random_probe(draw) -> tuple[list[ProbeCase], list[list[float]], dict, ProbeSettings]:
    n = draw(st.integers(2, 9))
    vectors = [[draw(st.integers(-3, 3)) for _ in range(3)] for _ in range(n)]
    for v in vectors:
        v[0] = v[0] or 1  # no zero vector
    cases = [ProbeCase(f"c{i}", f"q{i}", draw(st.sampled_from(["a", "b", None])), draw(st.sampled_from(["g", "h", None])),
                       draw(st.booleans()), expected=draw(st.sampled_from(["a", "b", None])),
                       exact_check=draw(st.booleans())) for i in range(n)]
    passes = {(a, b): draw(st.sampled_from([True, False, None])) for a in range(n) for b in range(n)}
    ttl = draw(st.sampled_from([None, 0.0, 5.0, 60.0, 3600.0]))
    return cases, vectors, passes, ProbeSettings(mode="semantic", ttl_s=ttl, arrival_s=draw(st.sampled_from([0.0, 1.0, 30.0])),
                                                 fresh_s=draw(st.sampled_from([0.0, 60.0])))


def similarities(vectors) -> np.ndarray:
    """Every pair's cosine similarity, computed as the probe computes it."""
    matrix = np.asarray(vectors, dtype=np.float64)
    unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return unit @ unit.T


def thresholds_between(draw, vectors, size: int) -> list[float]:
    """Thresholds that fall between the suite's similarities, never on one: which pairs reach them is the same
    however the last bit of a cosine rounds."""
    values = np.unique(np.round(similarities(vectors), 9))
    edges = [float(values[0]) - 0.5, *((values[:-1] + values[1:]) / 2).tolist(), float(values[-1]) + 0.5]
    size = min(size, len(edges))
    return draw(st.lists(st.sampled_from(edges), min_size=size, max_size=size, unique=True))


JUDGED = ("hittable", "harmful_hits", "wrong_hits", "right_hits", "unknown_hits", "stale_time_sensitive")
NEVER_RISE = ("hittable", "harmful_hits", "wrong_hits", "wrong_hit_rate", "stale_time_sensitive")


@PROPERTY
@given(st.data())
def test_raising_the_threshold_never_raises_the_wrong_hit_rate(data):
    cases, vectors, passes, probe_settings = _random_probe(data.draw)
    thresholds = thresholds_between(data.draw, vectors, data.draw(st.integers(2, 4)))
    rows = simulate_all(cases, lambda a, b: passes[(a, b)], probe_settings, thresholds, vectors)  # highest first
    for higher, lower in zip(rows, rows[1:]):
        for figure in NEVER_RISE:
            assert higher[figure] <= lower[figure], (figure, higher["threshold"], lower["threshold"])
        assert {w["case_id"] for w in higher["wrong_cases"]} <= {w["case_id"] for w in lower["wrong_cases"]}


@PROPERTY
@given(st.data())
def test_the_judged_figures_do_not_depend_on_the_suite_order(data):
    cases, vectors, passes, probe_settings = _random_probe(data.draw)
    threshold = thresholds_between(data.draw, vectors, 1)[0]
    order = data.draw(st.permutations(range(len(cases))))
    row = simulate(cases, lambda a, b: passes[(a, b)], probe_settings, threshold, vectors)
    moved = simulate([cases[i] for i in order], lambda a, b: passes[(order[a], order[b])], probe_settings, threshold,
                     [vectors[i] for i in order])
    assert {k: row[k] for k in JUDGED} == {k: moved[k] for k in JUDGED}
    assert {w["case_id"] for w in row["wrong_cases"]} == {w["case_id"] for w in moved["wrong_cases"]}


# --- staleness: some arrival order serves a time-sensitive case an answer as old as the TTL ---

@PROPERTY
@given(st.data())
def test_a_time_sensitive_case_is_stale_whenever_the_ttl_exceeds_its_tolerance(data):
    cases, vectors, passes, probe_settings = _random_probe(data.draw)
    threshold = thresholds_between(data.draw, vectors, 1)[0]
    row = simulate(cases, lambda a, b: passes[(a, b)], probe_settings, threshold, vectors)
    sims = similarities(vectors)
    could_hit = [i for i in range(len(cases))
                 if any(j != i and cases[j].output is not None and sims[i, j] >= threshold for j in range(len(cases)))]
    late = probe_settings.ttl_s is None or probe_settings.ttl_s > probe_settings.fresh_s
    stale = [cases[i].case_id for i in could_hit if cases[i].time_sensitive] if late else []
    assert row["stale_time_sensitive"] == len(stale) and row["stale_cases"] == stale
    assert row["harmful_hits"] >= len(stale)


@pytest.mark.parametrize("arrival_s", [0.0, 1.0])
@pytest.mark.parametrize("ttl_s, fails", [(3600.0, True), (None, True), (60.0, False), (30.0, False)])
def test_short_suites_and_simultaneous_arrivals_are_judged_stale_by_the_ttl(arrival_s, ttl_s, fails):
    # three cities asked three ways in under 9 s (or all at once): the suite never spans the 60 s tolerance,
    # yet under a TTL past it any of the answers could be hours old when served
    records = delivery_suite([2, 5, 9], 3, time_sensitive=True)
    vectors, across, within = geometry(3, 3, 0.3, 0.05)
    tight = (across + within) / 2
    rows = probe(records, vectors, [tight], ttl_s=ttl_s, arrival_s=arrival_s, fresh_s=60.0)
    row = rows[0]
    assert row["stale_time_sensitive"] == (9 if fails else 0) and row["harmful_hits"] == (9 if fails else 0)
    assert verdict(rows, tight) == ("fail" if fails else "pass")


# --- the whole path: check with a stub embeddings endpoint and the replay backend ---

def _embeddings_server(vectors: dict[str, list[float]]):
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            texts = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))["input"]
            body = json.dumps({"data": [{"index": i, "embedding": vectors[t]} for i, t in enumerate(texts)]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_check_fails_a_cache_that_could_serve_another_citys_answer(cli, tmp_path, check):
    records = delivery_suite([2, 5, 9, 14], 4, check)
    vectors, across, within = geometry(4, 4, 0.3, 0.05)
    spec, _, _ = CHECKS[check]
    write_jsonl(tmp_path / "suite.jsonl", [{"id": r.case_id, "messages": r.input["messages"], "expected": r.expected,
                                            "tags": {"group": r.tags["group"]}} for r in records])
    write_jsonl(tmp_path / "answers.jsonl", [{"id": r.case_id, "output": r.output} for r in records])
    (tmp_path / "rubric.yaml").write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 0}\n"
                                          "  - {metric: cache_wrong_hit_rate, op: '<=', threshold: 0.25}\n"
                                          "review: {required_domains: []}\n")
    server = _embeddings_server({r.input["messages"][0]["content"]: v for r, v in zip(records, vectors)})
    try:
        for threshold, expected in ((round(across - 1e-6, 9), 1), (round((across + within) / 2, 9), 0)):
            (tmp_path / "c.yaml").write_text(
                "target: {backend: replay, responses: answers.jsonl}\n"
                f"suites:\n  - {{path: suite.jsonl, answer: {json.dumps(spec)}}}\nrubric: rubric.yaml\n"
                f"response_cache_probe: {{threshold: {threshold}, group_tag: group, embeddings: "
                f"{{base_url: 'http://127.0.0.1:{server.server_port}/v1', model: e}}}}\n")
            code, out, err = cli("check", "-c", tmp_path / "c.yaml", "--run-id", f"t{expected}", "--no-progress",
                                 "--json")
            report = json.loads(out)
            assert code == expected, (threshold, report["verdict_reason"], err)
            row = report["response_cache_probe"]["rows"][0]
            assert row["harmful_hits"] == (16 if expected else 0) and row["hittable"] == 16
    finally:
        server.shutdown()
        server.server_close()
