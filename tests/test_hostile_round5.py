"""Round 5 of the hostile review: the surfaces that landed last (in-flight counts in timing, the effective rubric
binding, the review sample and its labels, the cache probe's per-case fields, the CPU-wait reader, the suites'
fast paths, the shipped metrics). Each test is one attack, named after what must hold: bad input from a file is a
one-line error naming it, exit 2, never an internal error (70), a hang or a wrong verdict. Attacks that held are
kept as the regression corpus."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import time
from pathlib import Path

import pytest

from conftest import write_jsonl
from releasegate.record.sealed_composition import composition_sha256
from test_bless import bless, check, passing_project
from test_release_attack import _shipped, _signed, _statement, _verify
from test_review import read_rows, review_project, run_dir, write_rows  # noqa: F401  (fixtures)


def _reseal(run: Path, name: str, data: bytes) -> None:
    """`name` rewritten and its seal rewritten to match: whoever can write the run can do both."""
    (run / name).write_bytes(data)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["sealed"]["files"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    (run / "manifest.json").write_text(json.dumps(manifest))


def _recompose(run: Path, composition: dict) -> None:
    """The manifest's composition replaced, and the digest the sealed run.json keeps of it with it (`_reseal`)."""
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["composition"] = composition
    (run / "manifest.json").write_text(json.dumps(manifest))
    info = {**json.loads((run / "run.json").read_text()), "composition_sha256": composition_sha256(manifest)}
    _reseal(run, "run.json", json.dumps(info).encode())


def _one_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "internal error" not in err and "Traceback" not in err, err
    return lines[0]


# ---------------------------------------------------------------- 1. in-flight counts in timing


def _with_in_flight(run: Path, raw: str) -> None:
    lines = (run / "records.jsonl").read_text().splitlines()
    out = [ln.replace('"retried_errors":[]', f'"retried_errors":[],"in_flight_at_send":{raw},"in_flight_most":{raw}')
           for ln in lines]
    assert out != lines
    _reseal(run, "records.jsonl", ("\n".join(out) + "\n").encode())


@pytest.mark.parametrize("raw", ["0", "-5", "true", '"3"', "2.5", "NaN", "1e999", "[1]", '{"a":1}'])
def test_an_in_flight_count_that_is_no_count_is_refused_naming_the_field(project, cli, raw):
    passing_project(project)
    base = check(cli, project, "base")
    run = check(cli, project, "r")
    _with_in_flight(run, raw)
    for args in (("gate", run), ("compare", base, run)):
        code, _, err = cli(*args)
        line = _one_line(err)
        assert code == 2 and "records.jsonl:1" in line and "timing.in_flight_at_send" in line, err


def test_observed_in_flight_counts_read_back(project, cli):
    passing_project(project)
    run = check(cli, project, "r")
    _with_in_flight(run, "3")
    assert cli("gate", run)[0] == 0


# ---------------------------------------------------------------- 2. the effective rubric binding


def test_an_override_pattern_of_many_stars_matches_in_linear_time():
    from releasegate.decision.release import override_allowed

    started = time.perf_counter()
    assert not override_allowed("a" * 5000, ("*a" * 250 + "*b",))  # a regex took minutes at 40 characters
    assert time.perf_counter() - started < 1.0


def test_an_override_pattern_matches_as_the_regex_of_its_stars_did():
    from releasegate.decision.release import override_allowed

    rng = random.Random(5)
    for _ in range(20000):
        pattern = "".join(rng.choice("ab*.[") for _ in range(rng.randrange(7)))
        key = "".join(rng.choice("ab.[") for _ in range(rng.randrange(8)))
        regex = ".*".join(re.escape(p) for p in pattern.split("*"))
        assert override_allowed(key, (pattern,)) == (re.fullmatch(regex, key) is not None), (pattern, key)
    assert override_allowed("generation.seed", ("generation.*",))
    assert not override_allowed("suites[0].limit", ("generation.*",))


def test_a_hostile_allow_overrides_pattern_never_hangs_bless(project, cli):
    passing_project(project)
    run = check(cli, project, "r")
    _recompose(run, {"extends": [], "set": [], "over_official": [{"key": "a" * 60, "by": "--set"}]})
    rubric = (run / "rubric.yaml").read_text() + "release:\n  allow_overrides: ['" + "*a" * 14 + "*b']\n"
    _reseal(run, "rubric.yaml", rubric.encode())
    started = time.perf_counter()
    code, _, err = bless(cli, run)
    assert code == 1 and "overrides a judging key" in err and time.perf_counter() - started < 30


