"""Hunt, round 5: false PASSes (and false choices, blesses, attestations) at the crossings of the load-pair flip
probe, the effective rubric, labels that cover their sample, the cache probe, client lateness and the faster input
parsing. A test marked xfail(strict=True) asserts the correct behaviour and fails today: its docstring names the
path to the false PASS. The plain tests are attacks that held: the regression corpus."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from releasegate.border.structured import MAX_JSON_DEPTH, TooDeep, json_loads
from releasegate.inputs.case_values import note_constant, note_float
from releasegate.inputs.judging_keys import judges, key_parts
from releasegate.inputs.schema_check import schema_errors
from releasegate.inputs.schema_compiler import SchemaCompiler, Unsupported
from releasegate.record.review_labels import reviewer_key
from test_review_cover import ACCEPTABLE, _exported, _fill

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------- the schema compiler against jsonschema


def _fast(schema: dict, value) -> bool | None:
    try:
        return SchemaCompiler(schema).compile(schema)(value)
    except Unsupported:
        return None


def test_an_anchor_ref_is_not_read_as_the_root():
    """Path: an output schema whose property is `{"$ref": "#name"}` with the `$anchor` under `$defs` (never compiled,
    `$defs` is an annotation): `_ref` splits '#name' on '/', finds no part and resolves the root, so the compiled
    test accepts `{"x": 5}` where jsonschema says 5 is not a string, and `schema_errors` returns None without asking
    jsonschema. The expected-answer check (`inputs.expected_check`) then admits a suite jsonschema would refuse."""
    schema = {"$defs": {"A": {"$anchor": "word", "type": "string"}}, "properties": {"x": {"$ref": "#word"}}}
    assert not jsonschema.Draft202012Validator(schema).is_valid({"x": 5})
    assert _fast(schema, {"x": 5}) in (False, None)
    assert schema_errors({"x": 5}, schema) is not None


def test_a_dynamic_anchor_ref_is_not_read_as_the_root():
    """As above with `$dynamicAnchor`: `schema_errors` accepts what jsonschema refuses."""
    schema = {"$defs": {"A": {"$dynamicAnchor": "word", "type": "string"}}, "properties": {"x": {"$ref": "#word"}}}
    assert not jsonschema.Draft202012Validator(schema).is_valid({"x": 5})
    assert schema_errors({"x": 5}, schema) is not None


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(-5, 5, allow_nan=False),
                     st.sampled_from(["", "a", "ab", "abc", "b", "a\n", "\U0001F600", "1"]))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), inner, max_size=3)),
    max_leaves=8)
_LEAF_SCHEMAS = st.one_of(
    st.booleans(),
    st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "number", "boolean", "null", "object",
                                                    "array"])}),
    st.fixed_dictionaries({"type": st.just("string")}, optional={
        "minLength": st.integers(0, 3), "maxLength": st.integers(0, 3), "pattern": st.sampled_from(["^a", "b$", "^a$"]),
        "enum": st.lists(st.sampled_from(["a", "ab", "b"]), max_size=3)}),
    st.fixed_dictionaries({}, optional={"enum": st.lists(st.sampled_from(["a", "b", "1"]), max_size=3),
                                        "const": st.sampled_from(["a", "1"]), "minimum": st.integers(-2, 2),
                                        "exclusiveMaximum": st.integers(-2, 2), "maxLength": st.integers(0, 2),
                                        "minItems": st.integers(0, 2), "uniqueItems": st.just(True),
                                        "required": st.lists(st.sampled_from(["a", "b"]), max_size=2)}),
)
_SCHEMAS = st.recursive(_LEAF_SCHEMAS, lambda inner: st.one_of(
    st.fixed_dictionaries({"type": st.just("object")}, optional={
        "properties": st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
        "additionalProperties": st.one_of(st.booleans(), inner), "required": st.lists(st.sampled_from(["a", "b"]),
                                                                                      max_size=2),
        "propertyNames": inner, "minProperties": st.integers(0, 2), "maxProperties": st.integers(0, 3)}),
    st.fixed_dictionaries({}, optional={"properties": st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2),
                                        "additionalProperties": inner, "items": inner, "not": inner}),
    st.fixed_dictionaries({"anyOf": st.lists(inner, min_size=1, max_size=3)}),
    st.fixed_dictionaries({"oneOf": st.lists(inner, min_size=1, max_size=3)}),
    st.fixed_dictionaries({"allOf": st.lists(inner, min_size=1, max_size=3)}),
    st.fixed_dictionaries({"if": inner}, optional={"then": inner, "else": inner}),
    st.fixed_dictionaries({"type": st.lists(st.sampled_from(["string", "object", "null", "integer"]), min_size=1,
                                            max_size=3, unique=True)}),
), max_leaves=6)


@PROPERTY
@given(_SCHEMAS, _VALUES)
def test_the_compiled_user_schema_answers_as_jsonschema(schema, value):
    """Held: for user schemas of the keywords the compiler specialises (object and string together, the rest one
    by one), the compiled test answers exactly as jsonschema's is_valid, and schema_errors accepts only what
    jsonschema accepts."""
    try:
        want = jsonschema.Draft202012Validator(schema).is_valid(value)
    except jsonschema.exceptions.SchemaError:
        return
    got = _fast(schema, value) if isinstance(schema, dict) else None
    if got is not None:
        assert got == want, (schema, value)
    if isinstance(schema, dict):
        assert (schema_errors(value, schema) is None) == want, (schema, value)


@PROPERTY
@given(st.fixed_dictionaries({"type": st.just("object")}, optional={
    "properties": st.dictionaries(st.sampled_from(["a", "b"]), _LEAF_SCHEMAS, max_size=2)}), _VALUES)
def test_a_local_defs_ref_answers_as_jsonschema(sub, value):
    """Held: a `$ref` into `$defs` (a JSON pointer, the form the compiler resolves) answers as jsonschema."""
    schema = {"$defs": {"s": sub}, "properties": {"x": {"$ref": "#/$defs/s"}}}
    doc = {"x": value}
    assert (schema_errors(doc, schema) is None) == jsonschema.Draft202012Validator(schema).is_valid(doc)


# ---------------------------------------------------------------- the depth pre-count and the NaN hooks


@pytest.mark.parametrize("text", [
    "[" * 65 + "]" * 65,
    '{"a":' * 65 + "1" + "}" * 65,
    '["' + "]" * 70 + '",' + "[" * 65 + "]" * 65 + "]",
])
def test_a_deep_document_is_refused_however_its_brackets_are_counted(text):
    """Held: `_shallow` counts every opening bracket (in strings too), so it only ever sends a document to the
    exact count; 65 levels are refused as str and as UTF-8 bytes."""
    for form in (text, text.encode()):
        with pytest.raises(TooDeep):
            json_loads(form)


def test_a_document_of_exactly_the_limit_parses():
    """Held: 64 levels (the limit) parse."""
    assert json_loads("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH) is not None


@pytest.mark.parametrize("text", ["1e999", "-1e999", "1E400", "NaN", "Infinity", "-Infinity", "123456789e400",
                                  "0.1e99999"])
def test_every_non_finite_number_of_a_line_is_noted(text):
    """Held: a number JSON cannot hold, however written (exponent, constant, sign), is noted by the hooks that let
    a suite line skip the schema's non-finite walk."""
    odd: list = []
    value = json_loads(f'{{"x": [{text}]}}', parse_float=lambda t: note_float(odd, t),
                       parse_constant=lambda t: note_constant(odd, t))
    assert not math.isfinite(value["x"][0])
    assert odd


