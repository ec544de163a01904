"""The served-variant plan of `releasegate matrix` in every format: the terminal table, Markdown, HTML, JSON, CSV
and JUnit XML. Each variant (one model served at another quantisation, with a speculative draft, its LoRA merged
or applied per request, by another server) ran the same suites and load; one row per variant sets its quality
beside the reference's, its latency, capacity and cost there, and why it was or was not the one chosen.

Every text of the result is untrusted (variant names, reasons, server replies): `inert` in every cell, escaped
by each format (`md_label`, jinja2's autoescape, `xml_text`, `csv_text`), after the registered secrets were
replaced in the data (`redact_values`), so no format's escaping can hide one.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from importlib import resources
from typing import Any, Literal

from ..record.decided_results import VariantsResult, typed
from ..redaction import redact_values
from ..spreadsheet import csv_text
from ..text import inert, json_inert
from .capacity_section import objective_text
from .decided_models import Parity, ServedHow, ServedVariant, VariantsView
from .formatting import CSP, format_interval, format_money, format_value
from .junit import xml_text
from .markdown import md_label
from .paired_models import read_section
from .terminal import Col, FitTable

__all__ = ["VARIANT_FORMATS", "VARIANT_FILES", "COLUMNS", "variants_rows", "variants_table", "choice_line", "served_as",
           "render_variants"]

VARIANT_FILES = {"md": "variants.md", "html": "variants.html", "json": "variants.json", "csv": "variants.csv",
                 "junit": "variants.junit.xml"}
"""Each format `render_variants` renders, and the file it is written to in the matrix directory (variants.json:
the result itself, redacted)."""
VARIANT_FORMATS = tuple(VARIANT_FILES)

_Justify = Literal["left", "right"]

COLUMNS: tuple[tuple[str, str, str, _Justify], ...] = (
    # (key, label in files, header in the terminal, where the terminal justifies it)
    ("variant", "variant", "variant", "left"), ("served_as", "served as", "served as", "left"),
    ("verdict", "verdict", "verdict", "left"), ("accuracy", "accuracy", "acc", "right"),
    ("accuracy_delta", "Δ acc vs ref", "Δ acc", "right"), ("accuracy_p_value", "p (McNemar)", "p", "right"),
    ("identical", "identical outputs", "same", "right"), ("quality_verdict", "quality vs ref", "quality", "left"),
    ("format_compliance", "format", "fmt", "right"), ("forbidden_rate", "forbidden", "forb", "right"),
    ("ttft_ms_p50", "TTFT p50 ms", "TTFT50", "right"), ("ttft_ms_p95", "TTFT p95 ms", "TTFT95", "right"),
    ("tpot_ms_p50", "TPOT p50 ms", "TPOT50", "right"), ("tpot_ms_p95", "TPOT p95 ms", "TPOT95", "right"),
    ("e2e_ms_p95", "E2E p95 ms", "E2E95", "right"), ("e2e_ms_p99", "E2E p99 ms", "E2E99", "right"),
    ("output_tokens_per_s", "tok/s", "tok/s", "right"), ("capacity_rps", "capacity req/s", "cap r/s", "right"),
    ("cost_per_1m_output_tokens", "$/1M output tokens", "$/1M", "right"),
    ("cost_per_1m_at_capacity", "$/1M at capacity", "$/1M cap", "right"), ("acceptance", "acceptance", "accept", "right"),
    ("model_bytes", "size on disk", "size", "right"), ("peak_memory_bytes", "peak memory", "peak mem", "right"),
    ("chosen", "chosen", "chosen", "left"), ("why_not", "why not", "why not", "left"),
    ("verdict_reason", "gate said", "gate said", "left"),
    # quality under load (the load phase's answers, the flip probe), beside the quality phase's figures above
    ("accuracy_under_load", "accuracy under load", "acc load", "right"),
    ("load_flip_rate", "answers changed under load", "flips", "right"),
)
"""Every column, in order: the files' label and the terminal's shorter header for each."""
_FREE = ("served_as", "why_not", "verdict_reason")
_PARITY = ("accuracy_delta", "accuracy_p_value", "identical", "quality_verdict")
_SERVERS = {"llamacpp": "llama.cpp", "vllm": "vLLM", "endpoint": "endpoint"}
_LORA = {"merged": "merged", "per_request": "LoRA per request"}
_RULES = {"cost": "cost per 1M output tokens, shown lower than the reference's by its interval",
          "capacity": "capacity at the objective, shown higher than the reference's by its range",
          "latency": "E2E p95, shown lower than the reference's by its bounds",
          "None": "the reference (no figure every qualifying variant has)"}
_UNITS = ("B", "kB", "MB", "GB", "TB")


def _read(result: dict[str, Any] | VariantsView) -> VariantsView:
    """The result read once (its secrets replaced first); a view already read is kept."""
    if isinstance(result, VariantsView):
        return result
    return read_section(VariantsView, redact_values(result), "variants")


def variants_rows(result: dict[str, Any] | VariantsView) -> list[list[str]]:
    """One row of text cells per variant, every one inert (the reference's parity cells say 'reference')."""
    return _rows(_read(result))


def _rows(view: VariantsView) -> list[list[str]]:
    return [[inert(_cell(view, v, figures, key), keep="") for key, *_ in COLUMNS]
            for v, figures in ((v, v.figures()) for v in view.variants)]


def _cell(result: VariantsView, v: ServedVariant, figures: dict[str, Any], key: str) -> str:
    parity = v.parity
    if key in _PARITY:
        if parity is None:
            return "reference" if v.variant == result.reference else "—"
        return _parity_cell(parity, key)
    if key == "served_as":
        return _served_as(v)
    if key == "capacity_rps" and v.capacity_rps is not None and v.capacity_at_least:
        return f">= {format_value(v.capacity_rps)}"
    if key.startswith("cost_"):
        return format_money(figures.get(key))
    if key == "acceptance":
        return _acceptance(v)
    if key in ("model_bytes", "peak_memory_bytes"):
        return _bytes(figures.get(key))
    if key == "chosen":
        return "✓" if v.chosen else ""
    if key in ("why_not", "verdict_reason"):
        why_not, said = _why(v)
        return why_not if key == "why_not" else said
    value = figures.get(key)
    return value if isinstance(value, str) else format_value(value)


def _why(v: ServedVariant) -> tuple[str, str]:
    """A variant's reasons ('why not', 'gate said'), each said once: a variant held back by its gate's verdict says
    the gate's reason in 'why not' ('its gate said FAIL: 1 criterion(s) failed: accuracy'), and 'gate said' is left
    empty."""
    why, said = str(v.why_not or ""), str(v.verdict_reason or "")
    if why.startswith("its gate said") and said:
        return f"{why}: {said}", ""
    return why, said


def _parity_cell(parity: Parity, key: str) -> str:
    if key == "accuracy_delta":
        delta = parity.accuracy_delta
        text = "—" if delta is None else f"{delta:+.3f}"
        interval = format_interval(parity.accuracy_interval)
        return f"{text} {interval}" if interval else text
    if key == "accuracy_p_value":
        return format_value(parity.accuracy_p_value)
    if key == "identical":
        same, shared, share = parity.identical_outputs, parity.shared_cases, parity.identical_share
        if same is None or shared is None:
            return "—"
        return f"{same}/{shared}" + ("" if share is None else f" ({share:.0%})")
    return str(parity.quality_verdict or "—")


def served_as(variant: dict[str, Any] | ServedHow) -> str:
    """How the variant was served, in words: 'llama.cpp q8_0, merged, draft spec'."""
    return _served_as(variant if isinstance(variant, ServedHow) else read_section(ServedHow, variant, "variant"))


def _served_as(variant: ServedHow) -> str:
    server = str(variant.server or "")
    head = " ".join(str(p) for p in (_SERVERS.get(server, server), variant.quant) if p)
    parts = [head] if head else []
    if lora := variant.lora:
        parts.append(_LORA.get(lora, str(lora)))
    if spec := variant.speculative:
        parts.append(f"{spec} spec")
    return ", ".join(parts) or "—"


def _acceptance(v: ServedVariant) -> str:
    """Accepted over drafted tokens: '75% (90/120)'; '—' for a variant that drafts nothing."""
    rate, accepted, drafted = v.acceptance_rate, v.accepted_tokens, v.draft_tokens
    if rate is None:
        return "—"
    counts = f" ({format_value(accepted)}/{format_value(drafted)})" if accepted is not None and drafted is not None else ""
    return f"{rate:.0%}" + counts


def _bytes(n: Any) -> str:
    """A size in SI units, 3 significant digits: 1234567 -> '1.23 MB'; '—' when not measured."""
    if n is None:
        return "—"
    value, unit = float(n), 0
    while abs(value) >= 999.5 and unit < len(_UNITS) - 1:
        value, unit = value / 1000, unit + 1
    return f"{int(value)} B" if unit == 0 else f"{value:.3g} {_UNITS[unit]}"


def choice_line(result: dict[str, Any] | VariantsView) -> str:
    """'choice: q8_0 — <reason>', or 'no variant qualifies — <reason>', one inert line."""
    return _choice_line(_read(result))


def _choice_line(view: VariantsView) -> str:
    head = f"choice: {view.choice}" if view.choice is not None else "no variant qualifies"
    reason = view.choice_reason
    # every variant's reason is in its row ('why not'): the decision's list of them is not said a second time
    states = "; ".join(f"{v.variant}: {v.why_not or 'qualifies'}" for v in view.variants)
    if isinstance(reason, str) and states:
        reason = reason.removesuffix(f" ({states})")
    return inert(f"{head} — {reason}" if reason else head, keep="")


def _title(result: VariantsView) -> str:
    slo = result.slo
    capacity = f"; capacity at {objective_text(slo)}" if slo else ""
    return inert(f"served variants: {len(result.variants)}, reference {result.reference}{capacity}", keep="")


def _rule_line(result: VariantsView) -> str:
    rule = str(result.rule)
    return inert(f"chosen by: {_RULES.get(rule, rule)}; verdict {result.verdict} (exit "
                 f"{result.exit_code})", keep="")


def variants_table(result: dict[str, Any] | VariantsView) -> FitTable:
    """The terminal table, whole at any width (see `FitTable`): the reasons are free text, everything else whole."""
    view = _read(result)
    columns = [Col(short, justify, free=key in _FREE) for key, _, short, justify in COLUMNS]
    return FitTable(_title(view), columns, _rows(view))


def render_variants(result: dict[str, Any], fmt: str) -> str:
    """The result in `fmt` (one of VARIANT_FORMATS); registered secrets redacted in the data first. The result is
    read through `VariantsResult`: one without its decision is an error, never a report."""
    if fmt not in VARIANT_FORMATS:
        raise ValueError(fmt)
    plain = typed(VariantsResult, redact_values(result))
    return _json(plain) if fmt == "json" else _RENDERERS[fmt](_read(plain))


def _json(result: dict[str, Any]) -> str:
    # text from the variants escaped where a terminal would act on it: the same JSON value, safe to cat
    return json_inert(json.dumps(result, indent=2, ensure_ascii=False, default=str)) + "\n"


def _csv(result: VariantsView) -> str:
    return csv_text([[label for _, label, *_ in COLUMNS], *_rows(result)])


def _note(result: VariantsView) -> str:
    """What the figures are, with this result's margin, parity share and objective."""
    slo = result.slo
    objective = objective_text(slo) if slo else "no objective: no capacity was measured"
    share = result.min_parity_share
    return (
        "Quality is paired on the cases each variant shares with the reference (the same id, input and expected "
        "answer): Δ acc is its accuracy minus the reference's, with its interval; p is McNemar's test on the "
        f"paired cases; quality vs ref is non-inferiority at margin {format_value(result.margin)}, decided "
        f"only when at least {'—' if share is None else f'{share:.0%}'} of the reference's cases are shared. "
        "Identical outputs: shared cases whose greedy output is the same text. Capacity: the highest request rate "
        f"that met the objective ({objective}), '>=' when the sweep's top rate still met it. Cost: per 1M output "
        "tokens at the run's own load, and at capacity (the hourly price over the throughput there). Acceptance: accepted over drafted "
        "tokens, from the speculative server's counters. Sizes in SI units (1 MB = 10^6 bytes)."
    )


def _markdown(result: VariantsView) -> str:
    labels = [label for _, label, *_ in COLUMNS]
    lines = ["# Served variants", "", f"**{md_label(_choice_line(result))}**", "", md_label(_title(result)), "",
             md_label(_rule_line(result)), "", "| " + " | ".join(labels) + " |", "|" + "---|" * len(labels)]
    lines += ["| " + " | ".join(md_label(c) for c in row) + " |" for row in _rows(result)]
    return "\n".join([*lines, "", md_label(_note(result)), ""])


def _html(result: VariantsView) -> str:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined  # only for HTML
    from markupsafe import Markup

    folder = resources.files(__package__) / "templates"
    env = Environment(loader=FileSystemLoader(str(folder)), autoescape=True, undefined=StrictUndefined,
                      finalize=lambda v: inert(v, keep="") if isinstance(v, str) and not isinstance(v, Markup) else v)
    return env.get_template("variants.html.j2").render(
        csp=CSP, css=Markup((folder / "report.css").read_text("utf-8")), reference=result.reference,
        dir=result.dir, verdict=str(result.verdict or ""), choice=_choice_line(result),
        title=_title(result), rule=_rule_line(result), rows=_rows(result), note=_note(result),
        columns=[(label, justify == "right") for _, label, _, justify in COLUMNS])


def _junit(result: VariantsView) -> str:
    """One testsuite; one testcase per variant, failed when it is not eligible (why not), and one for the choice,
    failed unless the decision is PASS (no variant qualifies, or a waived review holds it). The chosen variant's
    system-out says so."""
    variants = result.variants
    failures = sum(not v.eligible for v in variants) + (result.verdict != "PASS")
    counts = {"tests": str(len(variants) + 1), "failures": str(failures), "errors": "0", "skipped": "0", "time": "0"}
    root = ET.Element("testsuites", {"name": "releasegate", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": "releasegate: served variants", **counts})
    props = ET.SubElement(suite, "properties")
    given = result.model_dump(include=set(_PROPERTIES))
    for name in _PROPERTIES:
        if given[name] is not None:
            ET.SubElement(props, "property", name=name, value=xml_text(given[name]))
    for v, row in zip(variants, _rows(result)):
        _variant_case(suite, v, dict(zip((key for key, *_ in COLUMNS), row)))
    choice = ET.SubElement(suite, "testcase", classname="releasegate.choice", name="choice", time="0")
    if result.verdict != "PASS":
        ET.SubElement(choice, "failure", message=xml_text(f"{result.verdict}: {_choice_line(result)}"), type="choice")
    else:
        ET.SubElement(choice, "system-out").text = xml_text(_choice_line(result))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


_PROPERTIES = ("reference", "choice", "choice_reason", "rule", "verdict", "exit_code", "dir")
"""The result's figures the JUnit suite names as its properties, in order."""


def _variant_case(suite: ET.Element, v: ServedVariant, cells: dict[str, str]) -> None:
    case = ET.SubElement(suite, "testcase", classname="releasegate.variants", name=xml_text(v.variant), time="0")
    details = "\n".join(f"{label}: {cells[key]}" for key, label, *_ in COLUMNS if key != "variant" and cells[key])
    if not v.eligible:
        failure = ET.SubElement(case, "failure", message=xml_text(v.why_not or "not eligible"), type="variant")
        failure.text = xml_text(details)
        return
    status = "chosen" if v.chosen else "eligible, not chosen"
    ET.SubElement(case, "system-out").text = xml_text(f"{status}\n{details}")


_RENDERERS: dict[str, Callable[[VariantsView], str]] = {"md": _markdown, "html": _html, "csv": _csv, "junit": _junit}
assert {*_RENDERERS, "json"} == set(VARIANT_FORMATS)