def test_an_override_key_indexed_by_a_unicode_digit_is_an_override_not_a_crash(project, cli):
    passing_project(project)
    run = check(cli, project, "r")
    _recompose(run, {"extends": [], "set": [], "over_official": [{"key": "suites[\u00b2].limit", "by": "--set"}]})
    code, _, err = bless(cli, run)
    assert code == 1 and "suites[\u00b2].limit" in err and "internal error" not in err


@pytest.mark.parametrize("composition", [{"set": 5}, {"over_official": "x"}, {"over_official": [{"key": 1}]},
                                         {"extends": 7}, "composed"])
def test_a_composition_of_another_shape_is_refused_naming_it(project, cli, composition):
    passing_project(project)
    run = check(cli, project, "r")
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["composition"] = composition
    (run / "manifest.json").write_text(json.dumps(manifest))
    code, _, err = bless(cli, run)
    line = _one_line(err)
    assert code == 2 and "manifest.json" in line and "composition" in line


@pytest.mark.parametrize("part", [{"inputs": 5}, {"inputs": ["x"]}, {"target": "x"}, {"composition": {"set": 5}}])
def test_one_run_with_a_manifest_of_another_shape_never_breaks_gate_nor_history_of_the_others(project, cli, part):
    passing_project(project)
    good = check(cli, project, "good")
    bad = check(cli, project, "bad")
    manifest = json.loads((bad / "manifest.json").read_text())
    (bad / "manifest.json").write_text(json.dumps({**manifest, **part}))
    assert cli("history", "--reports", project / "reports")[0] == 0
    code, _, err = cli("gate", good)
    assert code == 0, err


def test_attested_weights_of_every_wrong_shape_are_refused(tmp_path, cli):
    files = _shipped(tmp_path)
    for weights in ("x", [], [1], [{"name": 1, "sha256": "0" * 64}], [{"name": "a"}], {"name": "a"}, None):
        statement = _statement(files)
        statement["predicate"]["weights"] = weights
        envelope, key = _signed(tmp_path, cli, statement)
        code, err = _verify(cli, envelope, key, *files.values())
        assert code == 1 and "which of its subjects are the weights" in err and "internal error" not in err


# ---------------------------------------------------------------- 3. the review sample and its labels


@pytest.mark.parametrize("kind", ["fifo", "directory", "device", "dangling"])
def test_a_review_sample_that_is_no_file_is_refused_never_read_as_not_drawn(project, cli, kind):
    passing_project(project)
    run = check(cli, project, "r")
    path = run / "review_sample.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "device":
        path.symlink_to("/dev/zero")
    else:
        path.symlink_to(run / "gone.json")
    for args in (("gate", run), ("review", "status", run)):
        code, _, err = cli(*args)
        line = _one_line(err)
        assert code == 2 and "review_sample.json" in line, err


@pytest.mark.parametrize("text", ['{"run_id": "r", "policy": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + "}",
                                  "[1, 2]", '{"run_id": "r", "created_at": "x", "policy": {}, "cases": 1e999, '
                                            '"required": [], "items": []}',
                                  '{"run_id": "r", "created_at": "x", "policy": {}, "cases": 3, "required": [], '
                                  '"items": [{"case_id": 5}]}'])
def test_a_review_sample_of_another_shape_is_one_line_naming_it(project, cli, text):
    passing_project(project)
    run = check(cli, project, "r")
    (run / "review_sample.json").write_text(text)
    code, _, err = cli("gate", run)
    line = _one_line(err)
    assert code == 2 and "review_sample.json" in line and "unreadable review sample" in line


@pytest.mark.parametrize("name", ["\u200b", "\u200b\ufeff\u2060\u200e", "x" * 100_000])
def test_a_reviewer_name_of_format_characters_or_megabytes_is_refused(run_dir, cli, name):  # noqa: F811
    cli("review", "export", run_dir)
    rows = read_rows(run_dir / "review_queue.csv")
    rows[0].update(label="approve", reason="ok", reviewer=name)
    write_rows(run_dir.parent / "filled.csv", rows[:1])
    code, _, err = cli("review", "import", run_dir, run_dir.parent / "filled.csv")
    assert code == 2 and "internal error" not in err
    assert "without a reviewer" in err or "longer than 200" in err
    assert not (run_dir / "reviews.jsonl").exists() or name not in (run_dir / "reviews.jsonl").read_text()