# ---------------------------------------------------------------- judging keys


@pytest.mark.parametrize("key", ["target", "generation.temperature", "suites[0].sample", "judge.model",
                                 "target.temperature", "load.concurrency", "cache.ttl_s", "guards", "seed",
                                 "target.serving", "probes"])
def test_a_judging_key_is_judging(key):
    """Held: the keys that change what is measured judge; a `target` replaced whole judges."""
    assert judges(key_parts(key))


# ---------------------------------------------------------------- review labels


@pytest.mark.parametrize("twin", ["Al\u034fice", "Alice\ufe0f", "Alice\u180b", "Al\u115fice", "Al\u3164ice",
                                  "Alice\u2800"])
def test_an_invisible_character_does_not_make_a_second_reviewer(twin):
    """Path: `labels_per_case: 2` (blind double review) with both copies labelled by one person, the second copy
    signed 'Alice' with an invisible default-ignorable character that is not of category Cf (U+034F combining
    grapheme joiner, a variation selector, a Mongolian FVS, a Hangul filler, a blank Braille cell):
    `reviewer_key` removes Cf only, so the two spellings are two reviewers, every case counts as double-labelled
    in agreement, and review completes on one person's judgement."""
    assert reviewer_key(twin) == reviewer_key("Alice")


def test_removing_the_review_sample_after_export_does_not_unblock_the_easy_labels(tmp_path, cli):
    """Path: `review export` draws the sample (review_sample.json), the reviewers label the easy rows only (the
    test_review_cover scenario, NEEDS_REVIEW while the hard rows are blank), then review_sample.json is deleted.
    It is not among the sealed files (record.seal.SEALED_FILES) and `drawn_rows` reads a missing sample as 'none
    drawn', so no row is blank, the self-selected easy labels all count and the gate reads PASS on an approval
    whose true value (0.72) is under min_approval 0.75. `verify` reports nothing edited."""
    run, outcome = _exported(cli, tmp_path)
    hard = sorted(c for c, o in outcome.items() if o != "pass" and c not in ACCEPTABLE)
    easy = set(outcome) - set(hard)
    _fill(cli, run, run / "review_queue.csv", lambda r: ("approve", "ana") if r["case_id"] in easy else None)
    code, out, _ = cli("gate", run, "--json")
    assert code == 3  # the guarantee as it stands with the sample in place
    (run / "review_sample.json").unlink()
    code, out, err = cli("gate", run, "--json")
    assert json.loads(out)["verdict"] != "PASS" and code != 0, err


