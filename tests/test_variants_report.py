"""The served-variant report in every format: each variant and the choice appear, CSV and JUnit parse back with
one row or testcase per variant, JSON round-trips, hostile names stay text, registered secrets never show, and
the terminal table reads whole in an 80-column CI log."""

from __future__ import annotations

import copy
import csv
import io
import json
import re
import xml.etree.ElementTree as ET

import pytest
from rich.console import Console

from releasegate.redaction import REDACTED, add_secret
from releasegate.report.variants import (
    COLUMNS,
    VARIANT_FORMATS,
    choice_line,
    render_variants,
    served_as,
    variants_rows,
    variants_table,
)
from releasegate.spreadsheet import neutralise
from test_tables import _assert_whole, _words

LABELS = [label for _, label, *_ in COLUMNS]
FIGURES = ("accuracy", "format_compliance", "forbidden_rate", "error_rate", "ttft_ms_p50", "ttft_ms_p95", "ttft_ms_p99",
           "tpot_ms_p50", "tpot_ms_p95", "tpot_ms_p99", "e2e_ms_p50", "e2e_ms_p95", "e2e_ms_p99", "output_tokens_per_s",
           "cost_per_1m_output_tokens", "capacity_rps", "cost_per_1m_at_capacity", "model_bytes", "peak_memory_bytes")
REASON = ("q8_0: passes its gate, quality non-inferior to f16 (accuracy -0.010, 95% bound -0.018 within margin 0.02), "
          "the lowest cost per 1M output tokens at capacity ($0.0123)")
SPEC_WHY = "quality not shown non-inferior to f16 (95% bound -0.041 beyond margin 0.02)"


def _parity(delta: float, verdict: str, identical: int) -> dict:
    return {"shared_cases": 40, "shared_share": 1.0, "identical_outputs": identical, "identical_share": identical / 40,
            "accuracy_delta": delta, "accuracy_interval": [delta - 0.031, delta + 0.02], "accuracy_p_value": 0.0313,
            "margin": 0.02, "quality_verdict": verdict, "rows": [{"metric": "accuracy", "verdict": verdict.lower()}]}


def _variant(name: str, **changes) -> dict:
    base = {
        "variant": name, "server": "llamacpp", "quant": name, "lora": "merged", "speculative": None,
        "model_file": f"build/variants/demo/merged-{name}.gguf", "model_bytes": 1_834_567, "model_sha256": "ab" * 32,
        "peak_memory_bytes": 123_456_789, "verdict": "PASS", "verdict_reason": "every criterion passed",
        "run_id": name, "run_dir": f"reports/demo-variants/{name}", "accuracy": 0.9, "format_compliance": 1.0,
        "forbidden_rate": 0.0, "error_rate": 0.0, "ttft_ms_p50": 41.2, "ttft_ms_p95": 88.31, "ttft_ms_p99": 120.5,
        "tpot_ms_p50": 8.125, "tpot_ms_p95": 11.7, "tpot_ms_p99": 14.2, "e2e_ms_p50": 410.0, "e2e_ms_p95": 801.2,
        "e2e_ms_p99": 1002.3, "output_tokens_per_s": 123.4, "cost_per_1m_output_tokens": 0.0456,
        "capacity_rps": 12.5, "capacity_at_least": False, "cost_per_1m_at_capacity": 0.0123,
        "acceptance_rate": None, "draft_tokens": None, "accepted_tokens": None,
        "parity": _parity(-0.01, "PASS", 38), "eligible": True, "why_not": None, "chosen": False,
    }
    return {**base, **changes}


