"""Serving stacks side by side: the same suites (and load) run against two or more targets (llama.cpp, vLLM, the
local hf model...), each judged again from its own records by its own rubric snapshot (the gate library, as
`releasegate gate` does, in memory: report.json is never trusted), compared in one report with a plain
recommendation.

Per target: the verdict; quality (accuracy, format compliance, forbidden rate); latency split the way inference
works, TTFT (prefill) and TPOT (decode), and which one the median request spends most of its time in
(`bottleneck`: prefill when TTFT p50 is at least half of E2E p50, else decode); throughput; cost per 1M output
tokens; capacity at the latency objective and the cost there, when the load phase was a sweep. Per target against
the first (the reference): paired quality parity on the shared cases (`compare.compare_records`: the same id and
contents; identical greedy outputs, accuracy delta, the comparison's verdict) and the share of the reference's
cases it covers.

Comparability (`comparability`): the same run given twice, or a target whose generation settings, load profile or
latency objective differ from the reference's, is refused (exit 2); a target judged by another rubric is shown
but never eligible (its verdict answers another question); settings a run does not record (a run older than the
key with no config.yaml snapshot) are named in the target's `unchecked` warning.

The recommendation is made only among targets whose gate said PASS, judged by the reference's rubric, and whose
quality parity is decided PASS on at least `min_parity_share` (default 0.9) of the reference's cases. Among them:
the highest capacity at the objective when every one has a capacity, else the lowest cost per 1M output tokens,
else the lowest TTFT p95. A capacity floor ("at least X": the sweep never broke the objective) is not X: it ranks
above a measured value it meets, and beside one it does not (capacity cannot order them; the lowest cost among
those left does). No eligible target: no recommendation, exit 3.
"""

from __future__ import annotations

from typing import Any

from ..border.structured import stored_json
from ..data_classes import dataclass
from ..decision.comparison import decide_comparison
from ..errors import InputError
from ..gate.comparability import describe_differences, differences, same_run, saved_settings_key
from ..gate.context import GateInputs
from ..gate.gate_evidence import run_arm
from ..gate.health import planned_phases, run_problems
from ..gate.load_quality import draw_variation, load_figures
from ..gate.paired_comparison import DEFAULT_MARGINS, Margins, compare_records, metric_verdicts
from ..inputs.files import stored_yaml
from ..inputs.rubric import Rubric, load_rubric
from ..record.decided_results import ServersResult, typed
from ..record.decision_evidence import ComparisonEvidence
from ..record.gate_report import GateReport, as_report
from ..record.judge_verdicts import Verdicts, run_verdicts
from ..record.records import CaseRecord, RunDir, RunInfo
from ..record.review_labels import read_labels
from ..record.run_parts import CostFacts
from ..record.seal import edited_evidence, sealed_snapshot
from ..review.sampler import drawn_rows
from ..scorers import CorpusScores, run_ledger
from .gate import judge_run
from .kept_labels import reused_labels
from .review_signatures import counted_labels
from .server_ranking import recommend
from .server_rows import PairedComparison, Parity, TargetRow, row_json

__all__ = ["compare_servers", "compared_targets", "PREFILL_BOUND_SHARE", "MIN_PARITY_SHARE"]

PREFILL_BOUND_SHARE = 0.5
"""A target whose median TTFT is at least this share of its median E2E is prefill-bound, else decode-bound."""
MIN_PARITY_SHARE = 0.9
"""`servers --min-parity-share`: parity must be decided on at least this share of the reference's cases."""
_FIGURES = ("accuracy", "format_compliance", "forbidden_rate", "error_rate", "ttft_ms_p50", "ttft_ms_p95",
            "ttft_ms_p99", "tpot_ms_p50", "tpot_ms_p95", "tpot_ms_p99", "e2e_ms_p50", "e2e_ms_p95", "e2e_ms_p99",
            "output_tokens_per_s", "cost_per_1m_output_tokens")
_REFUSED = ("generation", "load", "slo")
_PARITY_METRICS = ("accuracy", "format_compliance", "forbidden_rate", "error_rate")


def compare_servers(run_dirs: list[Any], *, min_parity_share: float = MIN_PARITY_SHARE, margin: float | None = None,
                    allow_pending: bool = False, fewest: int = 2) -> dict[str, Any]:
    """The comparison of saved runs, each judged again; the first is the reference for parity. `margin`: the
    non-inferiority margin of every quality rate (default: compare's); `allow_pending`: pending human review
    does not hold a verdict at NEEDS_REVIEW (as `check --allow-pending`); `fewest`: runs it needs (the served
    variants may be down to their reference)."""
    targets = compared_targets(run_dirs, min_parity_share=min_parity_share, margin=margin,
                               allow_pending=allow_pending, fewest=fewest)
    rows = [row_json(t) for t in targets]
    return typed(ServersResult, {"reference": targets[0].run_id, "min_parity_share": min_parity_share,
                                 "targets": rows, **recommend(rows)})


