"""The schema compiler's source: the shipped schemas' tests, written ahead of time, are what the schemas give
today, and a user's schema reaches the source only as constants."""

from __future__ import annotations

import re

import jsonschema
import pytest

from conftest import load_script
from releasegate.inputs.schema_check import _fast_check, schema
from releasegate.inputs.schema_codegen import SchemaWriter, module_source
from releasegate.inputs.shipped_checks import CHECKS


def _script():
    return load_script("compile_schemas")


def test_the_shipped_tests_are_what_the_schemas_give():
    script = _script()
    assert script.OUT.read_text("utf-8") == script.render(), "run: python scripts/compile_schemas.py"


@pytest.mark.parametrize("name", ["config", "case", "rubric", "forbidden"])
def test_each_shipped_schema_is_checked_by_its_written_test(name):
    assert _fast_check(name) is CHECKS[name]


def test_the_written_case_test_answers_as_jsonschema():
    case = {"id": "a1", "messages": [{"role": "user", "content": "hi"}], "expected": "x", "tags": {"d": "b"}}
    slow = jsonschema.Draft202012Validator(schema("case"))
    for doc in (case, {**case, "id": "bad id"}, {**case, "prompt": "p"}, {**case, "tags": {"d": None}},
                {**case, "messages": []}, {"id": "a2", "prompt": "p", "expected": 1.5}):
        assert CHECKS["case"](doc) == slow.is_valid(doc), doc


@pytest.mark.parametrize("hostile", ["'); import os; os.system('x'); ('", '"""); __import__("os")#',
                                     "\\'\n__import__('os')"])
def test_a_schema_s_strings_are_constants_of_the_written_module(hostile):
    """Property names, enums, patterns and bounds reach the source as constants: the module written for a schema
    holding code-like text runs as a module and answers as jsonschema."""
    doc = {"type": "object", "required": [hostile], "properties": {hostile: {"enum": [hostile]}},
           "additionalProperties": False, "propertyNames": {"pattern": re.escape(hostile)}}
    source = module_source({"doc": doc}, lambda name: {}, '"""a test module"""')
    module: dict = {"__name__": "releasegate.inputs.written", "__package__": "releasegate.inputs"}
    exec(compile(source, "written", "exec"), module)
    test, slow = module["CHECKS"]["doc"], jsonschema.Draft202012Validator(doc)
    for value in ({hostile: hostile}, {hostile: "other"}, {}, {hostile: hostile, "x": 1}):
        assert test(value) == slow.is_valid(value), value
    for code_line in (line for line in source.splitlines() if not line.startswith("    ")):
        assert "os.system" not in code_line and "__import__" not in code_line


@pytest.mark.parametrize("doc", [
    {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1, "uniqueItems": True},
    {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]},
    {"oneOf": [{"required": ["a"]}, {"required": ["b"]}], "type": "object"},
    {"if": {"properties": {"k": {"const": "x"}}}, "then": {"required": ["y"]}, "else": {"not": {"required": ["y"]}}},
    {"$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"},
])
def test_the_written_tests_answer_as_jsonschema(doc):
    test, slow = SchemaWriter(doc).compile(doc), jsonschema.Draft202012Validator(doc)
    values = [None, 0, -1, 1.5, "", "abcd", "ab", [], [1, 1], [0, 2], {}, {"a": 1}, {"a": 1, "b": 2}, {"k": "x"},
              {"k": "x", "y": 1}, {"y": 1}, {"next": {"next": {}}}, {"next": {"next": 5}}, True]
    for value in values:
        assert test(value) == slow.is_valid(value), value