# ---------------------------------------------------------------- 4. the cache probe's rows read back


_ROW = {"threshold": None, "n": 3, "hits": 1, "wrong_hits": 1, "hit_rate": 0.33, "wrong_hit_rate": 0.33,
        "wrong_hit_upper": None}
_WRONG = {"case_id": "example-001", "cached_case_id": "example-002", "similarity": 0.9, "within_group": False}


@pytest.mark.parametrize("extra", [{"harmful_share": "x"}, {"harmful_hits": [1]}, {"hittable": "3"},
                                   {"hittable": -5}, {"effective_hits": "3"}, {"hit_rate": "x"},
                                   {"unknown_hits": "a"}, {"wrong_cases": "abc"}, {"wrong_cases": [1]},
                                   {"wrong_cases": [{**_WRONG, "similarity": "x"}]}, {"wrong": [{"question": 5}]},
                                   {"stale_cases": 5}, {"tokens_saved": "x"}, {"cost_saved_usd": "x"}])
def test_a_cache_probe_row_of_another_shape_is_refused_naming_the_field(project, cli, extra):
    passing_project(project)
    run = check(cli, project, "r")
    info = json.loads((run / "run.json").read_text())
    info["response_cache_probe"] = {"mode": "exact", "threshold": None, "rows": [{**_ROW, **extra}]}
    _reseal(run, "run.json", json.dumps(info).encode())
    code, _, err = cli("gate", run)
    line = _one_line(err)
    assert code == 2 and "run.json" in line and f"response_cache_probe.rows.0.{next(iter(extra))}" in line


def test_a_cache_probe_row_as_the_probe_writes_it_reads_back(project, cli):
    passing_project(project)
    run = check(cli, project, "r")
    info = json.loads((run / "run.json").read_text())
    info["response_cache_probe"] = {"mode": "exact", "threshold": None, "rows": [{
        **_ROW, "hittable": 1, "right_hits": 0, "harmful_hits": 1, "unknown_hits": 0, "harmful_share": 1.0,
        "effective_hits": 1.0, "tokens_saved": {"input": 3, "output": 4}, "cost_saved_usd": None,
        "stale_cases": [], "wrong_cases": [{**_WRONG, "harmful": True, "wrong_neighbours": 1, "donors": 1}],
        "wrong": [{**_WRONG, "question": "q", "cached_question": "q2", "answer": None, "cached_answer": "a"}]}]}
    _reseal(run, "run.json", json.dumps(info).encode())
    code, _, err = cli("gate", run)
    assert code == 0, err


# ---------------------------------------------------------------- 5. the CPU-wait reader


def test_a_schedstat_missing_malformed_or_of_zeros_is_not_used(monkeypatch, tmp_path):
    from releasegate.backends import _starvation

    monkeypatch.setattr(_starvation, "_SCHEDSTAT", str(tmp_path / "missing"))
    assert not _starvation._schedstat_works()
    for text in (b"", b"x y z", b"1 2", b"1 2 0", b"1 2 -", b"\xff\xfe 1"):
        (tmp_path / "schedstat").write_bytes(text)
        monkeypatch.setattr(_starvation, "_SCHEDSTAT", str(tmp_path / "schedstat"))
        assert not _starvation._schedstat_works()
    assert _starvation.cpu_waits(4, "cuda") is None  # no sound source: no reading, never a guess


def test_a_task_list_that_cannot_be_read_reads_the_calling_thread(monkeypatch):
    from releasegate.backends import _starvation

    def refused(path):
        raise PermissionError(13, "hidepid", path)

    monkeypatch.setattr(_starvation.os, "listdir", refused)
    assert _starvation._task_ids() == [__import__("threading").get_native_id()]
    reader = _starvation._RunQueue(every_thread=True)
    monkeypatch.setattr(_starvation.os, "pread", lambda fd, n, at: b"1 not-a-number 3")
    assert reader() == {}  # a malformed line is no reading


# ---------------------------------------------------------------- 6. the suites' fast paths