def test_the_review_sample_in_place_keeps_easy_labels_pending(tmp_path, cli):
    """Held (control for the test above): with review_sample.json in place the easy-rows-only labelling is
    NEEDS_REVIEW."""
    run, outcome = _exported(cli, tmp_path)
    hard = sorted(c for c, o in outcome.items() if o != "pass" and c not in ACCEPTABLE)
    easy = set(outcome) - set(hard)
    _fill(cli, run, run / "review_queue.csv", lambda r: ("approve", "ana") if r["case_id"] in easy else None)
    code, out, _ = cli("gate", run, "--json")
    assert code == 3 and json.loads(out)["verdict"] == "NEEDS_REVIEW"


def _easy_only(cli, tmp_path):
    run, outcome = _exported(cli, tmp_path)
    hard = sorted(c for c, o in outcome.items() if o != "pass" and c not in ACCEPTABLE)
    easy = set(outcome) - set(hard)
    _fill(cli, run, run / "review_queue.csv", lambda r: ("approve", "ana") if r["case_id"] in easy else None)
    return run, set(hard)


@pytest.mark.parametrize("how", ["deleted", "hard rows dropped"])
def test_bless_refuses_a_run_whose_review_sample_lost_its_blank_rows(tmp_path, cli, how):
    """Path: as above, then `gate` (report.json says PASS) and `bless`: release_check's `judged_again` judges the
    run again from its records with `drawn_rows(run)`, which reads the edited (or missing) review_sample.json, so
    `verify` finds the run unchanged and the blessing is granted on labels that cover only the easy rows. The
    sample drawn by `review export` is evidence the verdict depends on; it is not sealed."""
    run, hard = _easy_only(cli, tmp_path)
    path = run / "review_sample.json"
    if how == "deleted":
        path.unlink()
    else:
        sample = json.loads(path.read_text())
        sample["items"] = [i for i in sample["items"] if i["case_id"] not in hard]
        path.write_text(json.dumps(sample))
    cli("gate", run, "--json")
    code, out, err = cli("bless", run, "--as", "prod", "--reason", "shipping", "--by", "ana")
    assert code != 0, out + err


# ---------------------------------------------------------------- the effective rubric's hash


def _effective(cli, config: Path) -> str:
    code, out, err = cli("validate", "-c", config, "--json")
    assert code == 0, err
    return json.loads(out)["effective_rubric_sha256"]


def test_an_edited_suite_changes_the_effective_rubric(tmp_path, cli):
    """Path: a deploy pins the official effective rubric (`validate -c official --json`, then `verify-attestation
    --rubric-sha256 H`). The candidate's owner edits the suite file the official config names, in place: drops the
    cases it fails and rewrites the expected answers of others to what it says. `judging_part` hashes the config
    as written (the suite's *path*), so the run's effective rubric is still H, no override is recorded (no --set,
    no layer), bless/attest pass and verify-attestation --rubric-sha256 H accepts a PASS on another suite."""
    from releasegate.inputs.scaffold import scaffold

    scaffold(tmp_path)
    config = tmp_path / "releasegate.yaml"
    before = _effective(cli, config)
    suite = tmp_path / "suites" / "example.jsonl"
    lines = suite.read_text().splitlines()
    suite.write_text("\n".join(lines[:1]) + "\n")  # one easy case kept of the suite
    assert _effective(cli, config) != before


