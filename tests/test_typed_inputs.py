"""Config and rubric sections read once into typed models: a value the schema let through but the model cannot
hold is one line naming the file and field (exit 2), and what the models write back is what was written."""

from __future__ import annotations

import pytest

from releasegate.errors import InputError
from releasegate.inputs.read_doc import read_doc
from releasegate.inputs.rubric import Criterion, ForbiddenRule
from releasegate.inputs.rubric_doc import RubricDoc
from releasegate.inputs.source_spec import ColumnSpec, SampleSpec, SourceSpec
from releasegate.inputs.variant_plan import ChoiceDoc


@pytest.mark.parametrize("criteria", [
    "not a list", [{"metric": "accuracy", "op": ">=", "threshold": "high"}], [{"metric": ["x"], "op": ">=", "threshold": 1}],
    [{"metric": "accuracy", "op": ">=", "threshold": 10**400}], [{"op": ">="}], [None],
])
def test_a_part_the_model_cannot_hold_is_an_input_error_naming_the_file_and_field(criteria):
    with pytest.raises(InputError) as err:
        read_doc(RubricDoc, {"criteria": criteria}, "rubric.yaml")
    line = str(err.value)
    assert "rubric.yaml" in line and "criteria" in line and "\n" not in line, line
    assert err.value.exit_code == 2


def test_numbers_written_as_whole_numbers_stay_whole_numbers():
    # a recorded plan says `margin: 1` as written, not `1.0`
    assert type(ChoiceDoc.model_validate({"margin": 1}).margin) is int
    assert type(ChoiceDoc.model_validate({"margin": 0.5}).margin) is float


def test_a_sample_spec_reads_its_defaults_and_estimate():
    spec = SampleSpec.model_validate({"n": 3})
    assert (spec.seed, spec.by, spec.weighted) == (0, None, True)
    assert not SampleSpec.model_validate({"per_stratum": 2, "estimate": "sample"}).weighted


def test_tag_columns_name_their_key_in_the_config():
    listed = ColumnSpec.model_validate({"expected": "y", "tags": ["risk", "task"]})
    assert listed.tag_columns() == {"risk": "risk", "task": "task"} and listed.tag_key("task", "task") == 1
    mapped = ColumnSpec.model_validate({"expected": "y", "tags": {"risk": "Risk level"}})
    assert mapped.tag_columns() == {"risk": "Risk level"} and mapped.tag_key("risk", "Risk level") == "risk"


def test_a_hub_source_has_no_format():
    spec = SourceSpec.model_validate({"hub": "org/name", "split": "test"})
    assert (spec.hub, spec.format, spec.path) == ("org/name", None, None)


def test_a_no_probe_criterion_writes_probe_none_back():
    criterion = Criterion(name="c", metric="forbidden_rate", op="<=", threshold=0.0, slice={"kind": "x", "probe": None})
    assert criterion.as_dict() == {"name": "c", "metric": "forbidden_rate", "op": "<=", "threshold": 0.0,
                                   "slice": {"kind": "x"}, "probe": "none"}
    assert list(criterion.as_dict()) == ["name", "metric", "op", "threshold", "slice", "probe"]


def test_a_forbidden_rule_round_trips_through_its_snapshot():
    rule = ForbiddenRule.from_dict({"category": "violence", "kind": "guard", "guard": "g", "codes": ["S1"]})
    assert rule.guard == "g" and rule.codes == ("S1",)
    assert ForbiddenRule.from_dict(rule.as_dict()) == rule
    plain = ForbiddenRule.from_dict({"category": "pii", "regex": ["\\d{3}"], "description": "numbers"})
    assert list(plain.as_dict()) == ["category", "description", "regex"]


def test_a_threshold_no_float_can_hold_is_a_bad_rubric_not_a_crash(tmp_path):
    from releasegate.inputs.rubric import load_rubric

    path = tmp_path / "rubric.yaml"
    path.write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: " + "9" * 400 + "}\n")
    with pytest.raises(InputError) as err:
        load_rubric(path)
    assert "rubric.yaml" in str(err.value) and "threshold" in str(err.value), str(err.value)
