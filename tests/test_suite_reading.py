"""Suite lines read once, at C speed where it can be: the depth bound counted only when the line holds more
opening brackets than the bound, the non-finite check done by the parser's own number hooks. The rules stay
as they were: a number that is not finite is refused naming its line and field, wherever in the case it sits,
and a value nested past the bound is refused; a string that merely says NaN is a string."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from releasegate.border.structured import TooDeep, json_loads, nesting
from releasegate.errors import InputError
from releasegate.inputs.suite_config import SuiteConfig
from releasegate.inputs.suites import load_suite

GOOD = {"id": "c1", "prompt": "Where is my parcel?", "expected": "soon", "tags": {"domain": "support"}}
NUMBERS = ["NaN", "Infinity", "-Infinity", "1e999", "-1.5E+400", "1" * 400 + ".0", "2e308"]
PLACES = [("expected",), ("tags", "score"), ("expected", "list", 1), ("tags", "deep", "deeper")]


def _suite(tmp_path: Path, lines: list[str]) -> SuiteConfig:
    path = tmp_path / "suite.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return SuiteConfig(path=path, name="s", answer={"type": "exact"})


def _place(case: dict, where: tuple, text: str) -> str:
    """The case's JSON line with the raw number `text` at `where` (a marker replaced after dumping): each step
    a dict key, or a list index (the list made long enough)."""
    case = json.loads(json.dumps(case))  # a deep copy: GOOD stays as it is
    case["expected"] = {} if len(where) > 1 and where[0] == "expected" else case["expected"]
    node = case
    for key, after in zip(where, where[1:]):
        if isinstance(node, list):
            node[key] = node[key] if isinstance(node[key], (dict, list)) else ([0] * (after + 1) if isinstance(after, int) else {})
        else:
            node.setdefault(key, [0] * (after + 1) if isinstance(after, int) else {})
        node = node[key]
    node[where[-1]] = "@@NUMBER@@"
    return json.dumps(case).replace('"@@NUMBER@@"', text)


@pytest.mark.parametrize("number", NUMBERS)
@pytest.mark.parametrize("where", PLACES, ids=lambda w: ".".join(map(str, w)))
def test_a_number_that_is_not_finite_is_refused_naming_line_and_field(tmp_path, number, where):
    lines = [json.dumps(GOOD), _place({**GOOD, "id": "c2"}, where, number)]
    with pytest.raises(InputError) as err:
        load_suite(_suite(tmp_path, lines), tmp_path)
    assert err.value.line == 2, str(err.value)
    assert "not a finite number" in err.value.message and (err.value.field or "").startswith(where[0]), str(err.value)


@pytest.mark.parametrize("text", ["NaN", "Infinity", "1e999", "the value was NaN or -Infinity", "9" * 400])
def test_a_string_that_says_nan_is_a_string(tmp_path, text):
    cases = load_suite(_suite(tmp_path, [json.dumps({**GOOD, "expected": text, "tags": {"note": text}})]), tmp_path)
    assert cases[0].expected == text and cases[0].tags["note"] == text


def test_large_finite_numbers_stay_numbers(tmp_path):
    line = json.dumps({**GOOD, "tags": {"a": 1e308, "b": -2.5e-300, "c": 10 ** 300}})
    case = load_suite(_suite(tmp_path, [line]), tmp_path)[0]
    assert case.tags["a"] == 1e308 and case.tags["c"] == 10 ** 300


nested = st.recursive(st.one_of(st.integers(), st.text(alphabet="[]{}\"\\ab", max_size=6), st.none()),
                      lambda inner: st.one_of(st.lists(inner, max_size=3),
                                              st.dictionaries(st.text(alphabet="[]{}ab", max_size=3), inner,
                                                              max_size=3)), max_leaves=40)


@settings(max_examples=300, deadline=None)
@given(nested, st.integers(min_value=1, max_value=12))
def test_the_depth_bound_holds_whatever_the_brackets_in_strings(value, bound):
    """Refused exactly when the value nests deeper than the bound, counted fast or exactly."""
    text = json.dumps(value)
    if nesting(value) > bound:
        with pytest.raises(TooDeep):
            json_loads(text, max_depth=bound)
    else:
        assert json_loads(text, max_depth=bound) == value
        assert json_loads(text.encode(), max_depth=bound) == value


@pytest.mark.parametrize("column", ["score", "answer"])
def test_a_table_cell_that_is_not_finite_is_refused_naming_its_row_and_column(tmp_path, column):
    """A source row's numbers are checked as the row becomes a case (JSON cannot hold them): the schema's walk
    over the case is not needed to refuse them, and is skipped."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from releasegate.inputs.suites import load_suites

    values = {"score": [1.0, 3.0], "answer": [2.0, 4.0]}
    values[column][1] = float("-inf") if column == "answer" else float("inf")
    pq.write_table(pa.table({"q": ["a?", "b?"], **values}), tmp_path / "t.parquet")
    suite = SuiteConfig(path=tmp_path / "t.parquet", name="s", answer={"type": "numeric"},
                        source={"format": "parquet", "path": str(tmp_path / "t.parquet")},
                        columns={"prompt": "q", "expected": "answer", "tags": ["score"]})
    with pytest.raises(InputError) as err:
        load_suites((suite,), tmp_path)
    assert f"field '{column}'" in str(err.value) and "(row 2)" in str(err.value), str(err.value)


def test_json_equality_is_jsons():
    from releasegate.text import json_equal

    assert json_equal(1, 1.0) and json_equal({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]})
    assert not json_equal(True, 1) and not json_equal(0, False) and not json_equal([True], [1])
    assert not json_equal({"a": 1}, {"a": 1, "b": 2}) and not json_equal([1], [1, 1]) and not json_equal("1", 1)
    assert json_equal(True, True) and not json_equal(True, False) and not json_equal({"a": 1}, [1])