def test_an_edited_forbidden_file_changes_the_effective_rubric(tmp_path, cli):
    """Held: the rubric's `forbidden: forbidden.yaml` emptied of the rules the model breaks changes the effective
    hash (the rules are inlined in the rubric snapshot)."""
    from releasegate.inputs.scaffold import scaffold

    scaffold(tmp_path)
    config = tmp_path / "releasegate.yaml"
    before = _effective(cli, config)
    forbidden = tmp_path / "rubrics" / "forbidden.yaml"
    forbidden.write_text("rules:\n  - category: pii\n    phrases: [\"a phrase no model writes\"]\n")
    assert _effective(cli, config) != before


# ---------------------------------------------------------------- the flip probe at temperature > 0


def _many_draws(k: int = 10, cases: int = 40):
    """Each case drawn k times at temperature > 0: k - 1 draws say 'yes', one says 'no' (two draws of a case
    disagree with probability 2(k-1)/k^2, 0.18 at k = 10)."""
    from test_stable_answers_hostile import INFO, rec

    records = [rec(i, "yes") for i in range(cases)]
    draws = [rec(i, "no" if d == k - 1 else "yes", draw=d) for i in range(cases) for d in range(1, k)]
    return INFO.model_copy(update={"repeats": {"s": k}, "cases": cases}), records, draws


def test_the_draws_variation_is_what_one_resample_changes_not_what_k_draws_show():
    """Path: `servers` / served variants at temperature > 0 with `generation.repeats: 10`. The flip probe compares
    each case's one answer alone with its (one or few) answers under load, but `draw_variation` is the lower bound
    of cases whose *ten* draws show two different answers: with answers that resample to another one 18% of the
    time, every case varies over ten draws, the allowance is about 0.91 and a contender flipping 60% of its answers
    under load (upper bound 0.74) qualifies. Sampling alone explains at most about what two draws disagree on."""
    from releasegate.gate.load_quality import draw_variation

    info, records, draws = _many_draws()
    assert draw_variation(info, records, draws) <= 0.3


def test_a_contender_flipping_most_answers_under_load_is_not_chosen_at_temperature():
    """Path: as above, through `why_not`: load_flip (0.6, upper 0.74), margin 0.02, variation from ten draws."""
    from releasegate.decision.choice import why_not
    from releasegate.gate.load_quality import draw_variation
    from test_flip_observed import _contender

    info, records, draws = _many_draws()
    variation = draw_variation(info, records, draws)
    assert why_not(_contender(load_flip=(0.6, 0.74), flip_variation=variation)) is not None


def test_two_draws_give_the_allowance_two_draws_show():
    """Held: with two draws a case (k = 2) the allowance is the bound of cases whose two draws differ."""
    from releasegate.gate.load_quality import draw_variation
    from releasegate.stats.intervals import wilson_bounds

    info, records, draws = _many_draws(k=2)
    assert draw_variation(info, records, draws) == pytest.approx(wilson_bounds(40, 40)[0])


# ---------------------------------------------------------------- overrides over the official config


def _layers(tmp_path: Path, mine: dict):
    import yaml

    from releasegate.inputs.composition import compose, parse_override  # noqa: F401
    from releasegate.inputs.judging_keys import layered_over_official

    (tmp_path / "official.yaml").write_text(yaml.safe_dump({
        "target": {"backend": "replay", "responses": "r.jsonl"}, "rubric": "rubric.yaml",
        "suites": [{"path": "s.jsonl", "answer": {"type": "json_fields", "fields": ["intent"]}}]}))
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump({"extends": "official.yaml", **mine}))
    return [o["key"] for o in layered_over_official(compose(tmp_path / "mine.yaml"))]


LOOSE = {"suites": [{"path": "s.jsonl", "answer": {"type": "rouge", "min": 0}}]}


