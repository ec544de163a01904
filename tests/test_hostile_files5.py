"""Hostile files against the newest on-disk surfaces: a user's JSON Schema whose `$ref` resolves nowhere or loops
back to where it stands (format checks, tool parameters), records whose inputs the gate holds packed, the
compiled-template cache, the composition digest and the journal a report was judged on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conftest import write_jsonl
from releasegate.errors import InputError
from releasegate.inputs.suite_config import SuiteConfig
from releasegate.inputs.suites import load_suite

RUBRIC = {"name": "r", "review": {"required_domains": []},
          "criteria": [{"metric": "accuracy", "op": ">=", "threshold": 0.5}]}


def _format_project(root: Path, schema: object) -> Path:
    """A replay project whose suite checks its outputs against `schema` (an exact answer that meets it)."""
    (root / "suites").mkdir(parents=True, exist_ok=True)
    write_jsonl(root / "suites" / "s.jsonl", [{"id": "c1", "prompt": "p", "expected": '{"a": "x"}'}])
    write_jsonl(root / "responses.jsonl", [{"id": "c1", "output": '{"a": "x"}'}])
    (root / "rubric.yaml").write_text(yaml.safe_dump(RUBRIC))
    config = root / "releasegate.yaml"
    config.write_text(yaml.safe_dump({
        "target": {"backend": "replay", "responses": "responses.jsonl"}, "generation": {"max_new_tokens": 16},
        "suites": [{"path": "suites/s.jsonl", "answer": {"type": "exact"},
                    "format": [{"type": "json_schema", "schema": schema}]}],
        "rubric": "rubric.yaml", "output": {"dir": "reports"}}, sort_keys=False))
    return config


LOOPS = [{"$ref": "#"}, {"allOf": [{"$ref": "#/$defs/a"}], "$defs": {"a": {"anyOf": [{"$ref": "#"}]}}},
         {"type": "object", "properties": {"a": {"$ref": "#/properties/a"}}},
         {"$defs": {"a": {"not": {"$ref": "#/$defs/b"}}, "b": {"if": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"}]
NOWHERE = [{"$ref": "#/$defs/nope"}, {"$ref": "#nope"}, {"properties": {"a": {"$ref": "https://example.com/x.json"}}},
           {"$defs": {"a": {"$id": "https://example.com/a.json", "$ref": "#/$defs/b"}}, "$ref": "#/$defs/a"}]


@pytest.mark.parametrize("schema", NOWHERE + LOOPS, ids=[f"nowhere{i}" for i in range(4)] + [f"loop{i}" for i in range(4)])
def test_a_format_schema_whose_ref_resolves_nowhere_or_loops_is_one_line_exit_2_naming_it(tmp_path, cli, schema):
    """A format check's schema with a `$ref` to nothing (a pointer, an anchor, a schema no one fetches) made
    `validate` and `check` crash (exit 70) where the expected answer is checked against it; one that leads back to
    itself without reaching into the value recursed until Python stopped it (exit 70 too; the scorer then failed
    every output as 'nested too deeply'). Both are the schema's fault: refused where it is written."""
    config = _format_project(tmp_path, schema)
    for command in (("validate", "-c", config), ("check", "-c", config, "--no-progress")):
        code, _, err = cli(*command)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1, err
        assert "releasegate.yaml" in lines[0] and "suites[0].format[0].schema" in lines[0] and "$ref" in lines[0], err
    assert not (tmp_path / "reports").exists() or not any((tmp_path / "reports").iterdir())


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": {"type": "string"}, "child": {"$ref": "#"}}},  # recursion into the value
    {"$defs": {"a": {"$id": "https://example.com/a.json", "$defs": {"s": {"type": "string"}},
                     "properties": {"a": {"$ref": "#/$defs/s"}}}}, "$ref": "https://example.com/a.json"},
    {"$ref": "#/$defs/o", "$defs": {"o": {"type": "object", "additionalProperties": {"$ref": "#/$defs/o/properties/a"},
                                          "properties": {"a": {"type": "string"}}}}},
    {"$dynamicAnchor": "node", "type": "object", "properties": {"a": {"type": "string"}}},
])
def test_a_format_schema_that_refers_into_the_value_or_a_nested_id_still_validates(tmp_path, cli, schema):
    config = _format_project(tmp_path, schema)
    code, _, err = cli("validate", "-c", config)
    assert code == 0, err


