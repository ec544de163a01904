"""The gate: a function of the run record and a rubric -> the gate report (verdict and metrics).

It scores every record from disk (reading the scores stored with it while what they were computed from is unchanged,
`scorers.stored`), so `releasegate gate RUN_DIR` with a changed rubric needs no model, and deciding again recomputes
only what changed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..decision.gate import decide_gate
from ..decision.latency import widened_latency
from ..extras import require
from ..gate.baseline import baseline_comparison, comparison_results
from ..gate.cache_probe_gate import CACHE_METRICS, cache_metric, cache_section
from ..gate.capacity import STEP_TAG, capacity_metric, capacity_view, gated_records, judge_capacity
from ..gate.case_detail import case_reviews, failing_cases
from ..gate.criteria import CriterionResult, Undecided, judge_criterion
from ..gate.gate_evidence import gate_evidence
from ..gate.health import (
    client_batched_share,
    client_kind,
    client_lag_ms,
    client_lateness_ms,
    client_load,
    client_saturation,
    phase_counts,
    run_problems,
    target_failure,
)
from ..gate.latency_source import latency_source, quality_source
from ..gate.load_quality import LOAD_PROBE_METRICS, flip_table, load_answers, load_metric, step_quality
from ..gate.safety_delta import forbidden_delta
from ..gate.stability import DRAW_METRICS, case_draws, draw_metric, draw_problems, draws_table, per_draw_rate
from ..inputs.rubric import Criterion, Rubric
from ..llm_judge.gating import corrected_by_reviewers, judge_section, undecided_by_judge
from ..llm_judge.guard_gating import corrected_metrics, guard_corrected, guard_section, guard_view
from ..record.gate_report import typed_report
from ..record.judge_verdicts import Verdicts
from ..record.metrics import (
    ERROR_METRICS,
    KNOWN_METRICS,
    LOAD_PHASE_METRICS,
    batched_stream,
    compute_metric,
    is_phased,
    latency_exclusions,
    latency_phase,
    measured,
    phase_records,
    select,
    slices_of,
    stream_timed,
    timing_derived_cost,
)
from ..record.records import CaseRecord, RunInfo
from ..record.review_labels import LabelEdit
from ..review.summary import summarize_review
from ..scorers import CorpusScores, score_records
from ..scorers.evaluate_metric import evaluate_value
from ..stats.sample_weights import stratum_counts

__all__ = ["gate_run", "SUMMARY_METRICS", "run_facts", "DEFAULT_ERROR_GUARD"]

SUMMARY_METRICS = (
    "accuracy", "format_compliance", "forbidden_rate", "error_rate", "error_rate_quality", "error_rate_load",
    "ttft_ms_p50", "ttft_ms_p95", "ttft_ms_p99", "tpot_ms_p50", "tpot_ms_p95", "tpot_ms_p99",
    "itl_ms_p50", "itl_ms_p95", "itl_ms_p99", "e2e_ms_p50", "e2e_ms_p95", "e2e_ms_p99",
    "send_lag_ms_p50", "send_lag_ms_p99", "ttft_sched_ms_p95", "e2e_sched_ms_p95", "output_tokens_per_s", "output_tokens_per_s_request_p50",
    "cost_per_1m_output_tokens", "cost_usd_total", "capacity_rps",
)
_SLICE_METRICS = ("accuracy", "format_compliance", "forbidden_rate", "error_rate", "ttft_ms_p95", "tpot_ms_p95")


DEFAULT_ERROR_GUARD = 0.01
"""With no error-rate criterion in the rubric, the gate adds `error_rate <= 0.01` over every phase."""


def run_facts(info: RunInfo, records: list[CaseRecord], cost: dict | None, *, phase: str = "quality") -> dict:
    """Run-level facts metrics need: generation time, system throughput, cost config. Tokens and seconds come
    from the same phase (`both`: the two phases' tokens over the two phases' seconds)."""
    tokens = sum(r.tokens.output or 0 for r in measured(records))  # cached responses took no generation time
    load_seconds = (info.load_phase or {}).get("seconds")
    seconds = {"quality": info.generation_seconds, "load": load_seconds}.get(phase)
    if phase == "both":
        seconds = (info.generation_seconds or 0.0) + (load_seconds or 0.0) if info.generation_seconds and load_seconds else None
    return {
        "generation_seconds": seconds,
        "system_output_tokens_per_s": tokens / seconds if seconds else None,
        "cost": cost,
        "all_records": True,
    }


def gate_run(
    info: RunInfo, records: list[CaseRecord], rubric: Rubric, cost: dict | None, load_records: list[CaseRecord] | None = None,
    *, labels: list[LabelEdit] | None = None, allow_pending: bool = False, verdicts: Verdicts | None = None, edited: Sequence[str] = (),
    corpus_scores: CorpusScores | None = None, scores: dict[str, dict] | None = None, rubric_file: str = "",
    inputs_changed: Sequence[str] = (), draws: list[CaseRecord] | None = None,
) -> dict:
    """Score, measure and gate a run; return the report (a `GateReport` in its JSON form: what report.json holds).

    Quality metrics come from the quality cases; latency, throughput and cost from the phase the rubric's
    `latency_from` names (auto: the load phase when one ran); error rates from every phase. Records are scored
    per phase: a load request never shares a score with a quality case of the same id. `labels` are the run's
    human labels (reviews.jsonl): approval below the rubric's minimum fails, and pending required review gives
    NEEDS_REVIEW unless `allow_pending`. `verdicts` are the run's LLM-judge verdicts (`llm_judge.run_verdicts`):
    judge-scored answers without one are unknown, and criteria they feed are insufficient while the judge is not
    calibrated against the reviewers' labels. Run health (see `health`; `edited`: the run's own files edited since
    releasegate sealed them, `record.seal.edited_evidence`) and target failure override the criteria.
    `corpus_scores` (`scorers.CorpusScores`): the run's stored `evaluate` values, read where they match and given
    the values computed here; without it every value is computed. `scores`: the records' scores when the caller
    has them already (`scorers.scored_run`, by the same forbidden rules and verdicts), so a command scores once.
    `draws`: the repeated draws (draws.jsonl, `generation.repeats`): quality rates are then per draw, bounded per
    case, and `gate.stability` measures the draws' criteria."""
    load_records = load_records or []
    if scores is None:
        scores = score_records(records, rubric.forbidden, verdicts)  # the quality phase's
    phase = latency_phase(rubric.latency_from, load_records)
    # a capacity sweep is judged at its capacity: latency, throughput and cost from that step, error rates from
    # the steps at or below it (those above were meant to break the objective)
    sweep = capacity_view(info, load_records, rubric.max_client_lag_share)
    gated_load, timed_load = gated_records(sweep, load_records)
    info_at = _at_capacity(info, sweep)
    timed = phase_records(phase, records, timed_load)
    facts = {**run_facts(info_at, timed, cost, phase=phase), "strata": stratum_counts(records)}  # sample weights
    evaluate_values = _evaluate_metrics(rubric, corpus_scores)
    asked = records + (draws or [])  # the quality phase's requests: every repeated draw is one too
    by_phase = {"error_rate": asked + gated_load, "error_rate_quality": asked, "error_rate_load": gated_load}
    found, under_load = case_draws(info, records, draws or [], verdicts), load_answers(records, timed_load)

    def measure(name: str, slice_: dict | None, confidence: float | None = None, phase: str = "quality"):
        stable = _stability(name, select(records, slice_), phase, confidence or 0.95) if name in _STABLE else None
        if stable is not None:
            return stable
        if name == "capacity_rps":
            return capacity_metric(sweep)
        if name in CACHE_METRICS:
            return cache_metric(name, info.response_cache_probe, confidence)
        if name == "forbidden_rate_delta":
            return forbidden_delta(rubric.baseline, rubric.forbidden, records, scores, slice_, confidence or 0.95,
                                   getattr(info, "guards", None))
        source = by_phase[name] if name in by_phase else (timed if is_phased(name) else records)
        chosen = select(source, slice_)
        if name in evaluate_values:
            return evaluate_values[name](chosen)
        return compute_metric(name, chosen, scores, {**facts, "all_records": not slice_, "confidence": confidence})

    def _stability(name: str, chosen: list, phase: str, confidence: float):
        """The criteria over draws and under load; a quality rate under repeats per draw (None: another metric)."""
        if name in DRAW_METRICS:
            return draw_metric(name, chosen, found, scores, rubric.forbidden, confidence, facts["strata"])
        if name in LOAD_PROBE_METRICS or (phase == "load" and name in LOAD_PHASE_METRICS):
            return load_metric(name, chosen, under_load, scores, rubric.forbidden, confidence, facts["strata"], info)
        if found.repeated and name in LOAD_PHASE_METRICS:
            each = {r.case_id: found.by_case.get(r.case_id, [r]) for r in chosen}
            return per_draw_rate(name, chosen, each, scores, rubric.forbidden, confidence, found.problem(),
                                 strata=facts["strata"], verdicts=found.verdicts)
        return None

    criteria = rubric.criteria + _default_guards(rubric)
    results = [_capacity_cause(judge_capacity(c, sweep) if c.metric == "capacity_rps"  # the range the sweep showed
               else _named(judge_criterion(c, measure(c.metric, c.slice, c.confidence, c.phase)))) for c in criteria]
    lag, client = client_lag_ms(info, phase), client_kind(info, phase)
    saturated = client_saturation(lag, measure("ttft_ms_p50", None).value, rubric.max_client_lag_share,
                                  **client_load(info, phase, timed))  # a busy machine told from a busy client
    lateness = client_lateness_ms(info, phase, timed)
    if lateness:  # latency bounds widened by the client's lateness, decided on them
        results = [_widened(r, lateness) for r in results]
    if saturated and lag is not None:  # throughput and self-hosted cost: no bound to widen
        results = [_undecided(r, saturated) if _client_bound(r, lag, client, cost) else r for r in results]
    batched = batched_stream(client_batched_share(info, phase), rubric.max_itl_batched_share)
    if batched:
        results = [_undecided(r, batched) if stream_timed(r.criterion.metric) else r for r in results]
    comparison = baseline_comparison(rubric, records, verdicts, info, found)
    if comparison is not None:
        results += comparison_results(comparison)
    review = summarize_review(rubric.review, records, scores, labels or [], allow_pending=allow_pending)
    results += review.results
    judge = judge_section(info, records, scores, labels, rubric, verdicts)
    results = corrected_by_reviewers(undecided_by_judge(results, records, scores, judge), records, scores, judge,
                                     labels or [], rubric.review)
    guard = guard_section(records, scores, labels, rubric)
    view = guard_view(records, scores, guard, labels or [], rubric, found)  # the guard-corrected forbidden rate
    results = guard_corrected(results, records, scores, guard, labels or [], rubric.review, view=view,
                              comparison=comparison, rubric=rubric)
    problems = run_problems(info, records, load_records) + draw_problems(info, records, draws or []) + list(edited)
    evidence = gate_evidence(info, records, load_records, results, review_pending=review.pending,
                             allow_pending=allow_pending, problems=problems, target_error=target_failure(asked, load_records),
                             client_lag_ms=lag, rubric_file=rubric_file or rubric.name, overrides=tuple(info.overrides or ()),
                             inputs_changed=tuple(inputs_changed), allow_insufficient=rubric.allow_insufficient)
    decided = decide_gate(evidence)
    failing = failing_cases(records, scores, limit=None, reviews=case_reviews(labels or []))
    return typed_report({
        "incomplete": "; ".join(problems) or None,
        "target_error": evidence.health.target_error,
        "comparison": comparison,
        "run_id": info.run_id,
        "target": info.target,
        "rubric": rubric.name,
        **decided.as_dict(),
        "population": {"planned": evidence.population.planned, "evaluated": evidence.population.evaluated,
                       "cuts": list(evidence.population.cuts)},
        "obligations": {"review_waived": evidence.obligations.review_waived,
                        "review_pending": evidence.obligations.review_pending},
        "criteria": [r.as_dict() for r in results],
        "latency_from": phase,
        "latency_source": latency_source(info, records, phase, sweep),
        "slices_latency_source": quality_source(info, records),
        "metrics": corrected_metrics({name: measure(name, None).as_dict()
                                      for name in SUMMARY_METRICS + (CACHE_METRICS if info.response_cache_probe else ())}, view),
        "latency_excluded": latency_exclusions(timed),
        "client_saturated": saturated,
        "client_lateness_ms": lateness,
        "load_phase": info.load_phase,
        "capacity": _capacity_report(sweep, info_at, timed_load, cost),
        "prefix_cache": info.prefix_cache,
        "response_cache_probe": cache_section(info.response_cache_probe, criteria),
        "slices": _slices(records, scores, facts, _stability if found.repeated else None),
        "counts": {**_counts(records, load_records, draws or []), "right": len(records) - len(failing)},
        "failing_cases": failing[:FAILING_CASES_KEPT],
        "failing_cases_total": len(failing),
        "forbidden_rules": [r.as_dict() for r in rubric.forbidden],
        "review": review.rows,
        **({"judge": judge} if judge is not None else {}),
        **({"guard": guard} if guard is not None else {}),
        **_stability_section(found, under_load, records, scores, rubric,
                             lambda: step_quality(records, load_records, scores, rubric.forbidden, STEP_TAG) if sweep else []),
    })


