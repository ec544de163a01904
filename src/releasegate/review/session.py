"""The review loop of a saved run: open it with its scores, export the review queue, import labels, summarise.

Each step reads the run directory (never the model) and returns a plain result for the `review` command to print.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..data_classes import dataclass
from ..errors import InputError
from ..gate.stability import unstable_cases
from ..inputs.review_policy import ReviewPolicy
from ..inputs.rubric import load_rubric
from ..record.judge_verdicts import run_verdicts
from ..record.records import CaseRecord, RunDir
from ..record.review_labels import LabelEdit, append_labels, read_labels
from ..record.seal import guard_seal, seal
from ..scorers import score_records
from . import ADJUDICATION_FILE, QUEUE_FILE
from .adjudication import export_adjudication_csv
from .csv_io import ImportResult, check_export_target, copy_path, export_review_csv, read_review_csv
from .sampler import SAMPLE_FILE, ReviewSample, choose_sample, drawn_rows, read_sample, write_sample
from .summary import ReviewSummary, summarize_review

__all__ = ["OpenReview", "QueueExport", "QueueImport", "open_review", "export_queue", "import_queue", "review_status"]


@dataclass(frozen=True)
class OpenReview:
    """A run as review sees it: its records, each scored, and the review policy to hold them to."""

    run: RunDir
    records: list[CaseRecord]
    policy: ReviewPolicy
    scores: dict[str, dict[str, Any]]
    categories: tuple[str, ...] = ()
    """The rubric's forbidden categories: what a reviewer's `forbidden` cell may name."""

    def summary(self, edits: list[LabelEdit]) -> ReviewSummary:
        """Where review stands with these labels, over the rows of the run's review sample."""
        return summarize_review(self.policy, self.records, self.scores, edits, drawn=drawn_rows(self.run))


@dataclass(frozen=True)
class QueueExport:
    """A written review queue: the CSV, its instructions, and the sample it holds."""

    run_path: Path
    sample: ReviewSample
    drawn: bool
    """True: the sample was drawn now; False: the run's review_sample.json was reused."""
    csv_path: Path
    sidecar: Path
    replaced_labels: int = 0
    """Labelled rows the files written over held (`--force` over a filled-in review CSV)."""
    copies: tuple[Path, ...] = ()
    """Every CSV written: one per reviewer with `labels_per_case: 2` (`csv_path` is the first)."""
    adjudication: bool = False
    """The CSV is the adjudication round's (the cases whose reviewers disagree)."""

    @property
    def summary(self) -> dict[str, Any]:
        return {
            "csv": str(self.csv_path), "csvs": [str(p) for p in self.copies or (self.csv_path,)],
            "adjudication": self.adjudication,
            "instructions": str(self.sidecar), "sample": str(self.run_path / SAMPLE_FILE),
            "drawn": self.drawn, "seed": self.sample.policy["sample"]["seed"], "rows": len(self.sample.items),
            "cases": self.sample.cases, "required": self.sample.required,
        }


@dataclass(frozen=True)
class QueueImport:
    """Labels stored from a filled-in review CSV, and where review stands with them."""

    run_path: Path
    labels: ImportResult
    review: ReviewSummary

    @property
    def summary(self) -> dict[str, Any]:
        return {"imported": len(self.labels.edits), "unchanged": self.labels.unchanged,
                "unlabelled": self.labels.unlabelled, "rows": self.labels.rows, "review": self.review.rows}


def open_review(run_dir: Path, rubric_path: Path | None = None) -> OpenReview:
    """Read the run, load the review policy (`rubric_path`'s, else the run's snapshot) and score every record."""
    run = RunDir(run_dir)
    info = run.read_info()
    rubric = load_rubric(rubric_path if rubric_path is not None else run.path / "rubric.yaml")
    records = run.read_records()
    verdicts = run_verdicts(run, info)
    scores = score_records(records, rubric.forbidden, verdicts)
    return OpenReview(run, records, rubric.review, scores, tuple(dict.fromkeys(r.category for r in rubric.forbidden)))


