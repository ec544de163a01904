"""Hostile files against the newest on-disk surfaces: a user's JSON Schema whose `$ref` resolves nowhere or loops
back to where it stands (format checks, tool parameters), records whose inputs the gate holds packed, the
compiled-template cache, the composition digest and the journal a report was judged on."""

from __future__ import annotations

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