@pytest.mark.parametrize("params", LOOPS[:2])
def test_a_tool_whose_parameters_loop_is_refused_at_its_line(tmp_path, params):
    """The same loop in a tool's parameters failed every call of it ('nested too deeply'), never said why."""
    tool = {"type": "function", "function": {"name": "f", "parameters": params}}
    path = tmp_path / "s.jsonl"
    write_jsonl(path, [{"id": "ok", "prompt": "hi", "expected": "x"},
                       {"id": "c", "messages": [{"role": "user", "content": "hi"}], "expect": {"call": "optional"},
                        "tools": [tool]}])
    with pytest.raises(InputError) as err:
        load_suite(SuiteConfig(path=path, name="s"), tmp_path)
    assert err.value.line == 2 and (err.value.field or "").startswith("tools") and "$ref" in str(err.value)




# -- the compiled schema tests against jsonschema, differentially ---------------------------------------------------

_VALUES = [0, 1, 1.0, -0.0, 2, 2.5, 0.1, 0.3, -1, 10**20, 1e308, 5e-324, True, False, None, "", "a", "ab", "A", "1",
           "\x00", "\U0001d11e", "\U0001d11e\U0001d11e", "é"]
_TYPES = ["string", "integer", "number", "boolean", "null", "object", "array"]
_NAMES = ["a", "b", "c", "x1", "\U0001d11e", ""]