def _named(result: CriterionResult) -> CriterionResult:
    """A failing flip criterion names the cases that flipped (its note) in its reason."""
    if result.verdict != "fail" or result.criterion.metric not in ("flip_rate", "load_flip_rate") or not result.value.note:
        return result
    return dataclasses.replace(result, reason=f"{result.reason}; {result.value.note}")


_STABLE = {*DRAW_METRICS, *LOAD_PROBE_METRICS, *LOAD_PHASE_METRICS}
"""The metrics `gate.stability` and `gate.load_quality` may measure (the quality rates: under repeats or load)."""


def _stability_section(found, under_load, records: list, scores: dict, rubric: Rubric, steps) -> dict:
    """report.json `stability`: the per-case draws, the flip table and each capacity step's quality, when the run
    repeats or the rubric asks about answers under load (absent otherwise: the report is as it always was)."""
    asks_load = any(c.metric in LOAD_PROBE_METRICS or c.phase == "load" for c in rubric.criteria)
    if not found.repeated and not asks_load:
        return {}
    return {"stability": {"draws": draws_table(found, scores, rubric.forbidden),
                          "draw_problem": found.problem(),
                          "flips": flip_table(records, under_load) if asks_load else [],
                          "load_answers_left_out": under_load.foreign,
                          **({"steps": rows} if asks_load and (rows := steps()) else {})}}