def test_a_layer_naming_the_same_rubric_again_is_still_an_override(tmp_path):
    """Path: mine.yaml `extends: official.yaml`, loosens the answer check (every answer passes) and writes
    `rubric: rubric.yaml` again, the very rubric the official layer names. `layered_over_official` takes the layer
    that last wrote `rubric:` as the official one, so nothing is over it: no override is recorded and `bless`,
    `promote` and `attest` release the loosened run (only a deploy pinning --rubric-sha256 would notice)."""
    assert "suites" in _layers(tmp_path, {"rubric": "rubric.yaml", **LOOSE})


def test_a_layer_over_the_official_config_is_an_override(tmp_path):
    """Held: the same layer without `rubric:` records its keys as overrides."""
    assert _layers(tmp_path, LOOSE) == ["suites"]


# ---------------------------------------------------------------- answer checks and the shipped metrics


@pytest.mark.parametrize("expected,output", [({"escalate": True}, '{"escalate": 1}'),
                                             ({"count": 0}, '{"count": false}'),
                                             ({"flags": [True, False]}, '{"flags": [1, 0]}')])
def test_json_fields_tells_a_boolean_from_a_number(expected, output):
    """Path: an answer check `json_fields` with an expected boolean (or number) field: the scorer compares with
    Python's `!=`, for which `True == 1` and `False == 0`, so a model answering `{"escalate": 1}` (a JSON number
    where the consumer reads a boolean) passes accuracy, and the shipped `releasegate:field_accuracy` metric (the
    same comparison, `got.get(k) == v`) counts it right too."""
    from releasegate.scorers.accuracy import json_fields
    from releasegate.scorers.shipped_metrics import field_accuracy

    assert not json_fields(output, expected, {}).passed
    assert field_accuracy([output], [json.dumps(expected)])["field_accuracy"] == 0.0


def test_field_accuracy_reads_the_first_object_of_a_chatty_answer():
    """Held: the shipped field_accuracy takes the first JSON object of an answer with text around it, and a
    prediction nested past the parser's depth is no JSON (0), never an error."""
    from releasegate.scorers.shipped_metrics import field_accuracy

    ref = json.dumps({"intent": "billing", "priority": "high"})
    assert field_accuracy(['Sure! {"intent": "billing", "priority": "low"} hope it helps'], [ref]) == \
        {"field_accuracy": 0.5}
    assert field_accuracy(["[" * 5000], [ref]) == {"field_accuracy": 0.0}


# ---------------------------------------------------------------- the flip probe's coverage under a weighted sample


def _weighted_flip_run():
    from releasegate.record.records import Stratum
    from test_flip_observed import DECLARED
    from test_stable_answers_hostile import load_rec, rec

    records, load = [], []
    for i in range(100):
        small = i < 90  # stratum a: 90 cases standing for 90 rows; b: 10 cases standing for 10,000 rows
        r = rec(i, "yes", in_flight=1 if small else 2).model_copy(
            update={"stratum": Stratum(name="a" if small else "b", population=90 if small else 10_000)})
        records.append(r)
        load.append(load_rec(i, i, "yes" if small else "no"))
    return DECLARED.model_copy(update={"cases": 100, "load_phase": {"requests": 100, "planned": 100,
                                                                      "concurrency": 8}}), records, load


def test_the_flip_probe_coverage_is_the_populations_under_a_weighted_sample():
    """Path: a stratified `sample:` weighted to its source; the 10 cases of stratum b (99% of the source) were not
    asked alone in the quality phase (observed 2 in flight: e.g. long answers overlapping), and every one of their
    answers changes under load. `load_pairs` counts coverage in cases (90 of 100 = 0.9, the default minimum), so
    the probe speaks on stratum a alone, the weights renormalise over the pairs and load_flip_rate reads 0 with a
    tight bound: PASS, while the source it is weighted to flips 99% of its answers."""
    from conftest import gate_run
    from test_stable_answers_hostile import crit, row, rubric

    info, records, load = _weighted_flip_run()
    report = gate_run(info, records, rubric(crit("load_flip_rate", "<=", 0.1)), None, load)
    assert row(report, "load_flip_rate")["verdict"] != "pass" and report["verdict"] != "PASS"


