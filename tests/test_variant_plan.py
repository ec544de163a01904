"""The served-variant plan (`variants:`, `variant_choice:`): parsed with its defaults and what each variant
inherits from the target, and one-line errors naming the field; the cheapest-qualifying choice."""

from __future__ import annotations

from pathlib import Path

import pytest

from releasegate.errors import InputError
from releasegate.inputs.config import load_config
from releasegate.pipeline.server_ranking import choose_cheapest

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "models" / "demo"


def test_the_example_plan_reads_with_what_each_variant_inherits():
    plan = load_config(ROOT / "examples" / "variants.yaml").variants
    names = [v.name for v in plan.variants]
    assert names == ["f16", "q8_0", "q4_0", "f16-lora", "f16-draft"] and plan.reference.name == "f16"
    assert all(v.base == (DEMO / "base").resolve() and v.adapter == (DEMO / "adapters" / "good").resolve()
               for v in plan.variants)
    assert [v.quant for v in plan.variants] == ["f16", "q8_0", "q4_0", "f16", "f16"]
    assert [v.lora for v in plan.variants] == ["merged", "merged", "merged", "per_request", "merged"]
    draft = plan.variants[4].speculative
    assert draft.kind == "draft" and draft.draft == (DEMO / "draft").resolve() and draft.n_max == 4
    assert plan.margin == 0.05 and plan.min_parity_share == 0.9
    assert plan.variants[3].describe() == "llama.cpp f16, LoRA per request"
    assert load_config(ROOT / "releasegate.yaml").variants is None


def with_plan(project: Path, section: str) -> Path:
    config = project / "releasegate.yaml"
    config.write_text(config.read_text() + section)
    return config


BASE = f"base: {DEMO / 'base'}"


@pytest.mark.parametrize(("section", "field", "message"), [
    (f"variants:\n  - {{name: a, server: llamacpp, {BASE}}}\n", "variants", ""),  # one variant: nothing to compare
    (f"variants:\n  - {{name: a, server: llamacpp, {BASE}}}\n  - {{name: A, server: llamacpp, {BASE}}}\n",
     "variants[1].name", "used twice"),
    (f"variants:\n  - {{name: 'a b', server: llamacpp, {BASE}}}\n  - {{name: b, server: llamacpp, {BASE}}}\n",
     "variants[0].name", "not a plain name"),
    ("variants:\n  - {name: a, server: llamacpp}\n  - {name: b, server: endpoint, base_url: 'http://h/v1', model: m}\n",
     "variants[0].base", "no model to serve"),
    (f"variants:\n  - {{name: a, server: llamacpp, {BASE}}}\n  - {{name: b, server: endpoint, model: m}}\n",
     "variants[1].base_url", "needs its base_url"),
    (f"variants:\n  - {{name: a, server: llamacpp, {BASE}}}\n  - {{name: b, server: endpoint, base_url: 'http://h/v1', "
     "model: m, quant: q8_0}\n", "variants[1].quant", "does not apply to an endpoint"),
    (f"variants:\n  - {{name: a, server: llamacpp, {BASE}, quant: q5_k}}\n  - {{name: b, server: llamacpp, {BASE}}}\n",
     "variants[0].quant", ""),
    (f"variants:\n  - {{name: a, server: vllm, {BASE}, quant: q8_0}}\n  - {{name: b, server: llamacpp, {BASE}}}\n",
     "variants[0].quant", "for server: llamacpp"),
    (f"variants:\n  - {{name: a, server: llamacpp, {BASE}, speculative: {{kind: draft}}}}\n"
     f"  - {{name: b, server: llamacpp, {BASE}}}\n", "variants[0].speculative.draft", "needs its draft model"),
    (f"variants:\n  - {{name: a, server: llamacpp, {BASE}, speculative: {{draft: /nowhere}}}}\n"
     f"  - {{name: b, server: llamacpp, {BASE}}}\n", "variants[0].speculative.draft", "no config.json"),
    (f"variants:\n  - {{name: a, server: llamacpp, {BASE}, lora: per_request}}\n  - {{name: b, server: llamacpp, {BASE}}}\n",
     "variants[0].lora", "no adapter"),
    ("variant_choice: {margin: 0.05}\n", "variant_choice", "needs variants"),
    (f"variants:\n  - {{name: a, server: llamacpp, {BASE}}}\n  - {{name: b, server: llamacpp, {BASE}}}\n"
     "variant_choice: {margin: 2}\n", "variant_choice.margin", ""),
])
def test_a_bad_plan_is_one_line_naming_the_field(project, section, field, message):
    with pytest.raises(InputError) as caught:
        load_config(with_plan(project, section))
    error = caught.value
    assert error.field == field and message in error.message and "\n" not in str(error)