def _result(choice: str | None = "q8_0") -> dict:
    """The reference, q8_0 (chosen unless `choice` is None) and a speculative f16 whose quality did not hold."""
    variants = [
        _variant("f16", parity=None, model_bytes=14_000_000_000, cost_per_1m_at_capacity=0.0301),
        _variant("q8_0", chosen=choice == "q8_0", eligible=choice == "q8_0",
                 why_not=None if choice == "q8_0" else "its gate said FAIL",
                 verdict="PASS" if choice == "q8_0" else "FAIL"),
        _variant("f16-draft", quant="f16", speculative="draft", acceptance_rate=0.75, draft_tokens=120,
                 accepted_tokens=90, parity=_parity(-0.021, "INCONCLUSIVE", 31), eligible=False, why_not=SPEC_WHY,
                 capacity_rps=20.0, capacity_at_least=True),
    ]
    return {"kind": "served_variants", "reference": "f16", "choice": choice,
            "choice_reason": REASON if choice else "no variant passes its gate with quality non-inferior to f16",
            "rule": "cost", "verdict": "PASS" if choice else "INCONCLUSIVE", "exit_code": 0 if choice else 3,
            "verdict_reason": REASON if choice else "no choice: the reference f16 does not qualify",
            "margin": 0.02, "min_parity_share": 0.9, "slo": {"ttft_ms_p95": 200, "tpot_ms_p95": 50},
            "dir": "reports/demo-variants", "variants": variants}


def _terminal(result: dict, width: int) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=False, highlight=False)
    console.print(variants_table(result))
    return buf.getvalue()


def _junit(result: dict) -> ET.Element:
    suite = ET.fromstring(render_variants(result, "junit").split("?>", 1)[1]).find("testsuite")
    assert suite is not None
    return suite


def _csv(result: dict) -> list[dict[str, str]]:
    reader = csv.DictReader(io.StringIO(render_variants(result, "csv"), newline=""))
    assert reader.fieldnames == LABELS
    return list(reader)


# ------------------------------------------------------------------------------------------------- the cells


def test_rows_say_how_each_variant_was_served_and_what_it_measured():
    rows = {r["variant"]: r for r in (dict(zip(LABELS, row)) for row in variants_rows(_result()))}
    ref, chosen, spec = rows["f16"], rows["q8_0"], rows["f16-draft"]
    assert [ref[k] for k in ("Δ acc vs ref", "p (McNemar)", "identical outputs", "quality vs ref")] == ["reference"] * 4
    assert chosen["Δ acc vs ref"] == "-0.010 [-0.041, 0.01]" and chosen["p (McNemar)"] == "0.0313"
    assert chosen["identical outputs"] == "38/40 (95%)" and spec["identical outputs"] == "31/40 (78%)"
    assert (chosen["served as"], spec["served as"]) == ("llama.cpp q8_0, merged", "llama.cpp f16, merged, draft spec")
    assert (chosen["chosen"], spec["chosen"], ref["chosen"]) == ("✓", "", "")
    assert spec["acceptance"] == "75% (90/120)" and chosen["acceptance"] == "—"
    assert (spec["capacity req/s"], chosen["capacity req/s"]) == (">= 20", "12.5")
    assert (chosen["$/1M at capacity"], chosen["$/1M output tokens"]) == ("$0.0123", "$0.0456")
    assert (ref["size on disk"], chosen["size on disk"], chosen["peak memory"]) == ("14 GB", "1.83 MB", "123 MB")
    assert spec["why not"] == SPEC_WHY and chosen["why not"] == ""
    assert chosen["TPOT p50 ms"] == "8.125" and chosen["E2E p99 ms"] == "1002"


def test_figures_not_measured_read_as_a_dash():
    result = _result()
    result["variants"][1].update({key: None for key in FIGURES}, parity={**_parity(-0.01, "PASS", 38),
                                 "accuracy_delta": None, "accuracy_interval": None, "accuracy_p_value": None})
    row = dict(zip(LABELS, variants_rows(result)[1]))
    for label in ("accuracy", "format", "forbidden", "TTFT p50 ms", "TTFT p95 ms", "TPOT p95 ms", "E2E p95 ms",
                  "tok/s", "capacity req/s", "$/1M output tokens", "$/1M at capacity", "size on disk", "peak memory",
                  "Δ acc vs ref", "p (McNemar)"):
        assert row[label] == "—", label
    assert "None" not in render_variants(result, "md") + render_variants(result, "csv")


