"""Big suites: read lazily, validated with a schema compiled once.

`check --limit N` reads, parses and validates only the suite lines up to its Nth case; `validate` reads every line;
both reject a bad line with the very words, file, line and field they always did.
"""

from __future__ import annotations

import json
import os

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import write_jsonl
from releasegate.inputs import schema_check as _loading
from releasegate.inputs import suites as suites_module
from releasegate.inputs.suite_config import SuiteConfig
from releasegate.inputs.suites import load_suites
from releasegate.record.records import RunDir

EXAMPLES = 500 if os.environ.get("CI", "").lower() in ("1", "true", "yes") else 100
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


def case(i, **extra) -> dict:
    return {"id": f"c{i}", "messages": [{"role": "user", "content": f"ticket {i}"}],
            "expected": {"intent": "billing", "priority": "high"}, "tags": {"task": "a" if i < 5 else "b"}, **extra}


def one_line_error(cli, *args) -> str:
    code, out, err = cli(*args)
    assert code == 2, (out, err)
    assert "Traceback" not in out + err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


# -- a limited check reads only what it runs -----------------------------------------------------------------

def bad_line_10(project):
    """12 cases, line 10 not JSON; the replay file answers all of them."""
    lines = [json.dumps(case(i)) for i in range(1, 13)]
    lines[9] = '{"id": "c10", "messages": [oops'
    (project / "suites" / "example.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_jsonl(project / "responses.jsonl",
                [{"id": f"c{i}", "output": '{"intent": "billing", "priority": "high"}'} for i in range(1, 13)])


def test_limited_check_stops_reading_before_a_bad_line_that_validate_names(project, cli):
    bad_line_10(project)
    config = project / "releasegate.yaml"
    code, out, err = cli("check", "-c", config, "--limit", "3", "--run-id", "r", "--no-progress")
    assert code != 2 and "Traceback" not in out + err, err
    assert [r.case_id for r in RunDir(project / "reports" / "r").read_records()] == ["c1", "c2", "c3"]
    msg = one_line_error(cli, "validate", "-c", config)
    assert "example.jsonl:10: not valid JSON" in msg


def test_a_limit_past_the_bad_line_reaches_it(project, cli):
    bad_line_10(project)
    msg = one_line_error(cli, "check", "-c", project / "releasegate.yaml", "--limit", "10", "--no-progress")
    assert "example.jsonl:10: not valid JSON" in msg


def two_suites(tmp_path, first=3, second=4, blank_lines=True):
    suites = []
    for name, ids in (("one", range(first)), ("two", range(100, 100 + second))):
        path = tmp_path / f"{name}.jsonl"
        rows = [json.dumps(case(i)) for i in ids]
        path.write_text(("\n\n" if blank_lines else "\n").join(rows) + "\n", encoding="utf-8")
        suites.append(SuiteConfig(path=path, name=name))
    return tuple(suites)


def test_limit_is_the_first_n_cases_over_the_suites_in_order(tmp_path):
    suites = two_suites(tmp_path)
    everything = load_suites(suites, tmp_path)
    assert [c.id for c in everything] == ["c0", "c1", "c2", "c100", "c101", "c102", "c103"]
    for limit in range(1, len(everything) + 3):
        assert load_suites(suites, tmp_path, limit=limit) == everything[:limit]


def test_a_suite_after_the_limit_is_checked_as_config_only(tmp_path):
    suites = two_suites(tmp_path)
    (tmp_path / "two.jsonl").write_text("{not json\n", encoding="utf-8")
    assert [c.id for c in load_suites(suites, tmp_path, limit=3)] == ["c0", "c1", "c2"]
    (tmp_path / "two.jsonl").unlink()
    with pytest.raises(Exception, match="two.jsonl not found"):
        load_suites(suites, tmp_path, limit=3)


def test_case_ids_stay_unique_across_suites(tmp_path, cli):
    suites = two_suites(tmp_path)
    (tmp_path / "two.jsonl").write_text(json.dumps(case(1)) + "\n", encoding="utf-8")
    with pytest.raises(Exception, match="case id 'c1' appears in suites 'one' and 'two'"):
        load_suites(suites, tmp_path)
    with pytest.raises(Exception, match="case id 'c1' appears in suites 'one' and 'two'"):
        load_suites(suites, tmp_path, limit=4)


