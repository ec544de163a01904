"""Answer scorers: did the output give the expected answer? They feed `accuracy`."""

from __future__ import annotations

import math
import re
from typing import Any

from ..text import json_equal
from ._registry import Score, Spec, scorer
from ._text import as_text, normalize, parse_json_object

_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


@scorer("answer", "exact")
def exact(output: str, expected: Any, spec: Spec) -> Score:
    """Output equals the expected text, surrounding whitespace ignored."""
    passed = output.strip() == as_text(expected).strip()
    return Score(passed, "" if passed else f"expected {as_text(expected)!r}")


@scorer("answer", "normalized")
def normalized(output: str, expected: Any, spec: Spec) -> Score:
    """Equal after lower-casing and removing punctuation, articles and extra spaces."""
    passed = normalize(output) == normalize(as_text(expected))
    return Score(passed, "" if passed else f"expected {normalize(as_text(expected))!r}")


@scorer("answer", "label")
def label(output: str, expected: Any, spec: Spec) -> Score:
    """The output names exactly one of `labels` (whole words, case-insensitive), and it is the expected one."""
    labels = spec.get("labels") or [as_text(expected)]
    text = f" {normalize(output)} "
    found = [lab for lab in labels if f" {normalize(lab)} " in text]
    if len(found) != 1:
        return Score(False, f"{'no label' if not found else 'several labels: ' + ', '.join(found)} in output")
    passed = normalize(found[0]) == normalize(as_text(expected))
    return Score(passed, "" if passed else f"label {found[0]!r}, expected {as_text(expected)!r}")


@scorer("answer", "json_fields")
def json_fields(output: str, expected: Any, spec: Spec) -> Score:
    """The JSON object in the output has the expected value in each of `fields` (default: all expected keys)."""
    if not isinstance(expected, dict):
        return Score(False, "json_fields needs an object as expected answer")
    got = parse_json_object(output)
    if not isinstance(got, dict):
        return Score(False, "no JSON object in output")
    fields = spec.get("fields") or sorted(expected)
    wrong = [f for f in fields if f not in got or not json_equal(got[f], expected.get(f))]
    detail = ", ".join(f"{f}: got {got.get(f)!r}, expected {expected.get(f)!r}" for f in wrong)
    return Score(not wrong, detail)


@scorer("answer", "regex")
def regex(output: str, expected: Any, spec: Spec) -> Score:
    """`pattern` is found in the output; if it has a group, group 1 must equal the expected text."""
    match = re.search(spec["pattern"], output)
    if match is None:
        return Score(False, "pattern not found")
    if match.re.groups and expected is not None:
        passed = match.group(1).strip() == as_text(expected).strip()
        return Score(passed, "" if passed else f"captured {match.group(1)!r}, expected {as_text(expected)!r}")
    return Score(True)


@scorer("answer", "numeric")
def numeric(output: str, expected: Any, spec: Spec) -> Score:
    """The first number in the output is within `tolerance` of the expected (relative if `relative`)."""
    match = _NUMBER.search(output.replace(",", ""))
    if match is None:
        return Score(False, "no number in output")
    got, want = float(match.group()), float(expected)
    tol = spec.get("tolerance", 0.0)
    passed = math.isclose(got, want, rel_tol=tol, abs_tol=0.0) if spec.get("relative") else abs(got - want) <= tol
    return Score(passed, "" if passed else f"got {got:g}, expected {want:g} ± {tol:g}{' (relative)' if spec.get('relative') else ''}")