def test_served_as_names_the_server_quant_lora_and_speculation():
    assert served_as({"server": "vllm", "quant": None, "lora": "per_request", "speculative": "ngram"}) == \
        "vLLM, LoRA per request, ngram spec"
    assert served_as({"server": "endpoint", "quant": None, "lora": None, "speculative": None}) == "endpoint"


def test_choice_line_names_the_choice_or_says_none_qualifies():
    assert choice_line(_result()) == f"choice: q8_0 — {REASON}"
    assert choice_line(_result(None)) == "no variant qualifies — no variant passes its gate with quality non-inferior to f16"


# ----------------------------------------------------------------------------------------------- every format


@pytest.mark.parametrize("fmt", VARIANT_FORMATS)
@pytest.mark.parametrize("choice", ["q8_0", None])
def test_every_format_shows_each_variant_and_the_choice(fmt, choice):
    text = render_variants(_result(choice), fmt)
    for name in ("f16", "q8_0", "f16-draft"):
        assert name in text.replace("\\_", "_"), (fmt, name)
    said = "choice: q8_0" if choice else "no variant qualifies"
    if fmt in ("md", "html", "junit"):
        assert said in text.replace("\\_", "_"), fmt
    if fmt in ("md", "csv", "html", "junit"):  # a CSV cell neutralised wherever a spreadsheet could start a cell
        assert "75% (90/120)" in text and (neutralise(SPEC_WHY) if fmt == "csv" else SPEC_WHY) in text, fmt


def test_markdown_leads_with_the_choice_in_bold_and_explains_the_figures():
    md = render_variants(_result(), "md")
    assert md.startswith("# Served variants\n\n**choice: q8\\_0 — ")
    table = [line for line in md.splitlines() if line.startswith("|")]
    assert len(table) == 2 + 3 and all(len(re.split(r"(?<!\\)\|", line)) == len(LABELS) + 2 for line in table)
    assert "McNemar" in md and "greedy" in md and "accepted over drafted" in md and "P95 TTFT &lt;= 200 ms" in md


def test_html_is_one_page_with_a_policy_and_no_script():
    page = render_variants(_result(), "html")
    assert page.startswith("<!doctype html>") and 'http-equiv="Content-Security-Policy"' in page
    assert "script-src &#39;none&#39;" in page and "<script" not in page
    assert page.count("<tr>") == len(LABELS)  # a column per variant, a row per figure (the header: variant)


def test_csv_parses_back_one_row_per_variant():
    rows = _csv(_result())
    assert [r["variant"] for r in rows] == ["f16", "q8_0", "f16-draft"]
    assert [r["chosen"] for r in rows] == ["", "✓", ""]
    assert rows[1]["Δ acc vs ref"] == "'-0.010 [-0.041, 0.01]"  # a cell starting with '-' is text to a spreadsheet


@pytest.mark.parametrize(("choice", "failed"), [("q8_0", {"f16-draft"}), (None, {"q8_0", "f16-draft", "choice"})])
def test_junit_fails_each_ineligible_variant_and_a_missing_choice(choice, failed):
    suite = _junit(_result(choice))
    cases = {tc.get("name"): tc for tc in suite.iter("testcase")}
    assert set(cases) == {"f16", "q8_0", "f16-draft", "choice"} and suite.get("tests") == "4"
    assert {name for name, tc in cases.items() if tc.find("failure") is not None} == failed
    assert suite.get("failures") == str(len(failed))
    failure = cases["f16-draft"].find("failure")
    assert failure is not None and failure.get("message") == SPEC_WHY
    if choice:
        out = cases["q8_0"].find("system-out")
        assert out is not None and out.text and out.text.startswith("chosen\n")
    else:
        message = cases["choice"].find("failure").get("message")  # type: ignore[union-attr]
        assert message.startswith("INCONCLUSIVE: no variant qualifies — ")


