"""`releasegate review export|import|status RUN_DIR`: the human review loop of a saved run, without the model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import InputError
from ._common import JsonOption, consoles, print_json

app = typer.Typer(
    name="review",
    help="Human review: export a sample of cases as a CSV for reviewers, import their labels, show where review stands.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
RunDirArg = Annotated[Path, typer.Argument(help="A run directory, e.g. reports/<run-id>.", file_okay=False)]
RubricOption = Annotated[
    Optional[Path], typer.Option(help="Use this rubric's review policy instead of the run's snapshot.", dir_okay=False)
]
QUEUE = "review_queue.csv"


@app.command("export")
def export(
    run_dir: RunDirArg,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help=f"Where to write the CSV (default: RUN_DIR/{QUEUE}).", dir_okay=False)
    ] = None,
    rubric: RubricOption = None,
    seed: Annotated[Optional[int], typer.Option(help="Sampling seed (default: the policy's); needs --resample once a sample exists.")] = None,
    resample: Annotated[bool, typer.Option(help="Draw the sample again instead of reusing the run's review_sample.json.")] = False,
    as_json: JsonOption = False,
) -> int:
    """Draw the review sample (once per run, kept in review_sample.json); write it as a spreadsheet-safe CSV with instructions."""
    from ..review import SAMPLE_FILE, choose_sample, export_review_csv, read_sample, write_sample

    run, records, policy, scores = _load(run_dir, rubric)
    sample = None if resample else read_sample(run)
    if sample is not None and seed is not None and seed != sample.policy["sample"]["seed"]:
        raise InputError(
            f"this run already has a review sample drawn with seed {sample.policy['sample']['seed']}",
            file=run.path / SAMPLE_FILE, hint="add --resample to draw a new one (labels already given are kept)",
        )
    drawn = sample is None
    if not drawn and sample.cases != len(records):
        consoles(as_json).print(f"note: the sample was drawn from {sample.cases} cases, the run has {len(records)} now; "
                                "--resample includes them", markup=False, soft_wrap=True)
    if drawn:
        sample = choose_sample(run.path.name, records, scores, policy, seed=seed)
        write_sample(run, sample)
    target = output if output is not None else run.path / QUEUE
    csv_path, sidecar = export_review_csv(target, sample, records, scores)
    summary = {
        "csv": str(csv_path), "instructions": str(sidecar), "sample": str(run.path / SAMPLE_FILE), "drawn": drawn,
        "seed": sample.policy["sample"]["seed"], "rows": len(sample.items), "cases": sample.cases,
        "required": sample.required,
    }
    if as_json:
        print_json(summary)
    console = consoles(as_json)
    how = "drew" if drawn else "reused"
    console.print(f"{how} the review sample: {len(sample.items)} of {sample.cases} cases (seed {summary['seed']})"
                  f"{'; required: ' + ', '.join(sample.required) if sample.required else ''}", markup=False, soft_wrap=True)
    console.print(f"wrote {csv_path}\ninstructions: {sidecar}\nnext: fill label/reason/reviewer, then "
                  f"releasegate review import {run.path} {csv_path}", markup=False, soft_wrap=True)
    return 0


@app.command("import")
def import_(
    run_dir: RunDirArg,
    file: Annotated[Path, typer.Argument(help="The filled-in review CSV.", dir_okay=False)],
    reviewer: Annotated[Optional[str], typer.Option(help="Reviewer name for rows whose reviewer cell is empty.")] = None,
    rubric: RubricOption = None,
    as_json: JsonOption = False,
) -> int:
    """Validate a filled-in review CSV and store its labels (reviews.jsonl); on any problem store nothing, list them, exit 2."""
    from ..review import SAMPLE_FILE, ReviewImportError, append_labels, read_labels, read_review_csv, read_sample

    run, records, policy, scores = _load(run_dir, rubric)
    sample = read_sample(run)
    if sample is None:
        raise InputError(f"run has no {SAMPLE_FILE}", file=run.path, hint=f"export first: releasegate review export {run.path}")
    existing = read_labels(run)
    try:
        result = read_review_csv(file, sample, existing, reviewer=reviewer)
    except ReviewImportError as exc:
        if len(exc.problems) > 1:
            from rich.console import Console

            err = Console(stderr=True, highlight=False)
            for line in exc.report_lines():
                err.print(line, markup=False, soft_wrap=True)
        raise
    append_labels(run, result.edits)
    summary = _summary(records, scores, policy, existing + result.edits)
    out = {"imported": len(result.edits), "unchanged": result.unchanged, "unlabelled": result.unlabelled,
           "rows": result.rows, "review": summary.rows}
    if as_json:
        print_json(out)
    console = consoles(as_json)
    console.print(f"imported {len(result.edits)} label(s) from {file} ({result.unchanged} unchanged, "
                  f"{result.unlabelled} row(s) without a label)", markup=False, soft_wrap=True)
    console.print(review_table(summary.rows))
    console.print(f"next: releasegate gate {run.path}", markup=False, soft_wrap=True)
    return 0


@app.command("status")
def status(run_dir: RunDirArg, rubric: RubricOption = None, as_json: JsonOption = False) -> int:
    """Where review stands: per slice, labels needed and given, approval, agreement with the automatic verdict."""
    from ..review import read_labels

    run, records, policy, scores = _load(run_dir, rubric)
    summary = _summary(records, scores, policy, read_labels(run))
    if as_json:
        print_json(summary.rows)
    consoles(as_json).print(review_table(summary.rows))
    return 0


def review_table(rows: dict[str, dict]):
    """The review summary, one row per slice, whole at any width (see `FitTable`)."""
    from rich import box

    from ..report import format_value
    from ..report.terminal import Col, FitTable

    columns = {"status": "status", "cases": "cases", "needed": "need", "reviewed": "done", "rejected": "rejected",
               "approval": "approval", "kappa": "kappa"}
    cells = [
        [f"{name} *" if row["required"] and name != "all" else name,
         *(format_value(row[c]) if c != "status" else row[c] for c in columns)]
        for name, row in rows.items()
    ]
    return FitTable("human review", [Col("slice (* required)", "left"), Col("status", "left"),
                                     *(Col(h) for h in list(columns.values())[1:])], cells, box=box.SIMPLE_HEAD)


def _load(run_dir: Path, rubric: Path | None):
    from ..inputs.rubric import load_rubric
    from ..llm_judge.verdicts import run_verdicts
    from ..run.record import RunDir
    from ..scorers import score_record

    run = RunDir(run_dir)
    info = run.read_info()
    policy = load_rubric(rubric if rubric is not None else run.path / "rubric.yaml")
    records = run.read_records()
    verdicts = run_verdicts(run, info)
    scores = {r.case_id: score_record(r, policy.forbidden, verdicts) for r in records}
    return run, records, policy.review, scores


def _summary(records, scores, policy, edits):
    from ..review import summarize_review

    return summarize_review(policy, records, scores, edits)
