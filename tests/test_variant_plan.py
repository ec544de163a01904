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
            "capacity_at_least": False, "cost_per_1m_at_capacity": None, "cost_per_1m_output_tokens": 1.0,
            "e2e_ms_p95": 100.0, "why_not": None,
            "parity": {"quality_verdict": "PASS", "accuracy_delta": 0.0, "accuracy_interval": [-0.01, 0.01],
                       "margin": 0.02, "identical_outputs": 9, "shared_cases": 10}}
    return {**base, **over}


def test_the_choice_is_the_cheapest_that_qualifies():
    rows = [row("f16", parity=None, cost_per_1m_output_tokens=3.0), row("q8", cost_per_1m_output_tokens=2.0),
            row("q4", cost_per_1m_output_tokens=1.0, parity={**row("x")["parity"], "quality_verdict": "FAIL"}),
            row("spec", cost_per_1m_output_tokens=0.5, verdict="FAIL")]
    choice = choose_cheapest(rows, reference="f16")
    assert choice["choice"] == "q8" and choice["rule"] == "cost"
    assert "non-inferior to f16" in choice["choice_reason"] and "9/10 outputs identical" in choice["choice_reason"]


def test_cost_at_capacity_decides_when_every_candidate_has_it_and_a_floor_is_an_upper_bound():
    measured = row("a", capacity_rps=10.0, cost_per_1m_at_capacity=2.0)
    floor = row("b", capacity_rps=20.0, capacity_at_least=True, cost_per_1m_at_capacity=1.0)
    assert choose_cheapest([measured, floor], reference="a")["choice"] == "b"  # at most 1.0 < 2.0: surely cheaper
    floor_above = row("c", capacity_rps=5.0, capacity_at_least=True, cost_per_1m_at_capacity=3.0)
    choice = choose_cheapest([measured, floor_above], reference="a")
    assert choice["choice"] == "a" and "cannot order" in choice["choice_reason"]
    assert choice["rule"] == "cost_at_capacity"


def test_without_cost_the_lowest_e2e_p95_and_no_qualifier_is_no_choice():
    rows = [row("a", cost_per_1m_output_tokens=None, e2e_ms_p95=120.0), row("b", cost_per_1m_output_tokens=None, e2e_ms_p95=90.0)]
    assert choose_cheapest(rows, reference="a") | {"choice_reason": ""} == {"choice": "b", "rule": "e2e_p95", "choice_reason": ""}
    none = choose_cheapest([row("a", verdict="FAIL", why_not="its gate said FAIL")], reference="a")
    assert none["choice"] is None and "no variant qualifies" in none["choice_reason"] and "a: its gate said FAIL" in none["choice_reason"]
    swept_nothing = row("s", sweep=True, capacity_rps=None)
    assert choose_cheapest([swept_nothing], reference="s")["choice"] is None


def test_swept_without_cost_the_highest_capacity_wins_not_the_lowest_latency():
    """Under a sweep each variant's latency is taken at its own capacity step: ranking those E2E figures would
    pick the variant that takes less traffic."""
    slow = row("ref", cost_per_1m_output_tokens=None, capacity_rps=2.0, e2e_ms_p95=300.0, parity=None)
    fast = row("q4", cost_per_1m_output_tokens=None, capacity_rps=10.0, e2e_ms_p95=900.0)
    choice = choose_cheapest([slow, fast], reference="ref")
    assert choice["choice"] == "q4" and choice["rule"] == "capacity" and "10 req/s" in choice["choice_reason"]


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

    judged = _row(draft, RunDir(tmp_path), target, True)
    assert not judged["eligible"] and "speculation changed 2 of 10 greedy answers" in judged["why_not"]
    assert _row(draft, RunDir(tmp_path), target, False)["eligible"]  # sampled, or another model: not a rule