def test_json_round_trips():
    for choice in ("q8_0", None):
        result = _result(choice)
        assert json.loads(render_variants(result, "json")) == result


def test_an_unknown_format_is_a_value_error():
    with pytest.raises(ValueError, match="pdf"):
        render_variants(_result(), "pdf")


# ------------------------------------------------------------------------------------- hostile text and secrets


def _hostile() -> dict:
    result = _result()
    result["variants"][1]["variant"] = "<script>x</script>"
    result["variants"][2]["variant"] = "\x1b[31mred"
    result["variants"][2]["why_not"] = "\x1b]8;;http://evil.example\x07link\x1b]8;;\x07 \u202eevil"
    result["choice"] = "<script>x</script>"
    result["choice_reason"] = "<b>bold</b> \x1b[2J"
    return result


def test_hostile_names_never_reach_any_format_raw():
    result = _hostile()
    texts = {fmt: render_variants(result, fmt) for fmt in VARIANT_FORMATS}
    texts["terminal"] = _terminal(result, 80) + _terminal(result, 200)
    texts["choice"] = choice_line(result)
    for where, text in texts.items():
        assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text, where
        if where not in ("json", "csv", "terminal", "choice"):
            assert "<script>" not in text and "<b>" not in text, where
    assert "&lt;script&gt;x&lt;/script&gt;" in texts["html"] and "&lt;script&gt;" in texts["md"]
    assert "␛[31mred" in texts["terminal"] and "␛[31mred" in texts["html"]
    assert json.loads(texts["json"]) == result  # escaped in the text, the same value


def test_a_registered_secret_is_redacted_everywhere():
    secret = "sk-variant-report-secret-0123456789"
    add_secret(secret)
    result = _result()
    result["variants"][1]["verdict_reason"] = f"server said: bad key {secret}"
    result["choice_reason"] = f"chosen although {secret}"
    kept = copy.deepcopy(result)
    texts = {fmt: render_variants(result, fmt) for fmt in VARIANT_FORMATS}
    texts["terminal"] = _terminal(result, 200)
    texts["choice"] = choice_line(result)
    for where, text in texts.items():
        assert secret not in text, where
        assert REDACTED.replace("[", "\\[").replace("]", "\\]") in text or REDACTED in text, where
    assert result == kept  # the caller's data is left as it was


# ------------------------------------------------------------------------------------------------ the terminal


@pytest.mark.parametrize("width", [80, 200])
def test_the_terminal_table_reads_whole(width):
    result = _result()
    text = _terminal(result, width)
    free = {key for key, *_ in COLUMNS if key in ("served_as", "why_not", "verdict_reason")}
    rows = {row[0]: [c for (key, *_), c in zip(COLUMNS, row) if key not in free and c]
            for row in variants_rows(result)}
    _assert_whole(text, rows, width=width)
    for row in variants_rows(result):  # free text reads as it is, whole, wrapped at spaces at most
        for (key, *_), cell in zip(COLUMNS, row):
            if key in free and cell:
                assert _words(cell) in _words(text), (cell, text)


def test_a_choice_held_by_a_waived_review_fails_the_choice_testcase_and_says_why():
    result = {**_result(), "verdict": "NEEDS_REVIEW", "exit_code": 3,
              "choice_reason": REASON + "; required human review of f16 was waived (--allow-pending)"}
    suite = ET.fromstring(render_variants(result, "junit")).find("testsuite")
    choice = next(tc for tc in suite.iter("testcase") if tc.get("name") == "choice")
    assert choice.find("failure").get("message").startswith("NEEDS_REVIEW: choice: q8_0")
    for fmt in ("md", "html", "csv", "json"):
        text = render_variants(result, fmt)
        assert "waived" in text or fmt == "csv", fmt


def test_a_result_without_its_decision_is_refused_not_rendered():
    from pydantic import ValidationError

    result = _result()
    del result["verdict_reason"]
    with pytest.raises(ValidationError):
        render_variants(result, "md")
