"""`releasegate compare BASELINE_RUN CANDIDATE_RUN`: paired, case by case, with a verdict per metric."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import JsonOption, consoles, print_json

_STYLE = {"pass": "green", "fail": "red", "insufficient": "yellow"}


def compare(
    baseline: Annotated[Path, typer.Argument(help="The baseline run directory.")],
    candidate: Annotated[Path, typer.Argument(help="The candidate run directory.")],
    rubric: Annotated[
        Optional[Path], typer.Option(help="Rubric for forbidden rules and baseline margins (default: the candidate's snapshot).", dir_okay=False)
    ] = None,
    confidence: Annotated[float, typer.Option(min=0.5, max=0.999, help="Confidence of tests and intervals.")] = 0.95,
    as_json: JsonOption = False,
) -> int:
    """Compare two runs on their shared cases: exact McNemar for pass/fail metrics, paired bootstrap for latency.
    Exit 1 if any metric regressed beyond its margin, 3 if some could not be decided, nothing was shared or a
    run is incomplete, 4 if the candidate's target failed most requests, else 0."""
    from ..inputs.rubric import load_rubric
    from ..judging.compare import DEFAULT_MARGINS, Margins, compare_records, comparison_verdict
    from ..judging.criteria import EXIT_CODES
    from ..judging.health import target_failure
    from ..llm_judge.verdicts import run_verdicts
    from ..run.record import RunDir

    base_run, cand_run = RunDir(baseline), RunDir(candidate)
    base_info, cand_info = base_run.read_info(), cand_run.read_info()
    policy = load_rubric(rubric if rubric is not None else cand_run.path / "rubric.yaml")
    margins = {**DEFAULT_MARGINS, **(policy.baseline or {}).get("margins", {})}
    result = compare_records(base_run.read_records(), cand_run.read_records(), policy.forbidden, Margins(margins, confidence),
                             base_verdicts=run_verdicts(base_run, base_info), cand_verdicts=run_verdicts(cand_run, cand_info))
    verdict = comparison_verdict(result)
    problems = _problems("baseline", base_run, base_info) + _problems("candidate", cand_run, cand_info)
    target = target_failure(cand_run.read_records(), cand_run.read_records("load.jsonl", required=False))
    if target is not None and verdict != "FAIL":
        verdict = "TARGET_ERROR"
    elif problems and verdict == "PASS":  # the shared cases of a run cut short are not the run
        verdict = "INCONCLUSIVE"
    result = {"baseline_run": str(baseline), "candidate_run": str(candidate), "verdict": verdict,
              "incomplete": "; ".join(problems) or None, "target_error": target, **result}
    if as_json:
        print_json(result)
    console = consoles(as_json)
    console.print(_table(result))
    for why in (result["target_error"], result["incomplete"] and "incomplete run: " + result["incomplete"]):
        if why:
            console.print(f"compare: {verdict}: {why}", markup=False, soft_wrap=True)
    return EXIT_CODES[verdict]


def _problems(role: str, run, info) -> list[str]:
    """What keeps a run from being compared as a whole (`health.run_problems`), each naming the run."""
    from ..judging.health import planned_phases, run_problems

    info.phases = planned_phases(run.path, info)
    load = run.read_records("load.jsonl", required=False)
    return [f"{role} run: {p}" for p in run_problems(info, run.read_records(), load)]


def _num(value, spec: str = ".4g") -> str:
    return "—" if value is None else format(value, spec)


def _table(result: dict):
    """One row per metric, whole at any width (see `FitTable`)."""
    from rich.text import Text

    from ..report.terminal import Col, FitTable

    columns = [Col("metric", "left"), *(Col(c) for c in ("baseline", "candidate", "delta", "interval", "margin", "McNemar p")),
               Col("verdict", "left")]
    rows = []
    for row in result["rows"]:
        interval = f"[{row['interval'][0]:+.3g}, {row['interval'][1]:+.3g}]" if row["interval"] else "—"
        p = f"{row['p_value']:.3g}" if row["p_value"] is not None else "—"
        rows.append([
            row["metric"], _num(row["baseline"]), _num(row["candidate"]), _num(row["delta"], "+.4g"), interval,
            f"{row['margin']:.3g}", p, Text(row["verdict"], style=_STYLE[row["verdict"]]),
        ])
    title = f"compare: {result['verdict']} ({result['shared_cases']} shared cases, {result['identical_outputs']} identical outputs)"
    return FitTable(title, columns, rows)
