"""`releasegate review export|import|status RUN_DIR`: the human review loop of a saved run, without the model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from ..review import QUEUE_FILE
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


@app.command("export")
def export(
    run_dir: RunDirArg,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help=f"Where to write the CSV (default: RUN_DIR/{QUEUE_FILE}).", dir_okay=False)
    ] = None,
    rubric: RubricOption = None,
    seed: Annotated[Optional[int], typer.Option(help="Sampling seed (default: the policy's); needs --resample once a sample exists.")] = None,
    resample: Annotated[bool, typer.Option(help="Draw the sample again instead of reusing the run's review_sample.json.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing --output file, or a filled-in review CSV.")] = False,
    adjudication: Annotated[bool, typer.Option(
        "--adjudication", help="Write the cases whose reviewers disagree, for an adjudicator.")] = False,
    unstable_first: Annotated[bool, typer.Option(
        "--unstable-first", help="Put the sampled cases whose answers changed (across repeated draws or under load) first.")] = False,
    as_json: JsonOption = False,
) -> int:
    """Draw the review sample (once per run, kept in review_sample.json); write it as a spreadsheet-safe CSV with
    instructions: one per reviewer with review.labels_per_case: 2, and the disagreements with --adjudication."""
    from ..review.session import export_queue

    def note(line: str) -> None:
        consoles(as_json).print(line, markup=False, soft_wrap=True)

    done = export_queue(run_dir, rubric_path=rubric, output=output, seed=seed, resample=resample, note=note, force=force,
                        adjudication=adjudication, unstable_first=unstable_first)
    if done.replaced_labels:
        note(f"replaced {done.csv_path}, which held {done.replaced_labels} labelled rows (--force)")
    sample, summary = done.sample, done.summary
    if as_json:
        print_json(summary)
    console = consoles(as_json)
    how = "drew" if done.drawn else "reused"
    if not done.adjudication:
        console.print(f"{how} the review sample: {len(sample.items)} of {sample.cases} cases (seed {summary['seed']})"
                      f"{'; required: ' + ', '.join(sample.required) if sample.required else ''}", markup=False, soft_wrap=True)
    copies = summary["csvs"]
    for path in copies:
        console.print(f"wrote {path}", markup=False, soft_wrap=True)
    who = "one copy to each reviewer; " if len(copies) > 1 else "the adjudicator: " if done.adjudication else ""
    target = copies[0] if len(copies) == 1 else "FILE"
    beside = " (and one beside each copy)" if len(copies) > 1 else ""
    console.print(f"instructions: {done.sidecar}{beside}\nnext: {who}fill label/reason/reviewer, then "
                  f"releasegate review import {done.run_path} {target}", markup=False, soft_wrap=True)
    return 0


@app.command("import")
def import_(
    run_dir: RunDirArg,
    file: Annotated[Path, typer.Argument(help="The filled-in review CSV.", dir_okay=False)],
    reviewer: Annotated[Optional[str], typer.Option(help="Reviewer name for rows whose reviewer cell is empty.")] = None,
    rubric: RubricOption = None,
    signature: Annotated[Optional[Path], typer.Option(
        help="The labels file's signature (default FILE.sig): needed where the rubric names its reviewers.",
        dir_okay=False)] = None,
    as_json: JsonOption = False,
) -> int:
    """Validate a filled-in review CSV and store its labels (reviews.jsonl); on any problem store nothing, list them, exit 2."""
    from ..pipeline.kept_labels import keep_imported
    from ..pipeline.review_signatures import import_vetting
    from ..report.review import review_notes, review_table
    from ..review import ReviewImportError
    from ..review.session import import_queue

    try:
        vet = import_vetting(run_dir, file, signature, rubric)
        done = import_queue(run_dir, file, reviewer=reviewer, rubric_path=rubric, vet=vet)
    except ReviewImportError as exc:
        if exc.count > 1:
            err = Console(stderr=True, highlight=False)
            for line in exc.report_lines():  # the first MAX_LISTED, then how many more
                err.print(line, markup=False, soft_wrap=True)
        raise
    keep_imported(run_dir, len(done.labels.edits))  # the guard and judge labels, for later runs of the same replies
    labels = done.labels
    if as_json:
        print_json(done.summary)
    console = consoles(as_json)
    console.print(f"imported {len(labels.edits)} label(s) from {file} ({labels.unchanged} unchanged, "
                  f"{labels.unlabelled} row(s) without a label)", markup=False, soft_wrap=True)
    console.print(review_table(done.review.rows))
    for line in review_notes(done.review.rows):
        console.print(line.replace("RUN_DIR", str(done.run_path)), markup=False, soft_wrap=True)
    console.print(f"next: releasegate gate {done.run_path}", markup=False, soft_wrap=True)
    return 0


@app.command("sign")
def sign(
    file: Annotated[Path, typer.Argument(help="The filled-in review CSV.", dir_okay=False)],
    key: Annotated[Path, typer.Option(help="Your Ed25519 private key in PEM (releasegate attest --generate-key FILE).",
                                      dir_okay=False)],
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Where to write it (default FILE.sig).",
                                                   dir_okay=False)] = None,
) -> int:
    """Sign a labels file as a reviewer the rubric names (review.reviewers): writes FILE.sig for review import."""
    from ..pipeline.review_signatures import sign_labels

    written = sign_labels(file, key, output)
    consoles(False).print(f"signed {file}: {written}", markup=False, soft_wrap=True)
    return 0


@app.command("status")
def status(run_dir: RunDirArg, rubric: RubricOption = None, as_json: JsonOption = False) -> int:
    """Where review stands: per slice, labels needed and given, approval, agreement with the automatic verdict."""
    from ..report.review import review_notes, review_table
    from ..review.session import review_status

    summary = review_status(run_dir, rubric)
    if as_json:
        print_json(summary.rows)
    console = consoles(as_json)
    console.print(review_table(summary.rows))
    for line in review_notes(summary.rows):
        console.print(line.replace("RUN_DIR", str(run_dir)), markup=False, soft_wrap=True)
    return 0