FAILING_CASES_KEPT = 1000
"""report.json keeps the first this many failing cases (failing_cases_total says how many there are)."""


def _at_capacity(info: RunInfo, sweep: dict | None) -> RunInfo:
    """The run as its figures see it: for a sweep, the load phase lasted as long as its capacity step."""
    if sweep is None:
        return info
    step = next((s for s in sweep["steps"] if s["step"] == sweep["capacity_step"]), None)
    return info.model_copy(update={"load_phase": {**(info.load_phase or {}), "seconds": step["seconds"] if step else None}})


def _capacity_report(sweep: dict | None, info_at: RunInfo, at_capacity: list, cost: dict | None) -> dict | None:
    """The sweep for the reports, with the cost per 1M output tokens at the capacity."""
    if sweep is None:
        return None
    value = compute_metric("cost_per_1m_output_tokens", at_capacity, {}, run_facts(info_at, at_capacity, cost, phase="load"))
    return {**sweep, "cost_per_1m_output_tokens": value.value, "cost_note": value.note}


COST_METRICS = ("cost_per_1m_output_tokens", "cost_usd_total")
_WIDENED = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "ttft_sched_ms", "e2e_sched_ms")
"""Latency figures a late client can be off in either way by up to its lateness: decided on bounds widened by it."""