def _value(rng, depth: int = 0):
    roll = rng.random()
    if depth > 3 or roll < 0.5:
        return rng.choice(_VALUES)
    if roll < 0.75:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(_NAMES): _value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def _schema(rng, depth: int = 0):  # noqa: C901 (one branch per keyword)
    if depth > 3 or rng.random() < 0.2:
        return rng.choice([True, False, {}, {"type": rng.choice(_TYPES)}])
    out: dict = {}
    for _ in range(rng.randint(1, 3)):
        key = rng.choice(["type", "types", "properties", "additionalProperties", "required", "patternProperties", "enum",
                          "const", "size", "pattern", "items", "of", "not", "uniqueItems", "bound", "multipleOf", "if",
                          "propertyNames", "format", "$ref", "unknown"])
        if key == "type":
            out["type"] = rng.choice(_TYPES)
        elif key == "types":
            out["type"] = rng.sample(_TYPES, rng.randint(1, 3))
        elif key == "properties":
            out["properties"] = {rng.choice(_NAMES[:4]): _schema(rng, depth + 1) for _ in range(rng.randint(0, 2))}
        elif key == "additionalProperties":
            out[key] = rng.choice([False, True, _schema(rng, depth + 1)])
        elif key == "required":
            out[key] = rng.sample(_NAMES[:4], rng.randint(0, 2))
        elif key == "patternProperties":
            out[key] = {rng.choice(["^a", "1$", "."]): _schema(rng, depth + 1)}
        elif key in ("enum", "const"):  # 1, 1.0 and True; a string set; containers equal by value
            values = [rng.choice(_VALUES + [[1], [True], [1.0], {"a": 1}, {"a": 1.0}]) for _ in range(rng.randint(1, 3))]
            values = [rng.choice(["a", "b", "\U0001d11e", ""]) for _ in values] if rng.random() < 0.5 else values
            out[key] = values if key == "enum" else values[0]
        elif key == "size":
            out[rng.choice(["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"])] = \
                rng.choice([0, 1, 2, 1.0, 1.5])
        elif key == "pattern":
            out[key] = rng.choice(["^a", "b", "^.$", "^..$", "\\d", "^$"])
        elif key == "items":
            out[key] = _schema(rng, depth + 1)
        elif key == "of":
            out[rng.choice(["allOf", "anyOf", "oneOf"])] = [_schema(rng, depth + 1) for _ in range(rng.randint(1, 3))]
        elif key == "not":
            out[key] = _schema(rng, depth + 1)
        elif key == "uniqueItems":
            out[key] = rng.choice([True, False])
        elif key == "bound":
            out[rng.choice(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"])] = \
                rng.choice([0, 1, 1.0, 0.5, -0.0, 10**20, 1e308])
        elif key == "multipleOf":
            out[key] = rng.choice([0.1, 0.5, 2, 1.0, 1e-5])
        elif key == "if":
            out["if"] = _schema(rng, depth + 1)
            out.update({k: _schema(rng, depth + 1) for k in ("then", "else") if rng.random() < 0.7})
        elif key == "propertyNames":
            out[key] = rng.choice([{"maxLength": 1}, {"pattern": "^[a-c]$"}, {"enum": ["a", "b"]}, False])
        elif key == "format":
            out[key] = rng.choice(["email", "date", "ipv4", "regex"])
        elif key == "$ref":  # a loop in place among them: refused before anything is checked
            out["$ref"] = rng.choice(["#/$defs/d", "#"])
            out.setdefault("$defs", {"d": _schema(rng, depth + 1)})
        else:
            out["x-unknown"] = 1
    return out


def test_a_users_schema_compiled_at_run_time_answers_as_jsonschema_does():
    """Random schemas (every keyword the compiler reads, and some it leaves to jsonschema) and random values
    (1 vs 1.0 vs True, -0.0, big and tiny numbers, astral characters, NUL): `schema_errors` says None exactly when
    jsonschema's `is_valid` says True. A schema `check_refs` refuses never reaches it. Seeded, bounded."""
    import random

    import jsonschema

    from releasegate.inputs.schema_check import schema_errors
    from releasegate.inputs.schema_refs import check_refs

    rng, compared = random.Random(5), 0
    for _ in range(1500):
        schema = _schema(rng)
        if not isinstance(schema, dict):
            continue
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
            check_refs(schema, {})
        except (jsonschema.SchemaError, InputError):
            continue
        validator = jsonschema.Draft202012Validator(schema)
        for _ in range(12):
            value = _value(rng)
            assert (schema_errors(value, schema) is None) == validator.is_valid(value), (schema, value)
            compared += 1
    assert compared > 10000


def _mutated(rng, doc):
    import copy

    doc = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 3)):
        places, stack = [], [(doc, None, None)]
        while stack:
            node, parent, key = stack.pop()
            if parent is not None:
                places.append((parent, key))
            items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
            stack.extend((v, node, k) for k, v in items)
        if not places:
            return doc
        parent, key = rng.choice(places)
        roll = rng.random()
        if roll < 0.5:
            parent[key] = copy.deepcopy(rng.choice(_VALUES + [[], {}, [1], {"a": 1}, "json", "exact", "<=", "accuracy"]))
        elif roll < 0.7 and isinstance(parent, dict):
            del parent[key]
        elif roll < 0.85 and isinstance(parent, dict):
            parent[rng.choice(["x", "name", "type", "op", "metric", "id"])] = copy.deepcopy(rng.choice(_VALUES))
        elif isinstance(parent[key], bool) or not isinstance(parent[key], (int, float)):
            parent[key] = [parent[key]]
        else:  # 1 <-> 1.0
            parent[key] = float(parent[key]) if isinstance(parent[key], int) else int(parent[key]) \
                if float(parent[key]).is_integer() and abs(parent[key]) < 1e300 else parent[key]
    return doc