def test_validate_finds_duplicates_from_id_hashes_with_the_full_load_words(project, cli, monkeypatch):
    lines = [json.dumps(case(i)) for i in range(1, 13)]
    lines[8] = json.dumps(case(3))  # line 9 repeats c3
    suite = project / "suites" / "example.jsonl"
    suite.write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = project / "releasegate.yaml"
    line = one_line_error(cli, "validate", "-c", config)
    assert "example.jsonl:9" in line and "duplicate case id 'c3'" in line, line
    assert cli("check", "-c", config, "--no-progress")[2].strip() == line  # the words of the full load

    suite.write_text("\n".join(json.dumps(case(i)) for i in range(1, 13)) + "\n", encoding="utf-8")
    monkeypatch.setattr(suites_module, "hash", lambda value: 7, raising=False)  # every id's hash the same
    code, _, err = cli("validate", "-c", config)
    assert code == 0, err  # equal hashes of different ids: looked up exactly, no duplicate


@pytest.mark.parametrize("n", [10, 150_000])  # sorted in Python, and by numpy past 100k ids
def test_id_hashes_find_the_repeated_ones(n):
    hashes = suites_module._IdHashes()
    for i in range(n):
        hashes[f"c{i}"] = "one"
    assert hashes.repeated() == set()
    hashes["c5"] = "two"
    assert hashes.repeated() == {hash("c5")}


def test_limited_check_keeps_a_slice_beyond_its_cases_and_refuses_a_typo(project, cli):
    bad_line_10(project)
    rubric = project / "rubrics" / "example.yaml"
    rubric.write_text(rubric.read_text().replace(
        "criteria:\n", "criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.5, slice: {task: b}}\n"))
    code, out, err = cli("check", "-c", project / "releasegate.yaml", "--limit", "2", "--no-progress")
    assert code != 2, err  # task b only comes at case 5: a smoke run of 2 cases is not refused for it
    rubric.write_text(rubric.read_text().replace("{task: b}", "{task: zz}"))
    msg = one_line_error(cli, "check", "-c", project / "releasegate.yaml", "--limit", "2", "--no-progress")
    assert "slice task=zz matches no case of the suites" in msg and "criteria[0].slice" in msg


# -- the schema is built once ----------------------------------------------------------------------------------

@pytest.fixture
def fresh_validators():
    _loading._validator.cache_clear()
    yield
    _loading._validator.cache_clear()


def test_each_schema_is_built_once_not_per_line(project, cli, monkeypatch, fresh_validators):
    write_jsonl(project / "suites" / "example.jsonl", [case(i) for i in range(200)])
    built, compiled = [], []
    real, real_compiler = jsonschema.Draft202012Validator, _loading._SchemaCompiler

    class Counting:
        def __call__(self, schema, *args, **kwargs):
            built.append(schema.get("$id") or schema.get("$ref"))
            return real(schema, *args, **kwargs)

        def __getattr__(self, name):
            return getattr(real, name)

    def counting_compiler(root, *args):
        compiled.append(root.get("$id"))
        return real_compiler(root, *args)

    monkeypatch.setattr(jsonschema, "Draft202012Validator", Counting())
    monkeypatch.setattr(_loading, "_SchemaCompiler", counting_compiler)
    for _ in range(2):
        code, _, err = cli("validate", "-c", project / "releasegate.yaml")
        assert code == 0, err
    case_id = _loading.schema("case")["$id"]
    # the shipped schemas' tests are written ahead of time (inputs/shipped_checks.py): nothing compiles them at
    # run time; jsonschema itself is built only to explain a rejection (none here)
    assert built.count(case_id) <= 1 and compiled == []
    assert len(built) == len(set(built))


# -- errors read as they always did ---------------------------------------------------------------------------

OK = [json.dumps(case(i)) for i in range(1, 4)]


def lines(*rows, sep="\n") -> bytes:
    return (sep.join(rows) + sep).encode()


