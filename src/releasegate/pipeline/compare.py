"""Two saved runs compared (`releasegate compare`): the paired comparison of their shared cases, and what keeps
it from standing for the runs.

Refused (exit 2): the baseline is the candidate itself (the same directory, or a copy), or the runs were made
with different generation settings (`comparability`). INCONCLUSIVE at best: a baseline that is not whole or
measured nothing (TARGET_ERROR), a candidate cut short, a case id whose contents differ between the runs (left
out and named). A load profile, SLO or rubric that differs is named in `settings_note` and decides nothing:
compare re-scores both runs' quality records with one rubric and reads no load-phase figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..decision.comparison import decide_comparison
from ..errors import InputError
from ..gate.comparability import (
    BASELINE_PARTS,
    MIN_SHARED_SHARE,
    baseline_problems,
    describe_differences,
    differences,
    same_run,
    saved_settings_key,
    settings_problem,
)
from ..gate.gate_evidence import run_population, run_requests
from ..gate.health import client_lateness_ms, saved_run_problems, target_failure
from ..gate.latency_source import quality_source
from ..gate.paired_comparison import DEFAULT_MARGINS, Margins, changed_note, compare_records, metric_verdicts
from ..gate.stability import case_draws, draw_problems
from ..inputs.judging_keys import snapshot_form
from ..inputs.rubric import load_rubric
from ..record.decided_results import CompareResult, typed
from ..record.decision_evidence import Arm, ComparisonEvidence, Health
from ..record.judge_verdicts import run_verdicts
from ..record.records import RunDir
from ..record.seal import sealed_snapshot
from .rubric_binding import run_binding

__all__ = ["compare_runs"]


def compare_runs(baseline: Path, candidate: Path, rubric: Path | None = None, confidence: float = 0.95,
                 blessing_problems: tuple[str, ...] = ()) -> dict[str, Any]:
    """The comparison of `candidate` with `baseline` on their shared cases, with its verdict; `rubric` (default:
    the candidate's snapshot) gives the forbidden rules and the baseline margins; `blessing_problems`: why a
    blessed baseline proves nothing now."""
    base_run, cand_run = RunDir(baseline), RunDir(candidate)
    base_info, cand_info = base_run.read_info(), cand_run.read_info()
    if same_run(base_run.path, base_info, cand_run.path, cand_info):
        raise InputError("the baseline and the candidate are the same run: a run is no evidence about itself",
                         file=candidate, hint="compare the candidate with another run")
    base_key, cand_key = saved_settings_key(base_run.path, base_info), saved_settings_key(cand_run.path, cand_info)
    refused = settings_problem(base_key, cand_key, BASELINE_PARTS)
    if refused is not None:
        raise InputError(refused, file=candidate, hint="compare runs made with the same generation settings")
    policy = load_rubric(rubric if rubric is not None else sealed_snapshot(cand_run.path, "rubric.yaml"))
    whatif = snapshot_form(policy) if rubric is not None else None
    margins = {**DEFAULT_MARGINS, **(policy.baseline or {}).get("margins", {})}
    base, cand = base_run.read_records(), cand_run.read_records()
    base_load, cand_load = (run.read_records("load.jsonl", required=False) for run in (base_run, cand_run))
    # one lateness widens the TTFT, TPOT and E2E rows: the E2E one, which holds the hf backend's every step
    lateness = client_lateness_ms(base_info, "quality", base, "e2e_ms") + client_lateness_ms(cand_info, "quality", cand, "e2e_ms")
    base_draws, cand_draws = (run.read_records("draws.jsonl", required=False) for run in (base_run, cand_run))
    base_verdicts, cand_verdicts = run_verdicts(base_run, base_info), run_verdicts(cand_run, cand_info)
    result = compare_records(base, cand, policy.forbidden, Margins(margins, confidence, lateness),
                             base_verdicts=base_verdicts, cand_verdicts=cand_verdicts,
                             base_draws=case_draws(base_info, base, base_draws, base_verdicts),
                             cand_draws=case_draws(cand_info, cand, cand_draws, cand_verdicts))
    # the shared cases of a run cut short are not the run; a baseline that measured nothing proves nothing
    base_health = Health((*blessing_problems, *baseline_problems(base_run.path, base_info, base, base_load),
                          *draw_problems(base_info, base, base_draws)), None, None)
    cand_health = Health(tuple(saved_run_problems(cand_run.path, cand_info, cand, cand_load)
                               + draw_problems(cand_info, cand, cand_draws)), target_failure(cand + cand_draws, cand_load), None)
    evidence = ComparisonEvidence(
        reference=Arm("baseline run", "", run_population(base_info, base), run_requests(base, base_load), base_health, False),
        candidate=Arm("candidate run", "", run_population(cand_info, cand), run_requests(cand, cand_load), cand_health, False),
        metric_verdicts=metric_verdicts(result), pairs=result["pairs_answered"], changed=result["changed_cases"],
        reference_cases=base_info.cases or len(base), min_share=MIN_SHARED_SHARE, require_reference_pass=False)
    decided = decide_comparison(evidence)
    problems = [note for note in (changed_note(result),) if note]
    other = differences(base_key, cand_key)[0]
    return typed(CompareResult, {"baseline_run": str(baseline), "candidate_run": str(candidate), **decided.as_dict(),
            "incomplete": "; ".join(problems + ([decided.reason] if decided.verdict == "INCONCLUSIVE" else [])) or None,
            "target_error": cand_health.target_error,
            "settings_note": f"the runs differ in {describe_differences(other)} (not used by compare)" if other else None,
            # repeated draws: the quality rates pair each case's share of its draws in the two runs
            **({"draws_note": "the runs repeat their cases: accuracy, format compliance and the forbidden rate are "
                              "compared per draw (each case's share of its draws, paired by case)"}
               if base_draws or cand_draws else {}),
            # compare reads the quality cases: their latency, under the load each run sent them with
            "latency_sources": {"baseline": quality_source(base_info, base), "candidate": quality_source(cand_info, cand)},
            # the rubric that judged each run (effective hash, overrides); `rubric` given: a what-if over both
            "rubrics": {"baseline": run_binding(base_run.path, rubric, whatif).as_record(),
                        "candidate": run_binding(cand_run.path, rubric, whatif).as_record()},
            **result})