def row(name: str, **over) -> dict:
    base = {"variant": name, "verdict": "PASS", "comparable": None, "sweep": False, "capacity_rps": None,
            "capacity_at_least": False, "capacity_break_rps": None, "cost_per_1m_at_capacity": None,
            "cost_per_1m_output_tokens": 1.0, "cost_mode": "self_hosted", "e2e_ms_p95": 100.0, "why_not": None,
            "parity": {"quality_verdict": "PASS", "accuracy_delta": 0.0, "accuracy_interval": [-0.01, 0.01],
                       "margin": 0.02, "identical_outputs": 9, "shared_cases": 10}}
    return {**base, **over}


def test_a_priced_cost_chooses_the_cheapest_that_qualifies():
    """An API price table's cost is counted tokens times prices: its figure is its interval."""
    rows = [row("f16", parity=None, cost_per_1m_output_tokens=3.0), row("q8", cost_per_1m_output_tokens=2.0),
            row("q4", cost_per_1m_output_tokens=1.0, parity={**row("x")["parity"], "quality_verdict": "FAIL"}),
            row("spec", cost_per_1m_output_tokens=0.5, verdict="FAIL")]
    rows = [{**r, "cost_mode": "api"} for r in rows]
    choice = choose_cheapest(rows, reference="f16")
    assert choice["choice"] == "q8" and choice["rule"] == "cost" and choice["verdict"] == "PASS"
    assert "reference f16" in choice["choice_reason"]
    assert {r["variant"]: r["eligible"] for r in rows} == {"f16": True, "q8": True, "q4": False, "spec": False}


def test_a_self_hosted_cost_without_a_sweep_has_no_interval_and_the_reference_stays():
    rows = [row("f16", parity=None, cost_per_1m_output_tokens=3.0), row("q8", cost_per_1m_output_tokens=2.0)]
    choice = choose_cheapest(rows, reference="f16")
    assert choice["choice"] == "f16" and choice["verdict"] == "PASS" and choice["rule"] is None


def test_cost_at_capacity_is_a_range_and_a_floor_is_an_upper_bound():
    measured = row("a", parity=None, capacity_rps=10.0, capacity_break_rps=12.0, cost_per_1m_at_capacity=2.0, sweep=True)
    floor = row("b", capacity_rps=20.0, capacity_at_least=True, cost_per_1m_at_capacity=1.0, sweep=True)
    choice = choose_cheapest([measured, floor], reference="a")  # [0, 1] lies below [1.67, 2]: surely cheaper
    assert choice["choice"] == "b" and choice["rule"] == "cost"
    floor_above = row("c", capacity_rps=5.0, capacity_at_least=True, cost_per_1m_at_capacity=3.0, sweep=True)
    choice = choose_cheapest([measured, floor_above], reference="a")
    assert choice["choice"] == "a" and "reference stays" in choice["choice_reason"]
    near = row("d", capacity_rps=11.0, capacity_break_rps=13.0, cost_per_1m_at_capacity=1.8, sweep=True)
    assert choose_cheapest([measured, near], reference="a")["choice"] == "a"  # [1.52, 1.8] overlaps [1.67, 2]


def test_without_cost_the_e2e_p95_bounds_and_no_qualifier_is_no_choice():
    rows = [row("a", parity=None, cost_per_1m_output_tokens=None, e2e_ms_p95_bounds=[110.0, 130.0]),
            row("b", cost_per_1m_output_tokens=None, e2e_ms_p95_bounds=[80.0, 100.0])]
    choice = choose_cheapest(rows, reference="a")
    assert (choice["choice"], choice["rule"]) == ("b", "latency")
    none = choose_cheapest([row("a", parity=None, verdict="FAIL")], reference="a")
    assert none["choice"] is None and none["verdict"] == "INCONCLUSIVE" and "a: its gate said FAIL" in none["choice_reason"]
    swept_nothing = row("s", parity=None, sweep=True, capacity_rps=None)
    assert choose_cheapest([swept_nothing], reference="s")["choice"] is None


def test_a_reference_that_does_not_qualify_lets_nothing_be_chosen_over_it():
    rows = [row("ref", parity=None, verdict="INCONCLUSIVE"), {**row("q4"), "cost_mode": "api"}]
    choice = choose_cheapest(rows, reference="ref")
    assert choice["choice"] is None and choice["exit_code"] == 3 and "reference ref does not qualify" in choice["choice_reason"]


def test_a_waived_review_makes_the_choice_needs_review_not_pass():
    rows = [row("ref", parity=None, review_waived=True), row("q8")]
    choice = choose_cheapest(rows, reference="ref")
    assert choice["choice"] == "ref" and choice["verdict"] == "NEEDS_REVIEW" and choice["exit_code"] == 3
    assert "--allow-pending" in choice["choice_reason"]


@pytest.mark.parametrize(("drafted", "why"), [(0, "proposed no draft token"), (None, "not counted")])
def test_a_speculative_variant_that_proposed_no_draft_token_is_not_speculative(drafted, why):
    rows = [row("ref", parity=None), row("spec", speculative="draft", draft_tokens=drafted)]
    choose_cheapest(rows, reference="ref")
    assert rows[1]["eligible"] is False and why in rows[1]["why_not"]


