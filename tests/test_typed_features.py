"""Stored JSON read into typed models by the judge, review, scorer and leakage packages: an older file (fields
missing) reads with the defaults the readers always took, a newer one (fields unknown) is kept, and a malformed
one is one InputError naming the field, never a traceback or a guessed value."""

from __future__ import annotations

import pytest

from releasegate.errors import InputError
from releasegate.leakage.feature import leakage_metric
from releasegate.leakage.figures import leakage_figures
from releasegate.llm_judge.case_scores import case_scores, judge_verdicts
from releasegate.llm_judge.section_view import MetricFigure, judge_info, section_view
from releasegate.review.label_row import LabelRow
from releasegate.review.slice_row import SliceRow, stored_row
from releasegate.review.summary import review_headline
from releasegate.scorers.stored import _rows
from releasegate.scorers.tool_calls import score_tools, score_turn, turn_passed


def test_leakage_figures_malformed_is_an_input_error_naming_the_field():
    with pytest.raises(InputError) as caught:
        leakage_figures({"records": [{"set": "train", "cand": {"ll": "high"}}]})
    assert "records.0.cand.ll" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_leakage_metric_unknown_when_an_arm_has_no_score():
    rows = [{"set": s, "cand": {"ll": -1.0}, "base": {"ll": None}} for s in ("train", "heldout")]
    value = leakage_metric("membership_auc", {"records": rows})
    assert value.value is None and "no log-likelihood" in value.note


def test_leakage_empty_canaries_read_as_none():
    assert leakage_metric("canary_exposure_bits", {"records": [], "canaries": {}}).note.startswith("no canaries")
    unmeasured = leakage_metric("canary_exposure_bits", {"canaries": {"canaries": [{"cand": None}], "max_bits": 5.0}})
    assert unmeasured.value is None  # never the best exposure of the canaries that were measured


def test_stored_review_row_ignores_unknown_keys_and_defaults_missing_ones():
    row = stored_row({"status": "pass", "reviewed": 3, "approved": 2, "approval": 0.5, "from_the_future": 1})
    assert row == SliceRow(status="pass", reviewed=3, approved=2, approval=0.5)
    assert list(SliceRow().as_json())[:3] == ["required", "status", "cases"]


def test_review_headline_of_an_old_report_without_newer_keys():
    review = {"all": {"status": "pass", "approval": 0.9, "approval_bounds": [0.8, 0.95], "confidence": 0.95,
                      "approved": 9, "reviewed": 10, "rejected": 1, "kappa": None}}
    line = review_headline(review)
    assert line is not None and line.startswith("human review: pass: 9 of 10 approved")
    assert review_headline({"all": {}}) is None and review_headline(None) is None


def test_label_row_short_row_and_missing_columns_read_as_empty():
    row = LabelRow.of({"review_id": 0, "label": 1, "reason": 5}, ["R-1", "approve"])
    assert (row.review_id, row.label, row.reason, row.round, row.forbidden) == ("R-1", "approve", "", "", "")


def test_case_scores_malformed_verdict_names_the_case():
    with pytest.raises(InputError) as caught:
        case_scores({"c1": {"answer": {"judge": {"passed": True}}}}, "c1")
    assert "'c1'" in str(caught.value) and "criterion" in str(caught.value)
    verdicts = judge_verdicts({"c1": {"answer": {"passed": True}}, "c2": {"answer": {"judge": {"criterion": "x"}}}})
    assert list(verdicts) == ["c2"] and verdicts["c2"].passed is None  # no verdict is unknown, never a pass


def test_judge_section_and_info_read_typed():
    view = section_view({"calibration": {"x": {"calibrated": False, "why": "few", "labels": 3}},
                         "policy": {"min_labels": 20, "min_agreement": 0.8, "max_order_inconsistency": 0.2}})
    assert view.calibration["x"].why == "few" and not view.calibration["x"].calibrated
    assert judge_info({"price": {}}).price is None  # an empty price is no price, as before
    with pytest.raises(InputError):
        judge_info({"price": {"input_usd_per_1m": "cheap"}})


def test_metric_figure_keeps_an_integer_value_as_written():
    assert isinstance(MetricFigure.model_validate({"value": 0, "n": 4}).value, int)


def test_corpus_rows_skip_malformed_lines():
    data = b'{"name":"a","fingerprint":"f","value":1,"n":3}\n{"name":1}\nnot json\n{"name":"a","fingerprint":"g","value":"1","n":3}\n'
    assert [(r.fingerprint, r.value) for r in _rows(data)] == [("f", 1)]


TOOLS = [{"type": "function", "function": {"name": "refund", "parameters": {"type": "object"}}}]


def test_tool_turn_scores_keep_their_shape_and_order():
    call = {"id": "1", "name": "refund", "arguments": '{"amount": 5}'}
    turn = {"call": "required", "calls": [{"name": "refund", "arguments": {"amount": [5]}}], "order": "any"}
    out = score_turn([call], turn, TOOLS)
    assert list(out) == ["calls", "expected", "missed", "unwanted", "trigger", "json", "schema", "matched", "match",
                         "sequence", "forbidden_tool", "detail"]
    assert turn_passed(out) and out["matched"] == 1
    wrong = score_turn([{**call, "arguments": '{"amount": 6}'}], turn, TOOLS)
    assert not turn_passed(wrong) and "0 of 1 expected calls matched" in wrong["detail"]


def test_tool_score_of_a_forbidden_call_hidden_by_invisible_characters_fails():
    spec = {"tools": TOOLS, "turns": [{"call": "optional", "forbidden_tools": ["refund"]}]}
    scored = score_tools(spec, [[{"id": "1", "name": "Re\u200bfund ", "arguments": "{}"}]])
    assert scored["passed"] is False and scored["forbidden_called"] is True
    assert list(scored)[-6:] == ["missed", "unwanted", "forbidden_called", "turns", "passed", "detail"]


def test_tool_spec_malformed_expected_call_is_an_input_error():
    with pytest.raises(InputError):
        score_tools({"tools": TOOLS, "turns": [{"calls": [{"arguments": {}}]}]}, [[]])
