"""The schema compiler's source: the shipped schemas' tests, written ahead of time, are what the schemas give
today, and a user's schema reaches the source only as constants."""

from __future__ import annotations

import importlib.util
import re

import jsonschema
import pytest

from conftest import ROOT
from releasegate.inputs.schema_check import _fast_check, schema
from releasegate.inputs.schema_compiler import SchemaCompiler
from releasegate.inputs.shipped_checks import CHECKS


def _script():
    spec = importlib.util.spec_from_file_location("compile_schemas", ROOT / "scripts" / "compile_schemas.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
def test_a_user_schema_s_strings_never_become_source(hostile):
    """Property names, enums, patterns and bounds of a user's schema are constants of the program: the source
    names them by index only, so no text of the schema is ever code."""
    doc = {"type": "object", "required": [hostile], "properties": {hostile: {"enum": [hostile]}},
           "additionalProperties": False, "propertyNames": {"pattern": re.escape(hostile)}}
    compiler = SchemaCompiler(doc)
    test = compiler.compile(doc)
    assert test({hostile: hostile}) and not test({hostile: "other"}) and not test({})
    source = "\n".join(compiler.program.written)
    assert "_n0" in source and "__import__" not in source and "os.system" not in source
    assert test({hostile: hostile}) == jsonschema.Draft202012Validator(doc).is_valid({hostile: hostile})