def compared_targets(run_dirs: list[Any], *, min_parity_share: float = MIN_PARITY_SHARE, margin: float | None = None,
                     allow_pending: bool = False, fewest: int = 2) -> list[TargetRow]:
    """`compare_servers`' target rows, typed (the reference first)."""
    if len(run_dirs) < fewest:
        raise InputError("give two or more run directories to compare", hint="releasegate servers RUN_A RUN_B ...")
    runs = [RunDir(p) for p in run_dirs]
    infos = [run.read_info() for run in runs]
    keys = [saved_settings_key(run.path, info) for run, info in zip(runs, infos)]
    _refuse_incomparable(runs, infos, keys)
    judged = [_judge_again(run, info, allow_pending) for run, info in zip(runs, infos)]
    arms = [run_arm(f"{'reference' if i == 0 else 'target'} {info.run_id}", info, j.records, j.load, j.report_json,
                    problems=run_problems(info, j.records, j.load)) for i, (info, j) in enumerate(zip(infos, judged))]
    rules = judged[0].policy.forbidden
    quality = ("accuracy", "format_compliance", "forbidden_rate")
    margins = Margins({**DEFAULT_MARGINS, **({k: margin for k in quality} if margin is not None else {})})
    flip_margin = margin if margin is not None else DEFAULT_MARGINS["accuracy"]
    targets = []
    for i, (run, info, j) in enumerate(zip(runs, infos, judged)):
        # quality under load beside the quality phase's; answers the load changes past the margin disqualify (at
        # temperature > 0, past the margin plus the change the run's own draws show alone)
        row = _target_row(run, info, j.report).model_copy(update={
            "review_waived": arms[i].review_waived, **load_figures(j.records, j.load), "flip_margin": flip_margin,
            "flip_variation": None if _greedy(run) else draw_variation(info, j.records, j.draws)})
        if i:
            ref = judged[0]
            parity = _parity(ref.records, j.records, rules, ref.verdicts, j.verdicts, margins,
                             (arms[0], arms[i], infos[0].cases or len(ref.records)), min_parity_share)
            comparable, unchecked = _comparability_notes(keys[0], keys[i])
            row = row.model_copy(update={"parity": parity, "comparable": comparable, "unchecked": unchecked})
        targets.append(row)
    return targets


def _greedy(run: RunDir) -> bool:
    """Whether the run decoded greedily (its config snapshot's temperature 0 or unset): then every answer changed
    by the load is a fault of the server, none a sample."""
    config = stored_yaml(run.path / "config.yaml", what="config snapshot") or {}
    generation = config.get("generation")
    return not (generation.get("temperature") if isinstance(generation, dict) else None)


def _refuse_incomparable(runs: list[RunDir], infos: list[Any], keys: list[dict[str, Any]]) -> None:
    """Exit 2 for a run given twice, or for settings that make a target's figures answer another question."""
    for i in range(1, len(runs)):
        for j in range(i):
            if same_run(runs[j].path, infos[j], runs[i].path, infos[i]):
                raise InputError(f"run {infos[i].run_id} is given twice: a target is no evidence about itself",
                                 file=runs[i].path, hint="give each target's run once")
        differ, _ = differences(keys[0], keys[i], _REFUSED)
        if differ:
            raise InputError(f"run {infos[i].run_id} differs from the reference {infos[0].run_id} in "
                             f"{describe_differences(differ)}: not runs of the same thing", file=runs[i].path,
                             hint="run every target with the same generation, load and objective settings")


def _comparability_notes(ref_key: dict[str, Any], key: dict[str, Any]) -> tuple[str | None, str | None]:
    """(why the target is not comparable with the reference: another rubric; a warning naming the settings one
    of the two runs does not record, so they could not be checked)."""
    differ, unchecked = differences(ref_key, key)
    refusal = "judged by another rubric than the reference" if "rubric" in differ else None
    warning = f"not checked against the reference: {describe_differences(unchecked)} (not recorded)" if unchecked else None
    return refusal, warning


@dataclass(frozen=True)
class _Judged:
    """A run judged again from disk by its own rubric snapshot."""

    report: GateReport
    """As report.json would hold it (JSON values)."""
    report_json: dict[str, Any]
    records: list[CaseRecord]
    policy: Rubric
    verdicts: Verdicts | None
    load: list[CaseRecord]
    draws: list[CaseRecord]