def test_the_shipped_schemas_written_tests_answer_as_jsonschema_does():
    """The project's own config, rubrics and suite cases, mutated at random (a value of another type, a key
    dropped or added, an int made a float): the written tests (`inputs.shipped_checks`) accept exactly what
    jsonschema's validator of the shipped schema accepts. Seeded, bounded."""
    import random

    from releasegate.inputs.schema_check import _fast_check, _validator

    root = Path(__file__).resolve().parents[1]
    docs = {"config": [yaml.safe_load((root / "releasegate.yaml").read_text())],
            "rubric": [yaml.safe_load(p.read_text()) for p in sorted((root / "rubrics").glob("*.yaml"))],
            "case": [json.loads(line) for p in sorted((root / "suites").rglob("*.jsonl"))[:8]
                     for line in p.read_text().splitlines()[:10] if line.strip()]}
    docs["config"] += [d for p in sorted((root / "examples").glob("*.yaml"))
                       if isinstance(d := yaml.safe_load(p.read_text()), dict) and "extends" not in d]
    rng = random.Random(7)
    for name, originals in docs.items():
        assert originals, name
        fast, validator = _fast_check(name), _validator(name)
        for _ in range(2000):
            doc = _mutated(rng, rng.choice(originals))
            assert fast(doc) == validator.is_valid(doc), (name, doc)


# -- records whose inputs the gate holds packed ---------------------------------------------------------------------

_HOSTILE_INPUTS = [
    r'{"prompt": "a\u0000b"}', '{"prompt": "a", "prompt": "b"}', '{}', '{"prompt": 1}',
    '{"n": -0.0, "big": 123456789012345678901234567890123, "f": 1e308, "tiny": 5e-324, "i": 1, "fl": 1.0, '
    '"t": true, "z": null, "l": [1, 1.0, true, -0.0, 0], "k": 12345678901234567890.0, "e": 1E400, "u": -1e-400}',
    '{"n": NaN, "prompt": "nan"}', '{"prompt": "' + "y" * 300_000 + '"}',
    '{"messages": [{"role": "user", "content": "\\u2028\\u0085\\u202e\\ud83d\\ude00"}], "deep": ' + "[" * 150 + "]" * 150 + "}",
]


def _hostile_run(root: Path) -> Path:
    from test_false_pass import WRONG, Run, ok

    lines, load = [], []
    for i, raw in enumerate(_HOSTILE_INPUTS):
        line = json.dumps(ok(i, output=WRONG if i % 2 else '{"intent": "billing"}')).replace(
            f'"input": {{"prompt": "p{i}"}}', f'"input": {raw}')
        lines.append(line)
        load.append(line.replace(f'"case_id": "c{i:03d}"', f'"case_id": "load-{i:05d}:c{i:03d}"').replace(
            '"suite": "s"', '"suite": "load"').replace(
            '"tags": {"task": "t"}', f'"tags": {{"phase": "load", "prompt_of": "c{i:03d}"}}'))
    path = Run([ok(0)], baseline=[ok(i) for i in range(len(lines))], load=[ok(0)]).build(root)
    (path / "records.jsonl").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    (path / "load.jsonl").write_text("".join(f"{line}\n" for line in load), encoding="utf-8")
    return path


def test_a_held_input_judges_and_reports_as_the_record_read_plainly(tmp_path, cli, monkeypatch):
    """Inputs of every JSON type and edge (NUL, a duplicate key, -0.0, 1 vs 1.0 vs True, a 33-digit integer, a
    number past a float, NaN, 300 kB, 150 levels deep, line and bidi controls), against a baseline and a load
    phase: the gate holding each input packed (`record.held`) writes every report byte for byte as the gate that
    holds them as read."""
    import shutil

    import releasegate.scorers.score as score

    outputs = []
    for hold in (score.hold_input, lambda record: None):
        monkeypatch.setattr(score, "hold_input", hold)
        path = _hostile_run(tmp_path / "w")
        code, _, err = cli("gate", path)
        assert code in (0, 1), err
        outputs.append((code, {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.is_file()}))
        for fmt in ("csv", "html"):
            assert cli("report", path, "--format", fmt, "-o", tmp_path / f"again.{fmt}", "--force")[0] == 0
            outputs[-1][1][f"again.{fmt}"] = (tmp_path / f"again.{fmt}").read_bytes()
        shutil.rmtree(tmp_path / "w")
    assert outputs[0] == outputs[1]
    assert {"report.json", "report.csv", "report.html"} <= set(outputs[0][1])