@pytest.mark.parametrize("schema", [{"not": {"uniqueItems": True}}, {"oneOf": [{"uniqueItems": True}, {"maxItems": 0}]},
                                    {"if": {"uniqueItems": True}, "then": {"maxItems": 9}, "else": {"minItems": 99}},
                                    {"type": "object", "properties": {"ids": {"not": {"uniqueItems": True}}}}])
def test_the_compiled_schema_answers_as_jsonschema_under_not_oneof_and_if(schema):
    import jsonschema

    from releasegate.inputs.schema_check import schema_errors

    for value in ([1], [None], [1, 1], [-0.0, 0], [[1], [1]], [{"a": 1}], {"ids": [1]}, {"ids": [2, 2]}, [True, 1],
                  ["a", "a"], []):
        expected = jsonschema.Draft202012Validator(schema).is_valid(value)
        assert (schema_errors(value, schema) is None) == expected, (schema, value)


def test_a_random_corpus_of_valid_schemas_answers_as_jsonschema():
    import jsonschema

    from releasegate.inputs.schema_check import schema_errors
    from releasegate.inputs.schema_compiler import SchemaCompiler, Unsupported

    rng = random.Random(11)
    leaves = [0, 1, -1, 2.5, 1.0, "", "a", "ab", "\U0001F600", None, True, False, float("nan")]

    def value(depth=0):
        kind = rng.randrange(5 if depth < 2 else 3)
        if kind == 3:
            return [value(depth + 1) for _ in range(rng.randrange(3))]
        if kind == 4:
            return {rng.choice("abcd"): value(depth + 1) for _ in range(rng.randrange(3))}
        return rng.choice(leaves)

    def schema(depth=0):
        if depth > 2 or rng.random() < 0.2:
            return rng.choice([True, False, {}, {"type": rng.choice(["string", "integer", "object", "array"])}])
        kind = rng.choice(["object", "string", "not", "oneOf", "uniqueItems", "enum"])
        if kind == "object":
            out: dict = {"type": "object", "properties": {k: schema(depth + 1) for k in rng.sample("abc", 2)}}
            out["required"] = rng.sample("abcd", rng.randrange(3))
            out["additionalProperties"] = rng.choice([True, False, schema(depth + 1)])
            return out
        if kind == "string":
            return {"type": "string", "maxLength": rng.choice([0, 1, 2.0]), "enum": rng.choice([["a", "ab"], ["a", 1]])}
        if kind == "not":
            return {"not": schema(depth + 1)}
        if kind == "oneOf":
            return {"oneOf": [schema(depth + 1), schema(depth + 1)]}
        if kind == "uniqueItems":
            return {"uniqueItems": True}
        return {"enum": rng.choice([["a", 1], [1, True], [None], [[1]]])}

    for _ in range(600):
        s = schema()
        jsonschema.Draft202012Validator.check_schema(s)
        for _ in range(6):
            v = value()
            expected = jsonschema.Draft202012Validator(s).is_valid(v)
            assert (schema_errors(v, s) is None) == expected, (s, v)
            try:
                fast = SchemaCompiler(s).compile(s)
            except Unsupported:
                continue
            assert fast(v) == expected, (s, v)


@pytest.mark.parametrize("name", ["none", "true", "false", "None", "True", "self", "lipsum", "text"])
def test_a_one_column_template_renders_as_jinja_does_whatever_the_column_is_called(name):
    from releasegate.inputs.sources import _Field
    from releasegate.safe_template import compile_template
    from releasegate.safe_template import render as render_template

    template = "{{ " + name + " }}"
    fast = _Field.of(template)
    jinja = render_template(compile_template(template), {name: "the ticket", "row": {name: "the ticket"}})
    if fast is not None:  # the fast path reads the column only where Jinja does
        assert jinja == "the ticket"


def test_a_shallow_text_and_a_deep_one_are_told_apart():
    from releasegate.border.structured import TooDeep, json_loads

    assert json_loads('{"a": "' + "[" * 500 + '"}') == {"a": "[" * 500}  # brackets in a string count for nothing
    assert json_loads("[" * 64 + "]" * 64) is not None
    with pytest.raises(TooDeep):
        json_loads("[" * 65 + "]" * 65)


# ---------------------------------------------------------------- 7. shipped metrics without evaluate