def _widened(result: CriterionResult, lateness_ms: float) -> CriterionResult:
    """A decided latency criterion decided again on its bounds widened by the client's lateness
    (`decision.latency`); an undecided one, or another metric, as it was."""
    metric = result.criterion.metric
    if result.verdict == "insufficient" or metric.rpartition("_p")[0] not in _WIDENED or result.value.value is None:
        return result
    value, point = result.value, result.value.value
    lo, hi = value.bounds if value.bounds is not None and result.criterion.confidence else (None, None)
    bounds = (point if lo is None else lo, point if hi is None else hi)
    verdict, why = widened_latency(result.criterion.op, result.criterion.threshold, bounds, lateness_ms)
    cause = Undecided.CLIENT if verdict == "insufficient" else None
    return CriterionResult(result.criterion, value, verdict, why, result.needed_n, cause)


def _client_bound(result: CriterionResult, lag_ms: float, client: str | None, cost: dict | None = None) -> bool:
    """Whether a saturated client leaves this criterion undecided: throughput and self-hosted cost, which have no
    bound to widen: their passes stand (a late client only makes them look worse), and a failure is undecided.
    Latency percentiles are widened instead (`_widened`). Cost from an API price table is counted tokens times
    prices: no timing in it, so it stands either way."""
    metric = result.criterion.metric
    if not is_phased(metric) or metric.rpartition("_p")[0] in _WIDENED:
        return False
    if metric in COST_METRICS and not timing_derived_cost(cost):
        return False
    return result.verdict == "fail"