# -- the journal a report was judged on -----------------------------------------------------------------------------

def _append(p: Path, base: bytes) -> None:
    p.write_bytes(base + base.splitlines(True)[0])


def _replace_by(kind: str):
    def edit(p: Path, base: bytes) -> None:
        import os

        p.unlink()
        if kind == "dir":
            p.mkdir()
        elif kind == "fifo":
            os.mkfifo(p)
        else:  # a link to an edited copy
            other = p.parent.parent / "elsewhere.jsonl"
            other.write_bytes(base.replace(b'"p1"', b'"q1"', 1))
            p.symlink_to(other)
    return edit


JOURNAL_EDITS = {
    "append": _append, "truncate": lambda p, base: p.write_bytes(b"".join(base.splitlines(True)[:-1])),
    "same-length": lambda p, base: p.write_bytes(base.replace(b'"p1"', b'"q1"', 1)),
    "crlf": lambda p, base: p.write_bytes(base.replace(b"\n", b"\r\n")),
    "no-last-newline": lambda p, base: p.write_bytes(base[:-1]), "empty": lambda p, base: p.write_bytes(b""),
    "gone": lambda p, base: p.unlink(), "dir": _replace_by("dir"), "fifo": _replace_by("fifo"),
    "link": _replace_by("link"),
}


@pytest.mark.parametrize("edit", JOURNAL_EDITS)
@pytest.mark.parametrize("fmt", ["csv", "html"])
def test_a_journal_edited_after_the_gate_is_never_rendered_as_judged(tmp_path, cli, edit, fmt):
    from test_false_pass import WRONG, Run, ok

    path = Run([ok(i) for i in range(6)] + [ok(6, output=WRONG)]).build(tmp_path / "runs")
    assert cli("gate", path)[0] == 0
    JOURNAL_EDITS[edit](path / "records.jsonl", (path / "records.jsonl").read_bytes())
    code, out, err = cli("report", path, "--format", fmt)  # the journal named, or report.json's PASS judged again
    assert code == 2 and len(err.strip().splitlines()) == 1 and not out.strip(), err
    assert "records.jsonl" in err or "report.json" in err and f"releasegate gate {path}" in err, err


@pytest.mark.parametrize("fmt", ["csv", "html"])
def test_a_load_journal_edited_after_the_gate_is_never_plotted_as_judged(tmp_path, cli, fmt):
    """report.html plots the load phase's latencies from load.jsonl, read again: edited since the gate (slower
    TTFTs), its plots and percentiles disagreed with report.json's figures beside them. The gate records the load
    journal's digest too; `report` refuses one changed since (csv too: it is the same view)."""
    from test_false_pass import Run, load_ok, ok

    path = Run([ok(i) for i in range(8)], load=[load_ok(i, ttft=50.0 + i) for i in range(20)]).build(tmp_path / "runs")
    assert cli("gate", path)[0] == 0
    assert cli("report", path, "--format", fmt)[0] == 0
    load = path / "load.jsonl"
    load.write_text(load.read_text().replace('"ttft_ms": 5', '"ttft_ms": 9'))
    code, out, err = cli("report", path, "--format", fmt)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "load.jsonl" in err and not out.strip(), err
    assert cli("gate", path)[0] == 0 and cli("report", path, "--format", fmt)[0] == 0  # judged again: rendered