def test_the_flip_probe_coverage_in_cases_is_held_unweighted():
    """Held: the same run without strata: 90 of 100 cases paired, no flip among them: the probe speaks (the
    declared rule), and a case short of the share leaves it undecided."""
    from conftest import gate_run
    from test_stable_answers_hostile import crit, row, rubric

    info, records, load = _weighted_flip_run()
    plain = [r.model_copy(update={"stratum": None}) for r in records]
    flip = row(gate_run(info, plain, rubric(crit("load_flip_rate", "<=", 0.1)), None, load), "load_flip_rate")
    assert flip["value"] == 0.0 and flip["n"] == 90
    plain[0] = plain[0].model_copy(update={"timing": plain[90].timing})
    flip = row(gate_run(info, plain, rubric(crit("load_flip_rate", "<=", 0.1)), None, load), "load_flip_rate")
    assert flip["value"] is None and flip["verdict"] != "pass"


# ---------------------------------------------------------------- held: allow_overrides, not-judging keys


@pytest.mark.parametrize("pattern,key,allowed", [
    ("suites[*].limit", "suites[0].limit", True),
    ("suites[*].limit", "suites[0].answer", False),
    ("suites[*].limit", "suites[0]", False),
    ("suites[*].limit", "suites", False),
    ("generation.seed", "generation", False),
    ("generation.seed", "generation.seed.x", False),
    ("generation.seed", "generation.temperature", False),
    ("suites[0].limit", "suites[0]Xlimit", False),  # the dot and the brackets are literal, never regex
    ("target.base_url", "target", False),
])
def test_an_allow_overrides_pattern_allows_only_what_it_names(pattern, key, allowed):
    from releasegate.decision.release import override_allowed

    assert override_allowed(key, (pattern,)) is allowed


@pytest.mark.parametrize("key", ["target.base_url", "target.headers.X-Api", "output.dir", "target.adapter"])
def test_the_not_judging_keys_are_exactly_the_documented_ones(key):
    assert not judges(key_parts(key))


def test_the_compiled_shipped_schemas_answer_as_jsonschema_on_mutated_documents(tmp_path):
    """Held: the scaffold's config, rubric and a case, mutated at random paths (values replaced, keys removed or
    added): the compiled test of each shipped schema answers as jsonschema's is_valid (4,000 documents each in
    an ad-hoc run, 300 here)."""
    import copy
    import random

    import yaml

    from releasegate.inputs.scaffold import scaffold
    from releasegate.inputs.schema_check import _fast_check, _validator

    scaffold(tmp_path)
    docs = {"config": yaml.safe_load((tmp_path / "releasegate.yaml").read_text()),
            "rubric": yaml.safe_load((tmp_path / "rubrics" / "example.yaml").read_text()),
            "case": json.loads((tmp_path / "suites" / "example.jsonl").read_text().splitlines()[0])}
    values = [None, True, False, 0, 1, -1, 1.5, 1.0, "", "x", "accuracy", ">=", "json", [], [1], ["x"], {},
              {"x": 1}, {"type": "json"}, {"metric": "accuracy", "op": ">=", "threshold": 0.5}, "1"]
    rng = random.Random(5)

    def paths(x, p=()):
        yield p
        children = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()
        for k, v in children:
            yield from paths(v, (*p, k))

    for name, doc in docs.items():
        fast, slow = _fast_check(name), _validator(name)
        assert fast is not None
        found = [p for p in paths(doc) if p]
        for _ in range(300):
            mutated = copy.deepcopy(doc)
            for _ in range(rng.randint(1, 3)):
                path = rng.choice(found)
                try:
                    parent = mutated
                    for k in path[:-1]:
                        parent = parent[k]
                    roll = rng.random()
                    if roll < 0.6:
                        parent[path[-1]] = copy.deepcopy(rng.choice(values))
                    elif isinstance(parent, dict) and roll < 0.8:
                        del parent[path[-1]]
                    elif isinstance(parent, dict):
                        parent[rng.choice(["x", "type", "min", "fields", "weight", "labels"])] = rng.choice(values)
                except (KeyError, IndexError, TypeError):
                    pass
            assert fast(mutated) == slow.is_valid(mutated), (name, mutated)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
def test_a_deep_document_in_another_json_encoding_is_refused(encoding):
    """Held: bytes json.loads detects as UTF-16 or UTF-32 are counted as deep as they are (TooDeep, never a
    RecursionError inside the parser)."""
    with pytest.raises(TooDeep):
        json_loads(("[" * 3000 + "]" * 3000).encode(encoding))