def _undecided(result: CriterionResult, why: str) -> CriterionResult:
    return result.undecided(why, Undecided.CLIENT)


def _capacity_cause(result: CriterionResult) -> CriterionResult:
    """An undecided capacity is no lack of samples: the sweep established no capacity, and no rubric switch
    makes an unknown capacity stand beside the other criteria."""
    if result.verdict != "insufficient" or result.criterion.metric != "capacity_rps":
        return result
    return result.undecided(result.reason, Undecided.CAPACITY)


def _default_guards(rubric: Rubric) -> tuple[Criterion, ...]:
    if any(c.metric in ERROR_METRICS for c in rubric.criteria):
        return ()
    return (Criterion(name="error_rate (default guard)", metric="error_rate", op="<=", threshold=DEFAULT_ERROR_GUARD,
                      origin="guard"),)


def _evaluate_metrics(rubric: Rubric, stored) -> dict:
    """The rubric's `evaluate` metrics by name, each a function of the records chosen: a stored value where one
    matches, else computed (the module is loaded only then)."""
    if rubric.evaluate:  # found, not imported: a missing extra is one line before anything is judged
        require("the rubric's evaluate: metrics", "evaluate", field="evaluate")
    out = {}
    for spec in rubric.evaluate:

        def run(chosen, spec=spec):
            return evaluate_value(spec, select(chosen, spec.slice), stored)

        out[spec.name] = run
    return out


def _slices(records: list[CaseRecord], scores: dict, facts: dict, per_draw=None) -> list[dict]:
    """Per-slice figures for the suite and every low-cardinality tag; `per_draw`: under repeats, the quality
    rates per draw (as the criteria read them)."""
    rows = []
    for slice_ in slices_of(records):
        chosen = select(records, slice_)
        (key, value), = slice_.items()
        row = {"slice": f"{key}={value}", "n": len(chosen)}
        for name in _SLICE_METRICS:
            drawn = per_draw(name, chosen, "quality", 0.95) if per_draw is not None else None
            row[name] = (drawn or compute_metric(name, chosen, scores, {**facts, "all_records": False})).value
        rows.append(row)
    return rows


def _counts(records: list[CaseRecord], load_records: list[CaseRecord], draws: list[CaseRecord]) -> dict:
    """Cases and requests of every phase, failed requests by error class (quality cases keep the old keys); the
    quality phase's requests include its repeated draws."""
    quality = phase_counts(records)
    if draws:  # the draws' requests and failures; cases stay the cases
        sent = phase_counts(records + draws)
        quality = {**quality, **{k: sent[k] for k in ("requests", "failed", "errors", "error_rate")}, "draws": len(draws)}
    phases = {"quality": quality}
    if load_records:
        phases["load"] = phase_counts(load_records)
    phases["all"] = phase_counts(records + draws + load_records)
    return {"cases": len(records), "succeeded": quality["succeeded"], "errors": quality["errors"],
            "cached": quality["cached"], "phases": phases}


assert set(SUMMARY_METRICS) <= set(KNOWN_METRICS)
