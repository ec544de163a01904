"""judgments.jsonl: what the judge said of each judge-scored case, one line per verdict, appended as they come.

A judgment counts for a record only when it was given on that record's output (`output_hash`) by the judge the
run is configured with (`judge`, the judge fingerprint) for the same criterion: a resumed run that regenerated
a case, or a changed judge, finds no judgment and asks again. The last line of a case wins, as in records.jsonl.
"""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path
from typing import Any

from pydantic import Field

from ..border.files import check_regular, journal_lines, open_append, open_regular
from ..errors import InputError
from ..model_base import Model
from ..redaction import redact_json
from .journal_lines import ESCAPED, last_line_start
from .records import MAX_JOURNAL_BYTES, RunDir

__all__ = ["JUDGMENTS_FILE", "Judgment", "JudgeTokens", "read_judgments", "every_judgment", "append_judgments",
           "judgment_key"]

JUDGMENTS_FILE = "judgments.jsonl"


class JudgeTokens(Model):
    """The judge's own token counts for one verdict (apart from the model under test's)."""

    input: int | None = None
    output: int | None = None


class Judgment(Model):
    """One verdict of the LLM judge on one case's output."""

    case_id: str
    """The case judged."""
    criterion: str
    """The grading criterion's name ('inline' for one written in the case or suite without a name)."""
    judge: str
    """The judge fingerprint (model or endpoint, parameters, prompt template): see JudgeSettings.fingerprint."""
    output_hash: str
    """'sha256:<hex>' of the output judged (the review sample's hash of the same text)."""
    passed: bool | None = None
    """The verdict: True pass, False fail; None when the judge gave none (see `error`)."""
    score: int | None = None
    """The grade on a 1..scale criterion; None for pass/fail criteria and on errors."""
    scale: int | None = None
    pass_mark: int | None = None
    reason: str = ""
    """The judge's reason, as it wrote it (cut to 1,000 characters)."""
    error: str | None = None
    """'judge_unparseable' (no verdict in the reply), 'judge_<class>' for a failed request (judge_timeout,
    judge_connection_error, judge_http_5xx, ...; see `errors.judge_kind`), 'judge_no_reply' for one that ended
    with neither; None when a verdict was read."""
    error_message: str | None = None
    raw: str | None = None
    """The judge's reply, kept when it could not be parsed (cut to 2,000 characters)."""
    truncated_to: int | None = None
    """A guard that read only the first this many tokens of what it was shown (a classifier's max length); None:
    it read all of it."""
    tokens: JudgeTokens = Field(default_factory=JudgeTokens)
    latency_ms: float | None = None
    """Judge request send -> end of its reply; None for a cached verdict."""
    cached: bool = False
    """The verdict came from the response cache: no judge call in this run (no tokens billed)."""
    attempts: int = 1
    """Requests sent for it: a retry after a failed attempt is billed too (a budget counts each)."""
    order: str | None = None
    """Pairwise judgments only: 'candidate_first' (this run's output shown as A) or 'baseline_first'."""
    preferred: str | None = None
    """Pairwise: which output the judge preferred, 'candidate', 'baseline' or 'tie' (positions undone)."""
    baseline_hash: str | None = None
    """Pairwise: 'sha256:<hex>' of the baseline run's output it was compared with."""


def judgment_key(case_id: str, criterion: str, judge: str, output_hash: str, order: str | None = None,
                 baseline_hash: str | None = None) -> tuple[Any, ...]:
    """What a judgment answers: this output, by this judge, on this criterion (pairwise: in this order, against
    this baseline output)."""
    return (case_id, criterion, judge, output_hash, order, baseline_hash)


def read_judgments(run: RunDir) -> dict[tuple[Any, ...], Judgment]:
    """The run's judgments by (case id, criterion, judge, output hash); the last of a key wins. A torn last
    line (a kill while appending) is ignored: that verdict is asked again."""
    return {judgment_key(j.case_id, j.criterion, j.judge, j.output_hash, j.order, j.baseline_hash): j
            for j in every_judgment(run)}


def every_judgment(run: RunDir) -> list[Judgment]:
    """Every line of judgments.jsonl in order, a verdict asked again included (each was a call: a budget bills
    them all); a torn last line is left out."""
    path = run.path / JUDGMENTS_FILE
    if not path.exists():
        return []
    out: list[Judgment] = []
    digest = hashlib.sha256()
    with open_regular(path, what=JUDGMENTS_FILE, max_bytes=MAX_JOURNAL_BYTES) as fh:  # a FIFO: refused, not waited on
        for number, line in journal_lines(fh, path=path, what=JUDGMENTS_FILE):
            digest.update(line)  # every byte read, a torn last line's too: the file's sha256 (`RunDir.read_sha256`)
            if not line.strip():
                continue
            try:
                out.append(Judgment.model_validate_json(line))
            except ValueError as exc:
                if not line.endswith(b"\n"):
                    break
                raise InputError(f"corrupt judgment: {str(exc).splitlines()[0]}", file=path, line=number) from None
    run.read_sha256[JUDGMENTS_FILE] = digest.hexdigest()
    return out


def append_judgments(run: RunDir, judgments: list[Judgment]) -> None:
    """Append whole lines and fsync, through the run directory's redaction (see RunDir.append)."""
    path = run.path / JUDGMENTS_FILE
    _cut_torn_tail(path)
    with io.TextIOWrapper(open_append(path, what=JUDGMENTS_FILE), encoding="utf-8") as fh:
        for j in judgments:
            line = ESCAPED.sub(lambda m: f"\\u{ord(m.group()):04x}", redact_json(j.model_dump_json()))
            fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def _cut_torn_tail(path: Path) -> None:
    """A kill mid-append leaves a last line without its newline: cut it off, so the next append starts a line."""
    if not path.exists():
        return
    check_regular(path, what=str(path.name))
    with path.open("r+b") as fh:
        size = fh.seek(0, 2)
        start = last_line_start(fh, size)
        if start != size:
            fh.truncate(start)