def _judge_again(run: RunDir, info: RunInfo, allow_pending: bool = False) -> _Judged:
    """The run judged from disk by its own rubric snapshot."""
    info.phases = planned_phases(run.path, info)
    policy = load_rubric(sealed_snapshot(run.path, "rubric.yaml"))  # an edited snapshot is refused
    (records, ledger), verdicts = run_ledger(run), run_verdicts(run, info)
    load, draws = run.read_records("load.jsonl", required=False), run.read_records("draws.jsonl", required=False)
    labels = counted_labels(run, policy.review, read_labels(run))
    report = judge_run(GateInputs(
        info, records, policy, info.cost, load, labels, allow_pending, verdicts, edited_evidence(run.path),
        CorpusScores.of(run), draws=draws, drawn=drawn_rows(run), ledger=ledger,
        reused_labels=reused_labels(run, info, policy.review, records, labels))).as_json()
    return _Judged(as_report(report), report, records, policy, verdicts, load, draws)


def _target_row(run: RunDir, info: RunInfo, report: GateReport) -> TargetRow:
    value: dict[str, Any] = {name: m.value if (m := report.metrics.get(name)) else None for name in _FIGURES}
    capacity = report.capacity
    ttft, e2e = value["ttft_ms_p50"], value["e2e_ms_p50"]
    share = ttft / e2e if ttft is not None and e2e else None
    reason = report.verdict_reason
    saved = _saved_verdict(run)
    if saved is not None and saved != report.verdict:  # edited, or written before the run or rubric changed
        reason += f" (report.json says {saved}: judged again from the records)"
    e2e_p95 = report.metrics.get("e2e_ms_p95")
    return TargetRow(
        run_id=report.run_id, run_dir=str(run.path), target=report.target, backend=info.backend,
        verdict=report.verdict, verdict_reason=reason, saved_verdict=saved, latency_from=report.latency_from,
        latency_source=report.latency_source.model_dump(exclude_unset=True) if report.latency_source else None,
        client_saturated=bool(report.client_saturated), **value, prefill_share=share,
        bottleneck=None if share is None else "prefill" if share >= PREFILL_BOUND_SHARE else "decode",
        sweep=capacity is not None, capacity_rps=capacity.capacity_rps if capacity else None,
        capacity_at_least=capacity.at_least if capacity else None,
        cost_per_1m_at_capacity=capacity.cost_per_1m_output_tokens if capacity else None,
        slo=capacity.slo if capacity else None, capacity_break_rps=capacity.break_rps if capacity else None,
        cost_mode=CostFacts.model_validate(info.cost).mode if info.cost else None, e2e_ms_p95_bounds=e2e_p95.bounds if e2e_p95 else None,
        client_lateness_ms=report.client_lateness_ms)


def _saved_verdict(run: RunDir) -> str | None:
    """The verdict report.json holds, for the record only; None when there is no readable one."""
    report = stored_json(run.path / "report.json", what="report.json")
    verdict = report.get("verdict") if isinstance(report, dict) else None
    return verdict if isinstance(verdict, str) else None


def _parity(ref: list[Any], other: list[Any], rules: Any, ref_verdicts: Any, other_verdicts: Any, margins: Margins, arms: tuple[Any, ...],
            min_share: float) -> Parity:
    comparison = compare_records(ref, other, rules, margins, base_verdicts=ref_verdicts, cand_verdicts=other_verdicts)
    paired = PairedComparison.model_validate(comparison)
    rows = paired.metric_rows()
    accuracy = next((read for _, read in rows if read.metric == "accuracy"), None)
    shared = paired.shared_cases
    ref_arm, arm, ref_cases = arms
    share = paired.pairs_answered / ref_cases if ref_cases else 0.0
    decided = decide_comparison(ComparisonEvidence(
        reference=ref_arm, candidate=arm, metric_verdicts=metric_verdicts(comparison, _PARITY_METRICS),
        pairs=paired.pairs_answered, changed=paired.changed_cases, reference_cases=ref_cases,
        min_share=min_share, require_reference_pass=True))  # parity on a corner of the suite is not parity
    return Parity(
        shared_cases=shared, shared_share=share, changed_cases=paired.changed_cases,
        identical_outputs=paired.identical_outputs, accuracy_delta=accuracy.delta if accuracy else None,
        accuracy_needed_n=accuracy.needed_n if accuracy else None, quality_verdict=decided.verdict,
        rows=[row for row, read in rows if read.metric in _PARITY_METRICS],
        identical_share=paired.identical_outputs / shared if shared else None,
        accuracy_interval=accuracy.interval if accuracy else None,
        accuracy_p_value=accuracy.p_value if accuracy else None, margin=accuracy.margin if accuracy else None,
        quality_reason=decided.reason)
