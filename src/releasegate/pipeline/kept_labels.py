"""Guard and judge labels kept across runs: each label `review import` stores is also kept in the reports folder
(`grader_labels.jsonl`) by (grader fingerprint, case hash, reply hash), once per guard and judge that graded the
run. A later run graded by the same grader calibrates it with the kept labels of the replies it gave again to the
same cases, so a pull request whose replies reviewers have labelled before is not held for them again. The case
(its input as sent and its expected answer, `comparability.case_hash`) is part of the key: a label says whether a
reply is right for its question, and "Yes" approved for one question says nothing of "Yes" to another.

Reused labels feed the guard's and the judge's calibration only, never a review slice's human approval (that is
the run's own review). A kept label older than the rubric's `review.label_max_age_days` (default 90) before the
run does not count, by its own time or by its run's (a label from the future never counts); nor one from a run
that is gone or edited since releasegate sealed it, nor one given for another case with the same reply. What a
reused label says (reviewer, time, forbidden categories) is what its own run holds, never the line's. Where the
rubric names its reviewers, a kept label counts only while its own run still holds it as a counted, signed label
(`review_signatures.counted_labels`): a line written into the file by hand is never a reviewer's."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, field_validator

from ..border.files import journal_lines, open_append, open_regular
from ..border.structured import json_loads
from ..errors import ReleasegateError
from ..gate.comparability import case_hash
from ..inputs.review_policy import ReviewPolicy
from ..model_base import Model
from ..record.records import CaseRecord, RunDir, RunInfo
from ..record.review_labels import LabelEdit, read_labels
from ..record.review_outcome import output_hash
from ..record.run_parts import GuardsFacts, JudgeFacts
from ..record.seal import edited_evidence
from .review_signatures import counted_labels

__all__ = ["KEPT_FILE", "keep_labels", "keep_imported", "reused_labels"]

KEPT_FILE = "grader_labels.jsonl"
MAX_KEPT_BYTES = 256 * 1024 * 1024
"""Bytes read of the kept labels: past it the rest is not read (older runs' labels simply not reused)."""
Vouched = dict[str, dict[tuple[str, str, str, str], LabelEdit]]
"""By source run: (review id, reply hash, label, case hash) of each label it still counts."""


class KeptLabel(Model):
    """A line of grader_labels.jsonl: a label one grader's calibration may reuse (its shape checked on reading:
    a line of another shape is skipped)."""

    model_config = ConfigDict(extra="allow", strict=True)

    case_hash: str
    forbidden: list[str] | None = None
    grader: str
    label: Literal["approve", "reject"]
    output_hash: str
    review_id: str
    reviewer: str
    run: str
    time: str

    @field_validator("run")
    @classmethod
    def _a_run_beside(cls, value: str) -> str:
        if "/" in value or value in ("", ".", ".."):
            raise ValueError("not a run directory's name")
        return value


def graders(info: RunInfo) -> list[str]:
    """The fingerprints of the judge and the guards that graded the run."""
    found = [JudgeFacts.model_validate(info.judge).fingerprint] if info.judge else []
    found += [g.fingerprint for g in GuardsFacts.model_validate(info.guards or {}).root.values()]
    return [f for f in found if isinstance(f, str) and f]


def keep_labels(run_dir: Path, edits: list[LabelEdit]) -> int:
    """Keep `edits` (just imported into the run) in its reports folder, once per grader of the run."""
    run = RunDir(run_dir)
    fingerprints = graders(run.read_info())
    cases = _case_hashes(run)
    rows = [KeptLabel(
                grader=g, output_hash=e.output_hash, label=e.label, forbidden=e.forbidden, reviewer=e.reviewer,
                time=e.time, run=run.path.name, review_id=e.review_id, case_hash=cases[e.case_id])
            for e in edits if e.case_id in cases for g in fingerprints]
    if rows:
        with open_append(run.path.parent / KEPT_FILE, what=KEPT_FILE) as fh:
            fh.write("".join(json.dumps(r.model_dump(), sort_keys=True) + "\n" for r in rows).encode("utf-8"))
    return len(rows)


def keep_imported(run_dir: Path, count: int) -> int:
    """Keep the last `count` labels of the run's reviews.jsonl (those one import just stored, as stored)."""
    return keep_labels(run_dir, read_labels(RunDir(run_dir))[-count:]) if count > 0 else 0


def reused_labels(run: RunDir, info: RunInfo, policy: ReviewPolicy, records: list[CaseRecord],
                  own: list[LabelEdit]) -> list[LabelEdit]:
    """Labels kept from earlier runs for the replies this run gave again to the same cases, graded by one of its
    graders, young enough, and (with named reviewers) still counted in their own run; none for a case labelled in
    this run."""
    mine = set(graders(info))
    labelled = {e.case_id for e in own}
    by_hash: dict[tuple[str, str], list[CaseRecord]] = {}
    for r in records:
        if r.case_id not in labelled and r.output is not None:
            by_hash.setdefault((case_hash(r), output_hash(r.output)), []).append(r)
    oldest = _run_time(info) - timedelta(days=policy.label_max_age_days)
    vouched: Vouched = {}
    out: dict[tuple[str, str, str], LabelEdit] = {}
    for row in _rows(run.path.parent / KEPT_FILE):
        key = (row.case_hash, row.output_hash)
        if row.grader not in mine or row.run == run.path.name or key not in by_hash:
            continue
        source = _vouched(run.path.parent, row, policy, vouched)  # the label as its run holds it, not as the row says
        if source is None or not (_young(source.time, oldest) and _young(row.time, oldest)):
            continue
        for r in by_hash[key]:  # the same case (its hash) and the same reply: another question's reply is another
            out[(r.case_id, source.reviewer, row.run)] = _edit(row.run, source, r)
    return list(out.values())


def _rows(path: Path) -> list[KeptLabel]:
    """The kept rows of the expected shape; a malformed or partial line is skipped, never a crash."""
    if not path.is_file():
        return []
    rows: list[KeptLabel] = []
    try:
        with open_regular(path, what=KEPT_FILE, max_bytes=MAX_KEPT_BYTES) as fh:
            for _, raw in journal_lines(fh, path=path, what=KEPT_FILE):
                row = _row(raw)
                if row is not None:
                    rows.append(row)
    except ReleasegateError:
        return rows  # past the cap, or a line too long: what was read stands, the rest is not reused
    return rows


def _row(raw: bytes) -> KeptLabel | None:
    try:
        return KeptLabel.model_validate(json_loads(raw))
    except (ValueError, RecursionError):  # not JSON, or not a kept label (ValidationError is a ValueError)
        return None


def _run_time(info: RunInfo) -> datetime:
    try:
        return datetime.fromisoformat(info.created_at)
    except (TypeError, ValueError):
        return datetime.now().astimezone()


def _young(when: str, oldest: datetime) -> bool:
    """Given since `oldest`, and not after now (a label from the future would never age)."""
    try:
        given = datetime.fromisoformat(when)
        return given.tzinfo is not None and oldest <= given <= datetime.now(UTC) + _SKEW
    except (TypeError, ValueError, OverflowError):
        return False


_SKEW = timedelta(minutes=5)
"""A clock this far ahead of this machine's is still now."""


def _case_hashes(run: RunDir) -> dict[str, str]:
    """Each case of the run by id: its `case_hash` (none for a run whose records cannot be read)."""
    try:
        return {r.case_id: case_hash(r) for r in run.read_records(required=False)}
    except ReleasegateError:
        return {}


def _vouched(reports: Path, row: KeptLabel, policy: ReviewPolicy, cache: Vouched) -> LabelEdit | None:
    """The label its own run still holds for the row (counted under `policy` where it names reviewers), of the
    case its own run asked (the row's case hash is not taken on its word), its latest; None: the run holds no such
    label. Its reviewer, time and forbidden categories are the run's, never the row's: a row edited by hand changes
    nothing it is reused for."""
    if row.run not in cache:
        source = RunDir(reports / row.run)
        try:  # a run edited since releasegate sealed it vouches for nothing
            edits = [] if edited_evidence(source.path) else counted_labels(source, policy, read_labels(source))
        except ReleasegateError:
            edits = []
        cases = _case_hashes(source) if edits else {}
        cache[row.run] = {(e.review_id, e.output_hash, e.label, cases[e.case_id]): e for e in edits
                          if e.case_id in cases}
    return cache[row.run].get((row.review_id, row.output_hash, row.label, row.case_hash))


def _edit(run: str, source: LabelEdit, record: CaseRecord) -> LabelEdit:
    return LabelEdit(review_id=f"kept:{run}:{source.review_id}", case_id=record.case_id,
                     reviewer=source.reviewer, label=source.label, time=source.time, output_hash=source.output_hash,
                     source=f"{run}/{KEPT_FILE}", source_line=0, forbidden=source.forbidden)