def export_queue(
    run_dir: Path, *, rubric_path: Path | None = None, output: Path | None = None, seed: int | None = None,
    resample: bool = False, note: Callable[[str], None] = lambda line: None, force: bool = False,
    adjudication: bool = False,
    unstable_first: bool = False,
) -> QueueExport:
    """Write the review CSV (default RUN_DIR/review_queue.csv) of the run's sample, drawing it first when the run
    has none or `resample`; a `seed` other than the kept sample's needs `resample`. `note` hears that a kept sample
    was drawn from fewer cases than the run has now. The target is checked before anything is written: no run's
    own file, no existing `output` and no filled-in review CSV without `force` (`check_export_target`).
    `adjudication` writes the adjudication round's CSV instead (`adjudication.export_adjudication_csv`).
    `unstable_first`: the sampled cases whose answers changed (across repeated draws, or under load) are the CSV's
    first rows; which cases are sampled does not change."""
    review = open_review(run_dir, rubric_path)
    run = review.run
    if adjudication:
        if seed is not None or resample:
            raise InputError("--adjudication exports the disputed cases of the run's kept sample",
                             hint="drop --seed and --resample")
        return _export_adjudication(review, output, force=force)
    target = output if output is not None else run.path / QUEUE_FILE
    copies = review.policy.labels_per_case
    targets = [target] if copies == 1 else [copy_path(target, k) for k in range(1, copies + 1)]
    replaced = sum(check_export_target(t, default=output is None, force=force) for t in targets)
    sample = None if resample else read_sample(run)
    if sample is not None and seed is not None and seed != sample.policy["sample"]["seed"]:
        raise InputError(
            f"this run already has a review sample drawn with seed {sample.policy['sample']['seed']}",
            file=run.path / SAMPLE_FILE, hint="add --resample to draw a new one (labels already given are kept)",
        )
    drawn = sample is None
    if sample is not None:
        _check_sample_cases(run, sample, review.records)
        if sample.cases != len(review.records):
            note(f"note: the sample was drawn from {sample.cases} cases, the run has {len(review.records)} now; "
                 "--resample includes them")
    else:
        sample = choose_sample(run.path.name, review.records, review.scores, review.policy, seed=seed)
        guard_seal(run.path, "review")  # what changed by hand before this stage writes is kept as found
        write_sample(run, sample)
        seal(run.path, "review")  # the drawn rows, each of which needs a label: removing the file is an edit
    if unstable_first:
        unstable = unstable_cases(run.read_info(), review.records, run.read_records("draws.jsonl", required=False),
                                  run.read_records("load.jsonl", required=False))
        note(f"{sum(i.case_id in unstable for i in sample.items)} sampled case(s) with unstable answers first")
        sample = sample.model_copy(update={"items": sorted(sample.items, key=lambda i: i.case_id not in unstable)})
    written = [export_review_csv(t, sample, review.records, review.scores, show_auto=review.policy.show_auto,
                                 copy=None if copies == 1 else (k, copies)) for k, t in enumerate(targets, start=1)]
    (csv_path, sidecar), *_ = written
    return QueueExport(run.path, sample, drawn, csv_path, sidecar, replaced, copies=tuple(w[0] for w in written))


def _export_adjudication(review: OpenReview, output: Path | None, *, force: bool) -> QueueExport:
    """Write the adjudication CSV (default RUN_DIR/review_adjudication.csv) of the run's kept sample."""
    run = review.run
    sample = read_sample(run)
    if sample is None:
        raise InputError(f"run has no {SAMPLE_FILE}: nothing was reviewed yet", file=run.path,
                         hint=f"export first: releasegate review export {run.path}")
    target = output if output is not None else run.path / ADJUDICATION_FILE
    replaced = check_export_target(target, default=output is None, force=force)
    csv_path, sidecar = export_adjudication_csv(target, sample, review.records, review.scores, read_labels(run),
                                                run_dir=run.path, show_auto=review.policy.show_auto)
    return QueueExport(run.path, sample, False, csv_path, sidecar, replaced, adjudication=True)


def _check_sample_cases(run: RunDir, sample: ReviewSample, records: list[CaseRecord]) -> None:
    """A kept sample names only cases the run still has (its records.jsonl may have been cut or replaced)."""
    have = {r.case_id for r in records}
    gone = [item.case_id for item in sample.items if item.case_id not in have]
    if gone:
        raise InputError(f"the review sample names case '{gone[0]}' ({len(gone)} in all), which the run's records "
                         "do not hold", file=run.path / SAMPLE_FILE, hint="add --resample to draw it from the run as it is")


def import_queue(run_dir: Path, file: Path, *, reviewer: str | None = None, rubric_path: Path | None = None,
                 vet: Callable[[list[LabelEdit]], list[LabelEdit]] | None = None) -> QueueImport:
    """Validate a filled-in review CSV and append its labels to reviews.jsonl; on any problem store nothing and
    raise ReviewImportError listing every one. `reviewer` fills empty reviewer cells; `vet` checks the labels
    before anything is stored (who signed them) and returns them as they are kept."""
    review = open_review(run_dir, rubric_path)
    run = review.run
    sample = read_sample(run)
    if sample is None:
        raise InputError(f"run has no {SAMPLE_FILE}", file=run.path, hint=f"export first: releasegate review export {run.path}")
    guard_seal(run.path, "review")  # labels appended by hand since the last seal are no reviewer's
    existing = read_labels(run)
    result = read_review_csv(file, sample, existing, reviewer=reviewer, categories=review.categories)
    edits = vet(result.edits) if vet is not None else result.edits
    append_labels(run, edits)
    seal(run.path, "review")
    return QueueImport(run.path, result, review.summary(existing + edits))


def review_status(run_dir: Path, rubric_path: Path | None = None) -> ReviewSummary:
    """Where review of the run stands with the labels it has."""
    review = open_review(run_dir, rubric_path)
    return review.summary(read_labels(review.run))
