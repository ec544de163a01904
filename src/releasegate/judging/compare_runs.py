"""Two saved runs compared (`releasegate compare`): the paired comparison of their shared cases, and what keeps
it from standing for the runs (a run cut short, a candidate whose target failed)."""

from __future__ import annotations

from pathlib import Path

from ..inputs.rubric import load_rubric
from ..llm_judge.verdicts import run_verdicts
from ..run.record import RunDir
from .compare import DEFAULT_MARGINS, Margins, compare_records, comparison_verdict
from .health import saved_run_problems, target_failure

__all__ = ["compare_runs"]


def compare_runs(baseline: Path, candidate: Path, rubric: Path | None = None, confidence: float = 0.95) -> dict:
    """The comparison of `candidate` with `baseline` on their shared cases, with its verdict; `rubric` (default:
    the candidate's snapshot) gives the forbidden rules and the baseline margins."""
    base_run, cand_run = RunDir(baseline), RunDir(candidate)
    base_info, cand_info = base_run.read_info(), cand_run.read_info()
    policy = load_rubric(rubric if rubric is not None else cand_run.path / "rubric.yaml")
    margins = {**DEFAULT_MARGINS, **(policy.baseline or {}).get("margins", {})}
    base, cand = base_run.read_records(), cand_run.read_records()
    base_load, cand_load = (run.read_records("load.jsonl", required=False) for run in (base_run, cand_run))
    result = compare_records(base, cand, policy.forbidden, Margins(margins, confidence),
                             base_verdicts=run_verdicts(base_run, base_info), cand_verdicts=run_verdicts(cand_run, cand_info))
    verdict = comparison_verdict(result)
    # the shared cases of a run cut short are not the run
    problems = [f"baseline run: {p}" for p in saved_run_problems(base_run.path, base_info, base, base_load)]
    problems += [f"candidate run: {p}" for p in saved_run_problems(cand_run.path, cand_info, cand, cand_load)]
    target = target_failure(cand, cand_load)
    if target is not None and verdict != "FAIL":
        verdict = "TARGET_ERROR"
    elif problems and verdict == "PASS":
        verdict = "INCONCLUSIVE"
    return {"baseline_run": str(baseline), "candidate_run": str(candidate), "verdict": verdict,
            "incomplete": "; ".join(problems) or None, "target_error": target, **result}