ERRORS = {
    "not JSON": (lines(*OK, "{nope"), "s.jsonl:4: not valid JSON: Expecting property name enclosed in double quotes (column 2)"),
    "not an object": (lines(*OK, "[1, 2]"), "s.jsonl:4: each line must be a JSON object"),
    "role": (lines(*OK, json.dumps({"id": "b", "messages": [{"role": "bot", "content": "x"}], "expected": 1})),
             "s.jsonl:4: field 'messages[0].role': 'bot' is not one of ['system', 'user', 'assistant', 'tool']"),
    "unknown key": (lines(*OK, json.dumps({"id": "b", "prompt": "p", "expected": 1, "tgs": {}})),
                    "s.jsonl:4: field 'tgs': unknown key 'tgs': did you mean 'tags'?"),
    "missing": (lines(*OK, json.dumps({"id": "b", "prompt": "p"})), "s.jsonl:4: field 'expected': required key is missing (or give 'expect' or 'turns')"),
    "both forms": (lines(*OK, json.dumps({"id": "b", "prompt": "p", "messages": [{"role": "user", "content": "x"}],
                                          "expected": 1})), "s.jsonl:4: a case needs exactly one of 'messages' or 'prompt'"),
    "tag type": (lines(*OK, json.dumps({"id": "b", "prompt": "p", "expected": 1, "tags": {"k": [1]}})),
                 "s.jsonl:4: field 'tags.k': expected string or number or boolean, got list [1]"),
    "tag name": (lines(*OK, json.dumps({"id": "b", "prompt": "p", "expected": 1, "tags": {"a b": 1}})),
                 "s.jsonl:4: field 'tags': 'a b' does not match '^[A-Za-z0-9_.-]{1,100}$'"),
    "answer regex": (lines(*OK, json.dumps({"id": "b", "prompt": "p", "expected": 1, "answer": {"type": "regex"}})),
                     "s.jsonl:4: field 'answer.pattern': required key is missing"),
    "max_length": (lines(*OK, json.dumps({"id": "b", "prompt": "p", "expected": 1, "format": [{"type": "max_length"}]})),
                   "s.jsonl:4: field 'format[0].max_chars': required key is missing (or give 'max_tokens')"),
    "duplicate": (lines(*OK, OK[1]), "s.jsonl:4: field 'id': duplicate case id 'c2'"),
    "surrogate": (lines(*OK, '{"id": "b", "prompt": "\\ud800", "expected": 1}'),
                  "s.jsonl:4: not valid JSON: 'utf-8' codec can't encode character '\\ud800' in position 23: surrogates not allowed"),
    "deep": (lines(*OK, '{"id": "b", "prompt": "p", "expected": ' + "[" * 100000 + "]" * 100000 + "}"),
             "s.jsonl:4: JSON nested too deeply (more than 64 levels)"),
    "CRLF": (lines(*OK, "", "{nope", sep="\r\n"), "s.jsonl:5: not valid JSON: Expecting property name enclosed in double quotes (column 2)"),
    "CR": (lines(*OK, "{nope", sep="\r"), "s.jsonl:4: not valid JSON: Expecting property name enclosed in double quotes (column 2)"),
    "U+2028": (lines(*OK, json.dumps(case(7, tags={"k": "a\u2028b"})).replace("\\u2028", "\u2028")),
               "s.jsonl:4: not valid JSON: Unterminated string starting at (column 138)"),
    "form feed": (lines(*OK, "\x0c{nope"), "s.jsonl:5: not valid JSON: Expecting property name enclosed in double quotes (column 2)"),
    "BOM": (b"\xef\xbb\xbf" + lines(*OK, "{nope"), "s.jsonl:4: not valid JSON: Expecting property name enclosed in double quotes (column 2)"),
    "not UTF-8": (lines(*OK) + b"\xff\n", "s.jsonl: not UTF-8 text (byte 438) (save it as UTF-8)"),
    "not UTF-8, BOM": (b"\xef\xbb\xbf" + lines(*OK) + b"\xff\n", "s.jsonl: not UTF-8 text (byte 438) (save it as UTF-8)"),
    "not UTF-8 after a bad line": (lines("{nope", *OK) + b"\xc3\n", "s.jsonl: not UTF-8 text (byte 444) (save it as UTF-8)"),
    "truncated UTF-8": (lines(*OK) + b"\xe2\x82", "s.jsonl: not UTF-8 text (byte 438) (save it as UTF-8)"),
    "empty": (b"", "s.jsonl: suite has no cases (add one JSON object per line)"),
    "blank": (b"\n  \n\r\n", "s.jsonl: suite has no cases (add one JSON object per line)"),
}