def _field_accuracy_project(project: Path, expected: list) -> None:
    passing_project(project)
    rows = [json.loads(ln) for ln in (project / "suites" / "example.jsonl").read_text().splitlines()]
    for row, value in zip(rows, expected, strict=False):
        row["expected"] = value
    write_jsonl(project / "suites" / "example.jsonl", rows)
    config = project / "releasegate.yaml"
    text = config.read_text().replace("answer: {type: json_fields, fields: [intent, priority]}", "answer: {type: exact}")
    config.write_text(text.replace("    format:\n      - {type: json}\n", ""))
    (project / "rubrics" / "example.yaml").write_text(
        "name: fa\nevaluate:\n  - {name: fa, module: 'releasegate:field_accuracy'}\n"
        "criteria:\n  - {metric: fa, op: '>=', threshold: 0.5}\n")


@pytest.mark.parametrize("expected", ["billing", [1, 2], 5, "[" * 200 + "]" * 200])
def test_field_accuracy_on_an_expected_answer_that_is_no_object_names_the_case(project, cli, expected):
    _field_accuracy_project(project, [expected])
    code, _, err = cli("check", "-c", project / "releasegate.yaml", "--run-id", "fa", "--no-progress")
    line = _one_line(err)
    assert code == 2 and "evaluate.fa" in line and "example-001" in line
    assert (project / "reports" / "fa" / "records.jsonl").is_file()  # what was recorded is kept


def test_shipped_metrics_take_deep_huge_and_surrogate_outputs():
    from releasegate.scorers.shipped_metrics import bleu, chrf, field_accuracy, rouge

    assert field_accuracy(["{" * 100_000], ['{"a": 1}']) == {"field_accuracy": 0.0}
    assert field_accuracy(['{"a": "\ud800"}'], ['{"a": "\ud800"}']) == {"field_accuracy": 1.0}
    assert field_accuracy(['x {"a": 1} y'], ['{"a": 1.0}']) == {"field_accuracy": 1.0}
    for metric in (rouge, bleu, chrf):
        assert metric(["\ud800 x " * 1000], ["\ud800 y"]) is not None


def test_an_embeddings_server_of_two_points_costs_checks_linear_in_the_cases():
    from releasegate.gate.cache_probe import ProbeCase, ProbeSettings, degenerate, simulate_all

    n, calls = 600, [0]

    def check(donor: int, i: int) -> bool:
        calls[0] += 1
        return True

    cases = [ProbeCase(case_id=str(i), question=f"q{i}", output="a", expected="a", group=str(i % 2)) for i in range(n)]
    vectors = [[1.0, 0.0] if i % 2 else [0.0, 1.0] for i in range(n)]
    assert degenerate(vectors) is None  # two points are not refused
    simulate_all(cases, check, ProbeSettings(), [0.9], vectors)
    assert calls[0] <= 50 * n


def test_questions_at_one_point_with_distinct_answers_leave_the_probe_undecided_not_quadratic():
    """Past ANSWERS_JUDGED distinct answers among a case's neighbours the rest are not checked: the case is unknown
    (no bound, so no criterion can pass on it) unless a checked answer already harms it."""
    from releasegate.gate.cache_probe import ANSWERS_JUDGED, ProbeCase, ProbeSettings, simulate_all

    n, calls = 2 * ANSWERS_JUDGED + 40, [0]

    def check(donor: int, i: int) -> bool:
        calls[0] += 1
        return True

    cases = [ProbeCase(case_id=str(i), question=f"q{i}", output=f"answer {i}") for i in range(n)]
    row = simulate_all(cases, check, ProbeSettings(), [0.9], [[1.0, 0.0]] * (n - 1) + [[0.9, 0.1]])[0]
    assert calls[0] <= (ANSWERS_JUDGED + 1) * n
    assert row["hittable"] == n and row["unknown_hits"] == n and row["harmful_upper"] is None
    assert row["right_hits"] == 0

    def last_answer_fails(donor: int, i: int) -> bool:  # the most similar answers come first: one of them harms
        return donor != 0

    row = simulate_all(cases, last_answer_fails, ProbeSettings(), [0.9], [[1.0, 0.0]] * (n - 1) + [[0.9, 0.1]])[0]
    assert row["harmful_hits"] >= n - 2 and row["wrong_hits"] >= n - 2
