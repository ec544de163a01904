"""The gate: a function of the run record and a rubric -> the gate report (verdict and metrics).

It scores every record from disk (reading the scores stored with it while what they were computed from is unchanged,
`scorers.stored`), so `releasegate gate RUN_DIR` with a changed rubric needs no model, and deciding again recomputes
only what changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..decision.criterion import CriterionResult, decide_criterion
from ..decision.gate import decide_gate
from ..gate.context import GateContext, GateInputs, run_facts
from ..gate.feature import GateFeature
from ..gate.gate_evidence import gate_evidence
from ..gate.health import run_problems, target_failure
from ..gate.quality_feature import DEFAULT_ERROR_GUARD, SUMMARY_METRICS
from ..gate.stability import draw_problems
from ..record.evidence import outcomes_once
from ..record.gate_report import GateReport, as_report
from . import features as _built_in  # noqa: F401  # registers the built-in features

__all__ = ["judge_run", "GateInputs", "SUMMARY_METRICS", "run_facts", "DEFAULT_ERROR_GUARD"]


def judge_run(inputs: GateInputs, features: Sequence[GateFeature] | None = None) -> GateReport:
    """The gate: each criterion of the rubric (and each default a feature adds) measured by the feature that
    serves its metric and decided by `decision.criterion`; then each feature's rule, in registry order (a
    baseline's rows, human approval, the judge's and the guard's calibration); then the run's verdict
    (`decision.gate`) and every feature's section of the report, validated once. Each record's attempts are
    worked out once (`outcomes_once`), not once per rate, phase and slice that counts them."""
    with outcomes_once():
        return _judged(GateContext(inputs, features))


def _judged(ctx: GateContext) -> GateReport:
    results = [decide_criterion(ctx.evidence(c)) for c in ctx.criteria]
    for feature in ctx.features:
        results = feature.rule(ctx, results) if feature.rule is not None else results
    sections: dict[str, Any] = {}
    for feature in ctx.features:
        ctx.sections[feature.name] = feature.section(ctx, results) if feature.section is not None else {}
        sections.update(ctx.sections[feature.name])
    summaries = _summaries(ctx, results)
    return as_report({**_verdict(ctx, results), **sections, **({"sections": summaries} if summaries else {})})


def _verdict(ctx: GateContext, results: list[CriterionResult]) -> dict[str, Any]:
    """The run's verdict and what it speaks for: the report's head."""
    info, records, load, inputs = ctx.info, ctx.records, ctx.inputs.load_records, ctx.inputs
    problems = run_problems(info, records, load) + draw_problems(info, records, inputs.draws) + list(inputs.edited)
    evidence = gate_evidence(info, records, load, results, review_pending=ctx.review_pending,
                             allow_pending=inputs.allow_pending, problems=problems,
                             target_error=target_failure(ctx.asked, load, inputs.ledger), client_lag_ms=ctx.lag_ms,
                             rubric_file=inputs.rubric_file or ctx.rubric.name, overrides=tuple(info.overrides or ()),
                             inputs_changed=tuple(inputs.inputs_changed), allow_insufficient=ctx.rubric.allow_insufficient,
                             unplaced_domains=ctx.unplaced_domains,
                             unplaced_reviewed=ctx.rubric.review.unplaced_domains == "require",
                             ledger=inputs.ledger)
    return {
        "incomplete": "; ".join(problems) or None, "target_error": evidence.health.target_error,
        "run_id": info.run_id, "target": info.target, "rubric": ctx.rubric.name, **decide_gate(evidence).as_dict(),
        **({"computed": info.computed} if info.computed is not None else {}),
        "population": {"planned": evidence.population.planned, "evaluated": evidence.population.evaluated,
                       "cuts": list(evidence.population.cuts)},
        "obligations": {"review_waived": evidence.obligations.review_waived,
                        "review_pending": evidence.obligations.review_pending,
                        **({"unplaced_domains": list(ctx.unplaced_domains)} if ctx.unplaced_domains else {})},
        "criteria": [r.as_dict() for r in results],
    }


def _summaries(ctx: GateContext, results: list[CriterionResult]) -> list[dict[str, Any]]:
    """Every feature's summary rows, named by the feature, for the renderers to show as they are."""
    out = []
    for feature in ctx.features:
        summary = feature.summary(ctx, results) if feature.summary is not None else {}
        if summary:
            out.append({"feature": feature.name, **summary})
    return out