def test_swept_without_cost_the_capacity_range_decides_not_the_latency():
    """Under a sweep each variant's latency is taken at its own capacity step: ranking those E2E figures would
    pick the variant that takes less traffic."""
    slow = row("ref", cost_per_1m_output_tokens=None, capacity_rps=2.0, capacity_break_rps=3.0, e2e_ms_p95=300.0,
               parity=None, sweep=True)
    fast = row("q4", cost_per_1m_output_tokens=None, capacity_rps=10.0, capacity_break_rps=12.0, e2e_ms_p95=900.0,
               sweep=True)
    choice = choose_cheapest([slow, fast], reference="ref")
    assert choice["choice"] == "q4" and choice["rule"] == "capacity" and "[10, 12]" in choice["choice_reason"]


@pytest.mark.parametrize(("section", "field", "message"), [
    (f"variants:\n  - {{name: server-logs, server: llamacpp, {BASE}}}\n  - {{name: b, server: llamacpp, {BASE}}}\n",
     "variants[0].name", "file of the plan's own"),
    (f"variants:\n  - {{name: a, server: llamacpp, {BASE}}}\n  - {{name: b, server: endpoint, base_url: 'ftp//x', "
     "model: m}\n", "variants[1].base_url", "http(s) URL"),
])
def test_reserved_names_and_bad_endpoint_urls_are_refused(project, section, field, message):
    with pytest.raises(InputError) as caught:
        load_config(with_plan(project, section))
    assert caught.value.field == field and message in caught.value.message


def test_an_endpoint_variant_credential_is_masked_where_it_is_written(project):
    from releasegate.redaction import redact

    config = load_config(with_plan(project, f"variants:\n  - {{name: a, server: llamacpp, {BASE}}}\n"
                                            "  - {name: b, server: endpoint, base_url: 'http://u:s3cr3tpw@h:8000/v1?key=s3cr3tq', model: m}\n"))
    record = config.variants.variants[1].as_record()
    assert "s3cr3tpw" not in str(record) and "s3cr3tq" not in str(record)
    assert "s3cr3tpw" not in config.snapshot_text() and "s3cr3tq" not in config.snapshot_text()
    assert "s3cr3tpw" not in redact("the url had s3cr3tpw in it")


def test_a_speculative_variant_that_changes_greedy_answers_of_the_same_model_is_not_chosen(tmp_path):
    from releasegate.inputs.variant_plan import SpeculativeSpec, VariantSpec
    from releasegate.pipeline.served_variants import _row, _same_model

    ref = VariantSpec(name="f16", server="llamacpp", base=DEMO / "base", quant="f16")
    draft = VariantSpec(name="d", server="llamacpp", base=DEMO / "base", quant="f16",
                        speculative=SpeculativeSpec(kind="draft", draft=DEMO / "draft"))
    q8 = VariantSpec(name="q8", server="llamacpp", base=DEMO / "base", quant="q8_0",
                     speculative=SpeculativeSpec(kind="ngram"))
    assert _same_model(draft, ref) and not _same_model(q8, ref)
    target = {**row("d"), "run_id": "d", "run_dir": str(tmp_path), "sweep": False,
              "parity": {"quality_verdict": "PASS", "shared_cases": 10, "identical_outputs": 8, "rows": []}}
    from releasegate.record.records import RunDir

    def chosen(binds: bool) -> dict:
        judged = {**_row(draft, RunDir(tmp_path), target, binds), "draft_tokens": 40}  # it did speculate
        choose_cheapest([row("f16", parity=None), judged], reference="f16")
        return judged

    judged = chosen(True)
    assert not judged["eligible"] and "speculation changed 2 of 10 greedy answers" in judged["why_not"]
    assert chosen(False)["eligible"]  # sampled, or another model: not a rule


def test_a_variant_whose_answers_change_under_load_past_the_margin_is_not_chosen():
    """Greedy answers that batching changes: the cheaper variant's flip rate bound is over the margin."""
    rows = [row("f16", parity=None, cost_per_1m_output_tokens=3.0, load_flip_rate=0.0, load_flip_upper=0.015,
                flip_margin=0.02),
            row("q8", cost_per_1m_output_tokens=1.0, load_flip_rate=0.1, load_flip_upper=0.16, flip_margin=0.02)]
    rows = [{**r, "cost_mode": "api"} for r in rows]
    choice = choose_cheapest(rows, reference="f16")
    assert choice["choice"] == "f16"
    assert "change under load" in rows[1]["why_not"] and "0.16" in rows[1]["why_not"] and not rows[1]["eligible"]
    steady = [rows[0], {**rows[1], "load_flip_rate": 0.0, "load_flip_upper": 0.015, "why_not": None}]
    assert choose_cheapest(steady, reference="f16")["choice"] == "q8"