@pytest.mark.parametrize("chunk", [3, suites_module.CHUNK])
@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_name_the_same_file_line_and_field(tmp_path, cli, monkeypatch, name, chunk):
    data, expected = ERRORS[name]
    monkeypatch.setattr(suites_module, "CHUNK", chunk)  # 3: lines and characters cut across reads
    (tmp_path / "s.jsonl").write_bytes(data)
    (tmp_path / "r.yaml").write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.5}\n")
    (tmp_path / "c.yaml").write_text("target: {backend: replay, responses: x.jsonl}\nsuites: [{path: s.jsonl}]\nrubric: r.yaml\n")
    assert one_line_error(cli, "validate", "-c", tmp_path / "c.yaml") == f"error: {tmp_path / expected}"


# -- the compiled schema and the lazy reader agree with what they replace ------------------------------------

TERMINATORS = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@PROPERTY
@given(parts=st.lists(st.sampled_from(TERMINATORS) | st.text(max_size=8), max_size=30),
       chunk=st.integers(1, 9), bom=st.booleans())
def test_lines_are_those_of_splitlines(tmp_path, monkeypatch, parts, chunk, bom):
    text = "".join(parts)
    path = tmp_path / "s.jsonl"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8", "surrogatepass"))
    monkeypatch.setattr(suites_module, "CHUNK", chunk)
    try:
        expected = list(enumerate(path.read_text(encoding="utf-8-sig").splitlines(), start=1))
    except UnicodeDecodeError:
        with pytest.raises(Exception, match="not UTF-8 text"):
            list(suites_module._lines(path))
        return
    assert list(suites_module._lines(path)) == expected


CASE_KEYS = ["id", "messages", "role", "content", "prompt", "expected", "tags", "answer", "format", "type",
             "pattern", "schema", "fields", "labels", "tolerance", "relative", "max_chars", "max_tokens"]
WORDS = ["user", "system", "bot", "regex", "json_schema", "max_length", "exact", "json_fields", "a b", "c1", "x" * 201,
         "(", "numeric", "label", "json", ""]
SCALARS = (st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=True) | st.sampled_from(WORDS)
           | st.text(max_size=5))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.sampled_from(CASE_KEYS) | st.text(max_size=4), inner, max_size=4), max_leaves=12)
VALID = [
    case(1),
    {"id": "p", "prompt": "x", "expected": "y", "answer": {"type": "regex", "pattern": "y"},
     "format": [{"type": "json_schema", "schema": {"type": "object"}}, {"type": "max_length", "max_tokens": 3}]},
    {"id": "q", "prompt": "x", "expected": 1.5, "answer": {"type": "numeric", "tolerance": 0.1, "relative": True},
     "tags": {"risk": "high", "n": 2, "ok": True}},
]


@st.composite
def mutated_case(draw):
    doc = json.loads(json.dumps(draw(st.sampled_from(VALID))))
    for _ in range(draw(st.integers(1, 3))):
        node, key = doc, None
        while True:  # walk down to a random place, then replace, add or drop a value there
            keys = list(node) if isinstance(node, dict) else list(range(len(node))) if isinstance(node, list) else []
            if not keys or draw(st.booleans()):
                break
            key = draw(st.sampled_from(keys))
            if not isinstance(node[key], (dict, list)):
                break
            node = node[key]
        if isinstance(node, dict):
            action = draw(st.sampled_from(["set", "add", "drop"]))
            if action == "drop" and node:
                node.pop(draw(st.sampled_from(list(node))))
            else:
                name = key if action == "set" and key in node else draw(st.sampled_from(CASE_KEYS))
                node[name] = draw(VALUES)
        elif isinstance(node, list) and node:
            node[draw(st.integers(0, len(node) - 1))] = draw(VALUES)
    return doc


@PROPERTY
@given(doc=mutated_case() | VALUES)
def test_compiled_case_schema_agrees_with_jsonschema(doc):
    assert _loading._fast_check("case")(doc) == _loading._validator("case").is_valid(doc)


@PROPERTY
@given(doc=st.dictionaries(st.sampled_from(["name", "criteria", "forbidden", "review", "metric", "op", "threshold",
                                             "slice", "confidence", "min_samples"]), VALUES, max_size=5))
def test_compiled_rubric_schema_agrees_with_jsonschema(doc):
    fast = _loading._fast_check("rubric")
    if fast is not None:
        assert fast(doc) == _loading._validator("rubric").is_valid(doc)
