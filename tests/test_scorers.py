"""Every scorer, on outputs that must pass and outputs that must fail."""

import pytest

from releasegate.inputs.rubric import ForbiddenRule
from releasegate.scorers import SCORERS, get_scorer
from releasegate.scorers.forbidden import find_hits

TICKET = {"intent": "billing", "priority": "high"}


def answer(kind, output, expected, **spec):
    return get_scorer("answer", kind)(output, expected, {"type": kind, **spec}).passed


def fmt(kind, output, tokens=None, **spec):
    return get_scorer("format", kind)(output, {"type": kind, **spec}, tokens).passed


@pytest.mark.parametrize(
    ("kind", "output", "expected", "spec", "passed"),
    [
        ("exact", "  Paris \n", "Paris", {}, True),
        ("exact", "paris", "Paris", {}, False),
        ("normalized", "The Paris!", "paris", {}, True),
        ("normalized", "Lyon", "paris", {}, False),
        ("label", "I think this is Billing.", "billing", {"labels": ["billing", "shipping"]}, True),
        ("label", "billing or shipping", "billing", {"labels": ["billing", "shipping"]}, False),
        ("label", "shipping", "billing", {"labels": ["billing", "shipping"]}, False),
        ("label", "nothing here", "billing", {"labels": ["billing", "shipping"]}, False),
        ("json_fields", '{"intent": "billing", "priority": "high"}', TICKET, {}, True),
        ("json_fields", 'Sure: {"intent": "billing", "priority": "high", "x": 1}', TICKET, {}, True),
        ("json_fields", '{"intent": "billing", "priority": "low"}', TICKET, {}, False),
        ("json_fields", '{"intent": "billing", "priority": "low"}', TICKET, {"fields": ["intent"]}, True),
        ("json_fields", "not json", TICKET, {}, False),
        ("json_fields", '{"intent": "billing"}', "billing", {}, False),
        ("regex", "answer: 42", "42", {"pattern": r"answer: (\d+)"}, True),
        ("regex", "answer: 41", "42", {"pattern": r"answer: (\d+)"}, False),
        ("regex", "ok done", None, {"pattern": r"\bdone\b"}, True),
        ("regex", "nothing", None, {"pattern": r"\bdone\b"}, False),
        ("numeric", "about 3.14159 units", 3.14, {"tolerance": 0.01}, True),
        ("numeric", "3.2", 3.14, {"tolerance": 0.01}, False),
        ("numeric", "1,000", 1000, {}, True),
        ("numeric", "105", 100, {"tolerance": 0.05, "relative": True}, True),
        ("numeric", "106", 100, {"tolerance": 0.05, "relative": True}, False),
        ("numeric", "no digits", 1, {}, False),
    ],
)
def test_answer_scorers(kind, output, expected, spec, passed):
    assert answer(kind, output, expected, **spec) is passed


SCHEMA = {"type": "object", "required": ["intent"], "properties": {"intent": {"enum": ["billing"]}}}


@pytest.mark.parametrize(
    ("kind", "output", "spec", "tokens", "passed"),
    [
        ("json", '{"a": 1}', {}, None, True),
        ("json", '{"a": 1', {}, None, False),
        ("json", 'prefix {"a": 1}', {}, None, False),
        ("json_schema", '{"intent": "billing"}', {"schema": SCHEMA}, None, True),
        ("json_schema", '{"intent": "refund"}', {"schema": SCHEMA}, None, False),
        ("json_schema", "[]", {"schema": SCHEMA}, None, False),
        ("json_schema", "nope", {"schema": SCHEMA}, None, False),
        ("regex", "ID-123", {"pattern": r"ID-\d+"}, None, True),
        ("regex", "ID-123 trailing", {"pattern": r"ID-\d+"}, None, False),
        ("max_length", "abcd", {"max_chars": 4}, None, True),
        ("max_length", "abcde", {"max_chars": 4}, None, False),
        ("max_length", "abc", {"max_tokens": 2}, 3, False),
        ("max_length", "abc", {"max_tokens": 3}, 3, True),
    ],
)
def test_format_scorers(kind, output, spec, tokens, passed):
    assert fmt(kind, output, tokens, **spec) is passed


def test_schema_failure_names_the_field():
    score = get_scorer("format", "json_schema")('{"intent": "refund"}', {"schema": SCHEMA}, None)
    assert "intent" in score.detail


RULES = (
    ForbiddenRule("promise", phrases=("guaranteed refund",)),
    ForbiddenRule("card", regex=(r"\b\d{4}[ -]?\d{4}[ -]?\d{4}[ -]?\d{4}\b",)),
)


@pytest.mark.parametrize(
    ("output", "categories"),
    [
        ("You get a GUARANTEED   refund.", ["promise"]),
        ("guaranteed refunds are not offered", []),  # whole words only
        ("card 4111 1111 1111 1111 on file", ["card"]),
        ("order 4111-1111", []),
        ("guaranteed refund to 4111111111111111", ["promise", "card"]),
    ],
)
def test_forbidden_rules(output, categories):
    assert [h["category"] for h in find_hits(output, RULES)] == categories
    assert get_scorer("forbidden", "rules")(output, RULES).passed is (not categories)


def test_registry_has_every_family():
    families = {}
    for family, kind in SCORERS:
        families.setdefault(family, set()).add(kind)
    assert families["answer"] == {"exact", "normalized", "label", "json_fields", "regex", "numeric", "rouge", "bleu", "chrf", "judge"}
    assert families["format"] == {"json", "json_schema", "regex", "max_length"}
    with pytest.raises(KeyError, match="known: "):
        get_scorer("answer", "nope")
