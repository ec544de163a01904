"""The typed rows of `servers` and the served variants, and the kept-label lines, read from hostile values: a
variant.json of another shape is one line naming its field, a draft counter keeps its float form in the JSON and
decides the choice as its value says, and a kept line of another shape is skipped."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from releasegate.errors import InputError
from releasegate.inputs.variant_plan import SpeculativeSpec, VariantSpec
from releasegate.pipeline.kept_labels import _row as kept_row
from releasegate.pipeline.served_variants import _row
from releasegate.pipeline.server_ranking import choose_cheapest
from releasegate.record.records import RunDir
from test_variant_plan import row

DEMO = Path(__file__).resolve().parents[1] / "models" / "demo"
SPEC = VariantSpec(name="spec", server="llamacpp", base=DEMO / "base", quant="f16",
                   speculative=SpeculativeSpec(kind="ngram"))


def _target(tmp_path: Path) -> dict:
    return {**row("spec"), "run_id": "spec", "run_dir": str(tmp_path), "sweep": False}


def _variant_json(tmp_path: Path, **parts) -> None:
    (tmp_path / "variant.json").write_text(json.dumps({"variant": {}, "files": [], **parts}))


def test_draft_counters_keep_their_float_form(tmp_path):
    _variant_json(tmp_path, speculative={"draft_tokens": 40.0, "accepted_tokens": 30.0, "acceptance_rate": 0.75})
    out = _row(SPEC, RunDir(tmp_path), _target(tmp_path), False)
    assert json.dumps(out["draft_tokens"]) == "40.0" and json.dumps(out["accepted_tokens"]) == "30.0"
    assert out["acceptance_rate"] == 0.75 and out["verdict"] == "PASS" and out["why_not"] is None


@pytest.mark.parametrize("parts", [{"model_bytes": "lots"}, {"files": "model.gguf"}, {"speculative": [1, 2]},
                                   {"files": [{"role": 7}]}])
def test_a_variant_json_of_another_shape_is_one_line_naming_it(tmp_path, parts):
    _variant_json(tmp_path, **parts)
    with pytest.raises(InputError) as caught:
        _row(SPEC, RunDir(tmp_path), _target(tmp_path), False)
    assert "variant.json" in str(caught.value.file) and next(iter(parts)) in caught.value.message


@pytest.mark.parametrize(("drafted", "why"), [(0.0, "proposed no draft token"), (None, "were not counted"),
                                              (math.inf, "were not counted"), (math.nan, "were not counted"),
                                              (0.5, None), (40.0, None)])
def test_a_draft_count_decides_as_its_value_says(drafted, why):
    """A count that is not finite is none (never a speculation shown); any part of a token proposed is one."""
    spec = {**row("spec"), "speculative": "ngram", "draft_tokens": drafted}
    choose_cheapest([row("ref", parity=None), spec], reference="ref")
    assert (spec["why_not"] is None) if why is None else (why in spec["why_not"] and not spec["eligible"])


def test_a_row_without_its_verdict_is_refused_not_ranked():
    with pytest.raises(ValueError):  # a row that cannot say its gate's verdict is never a contender
        choose_cheapest([row("ref", parity=None), {"variant": "x"}], reference="ref")


GOOD = {"grader": "g", "output_hash": "sha256:a", "label": "approve", "reviewer": "r", "time": "2026-01-01T00:00:00+00:00",
        "run": "r1", "review_id": "1", "case_hash": "c"}


@pytest.mark.parametrize("edit", [{"label": "maybe"}, {"run": "../other"}, {"run": ".."}, {"run": ""},
                                  {"time": 5}, {"grader": None}, {"forbidden": "pii"}, {"forbidden": [1]},
                                  {"case_hash": ["c"]}])
def test_a_kept_line_of_another_shape_is_skipped(edit):
    assert kept_row(json.dumps(GOOD).encode()) is not None
    assert kept_row(json.dumps({**GOOD, **edit}).encode()) is None


@pytest.mark.parametrize("raw", [b"[]", b"not json", b"{\"grader\": 1e999}", b"null", b"[" * 5000])
def test_a_kept_line_that_is_no_object_is_skipped(raw):
    assert kept_row(raw) is None
