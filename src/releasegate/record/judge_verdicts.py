"""The verdicts a run's judge gave, as scoring reads them: the judgment of a record, if there is one for its output."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from ..data_classes import dataclass
from ..errors import InputError
from .evidence import answered
from .judge_journal import JUDGMENTS_FILE, Judgment, judgment_key, read_judgments
from .records import CaseRecord, RunDir, RunInfo
from .review_outcome import output_hash

__all__ = ["Verdicts", "run_verdicts", "saved_verdicts", "criterion_name"]


def criterion_name(answer: dict[str, Any]) -> str:
    """The criterion a judge answer spec names ('inline' for one written without a name)."""
    return answer.get("criterion") or "inline"


def _criterion_of(record: CaseRecord) -> str:
    """`criterion_name` of a judge-scored record (the only records a verdict is looked up for)."""
    assert record.answer is not None, f"{record.case_id} is not judge-scored"
    return criterion_name(record.answer)


@dataclass(frozen=True)
class Verdicts:
    """The judgments of one judge (by fingerprint) and what a judge error means for a case."""

    fingerprint: str | None
    judgments: dict[tuple[Any, ...], Judgment] = field(default_factory=dict)
    """The run's judgments by `judge_journal.judgment_key`."""
    on_error: str = "insufficient"
    baseline_hashes: dict[str, str] = field(default_factory=dict)
    """Pairwise: case id -> output hash of the baseline run's output (the cases that have a comparison)."""
    guards: dict[str, Any] = field(default_factory=dict)
    """Guard name -> {'fingerprint', 'questions'}: the guards the run asked (run.json `guards`)."""
    judgments_sha256: str | None = None
    """sha256 of judgments.jsonl as `judgments` were read from it (None: no such file)."""

    def guard_said(self, record: CaseRecord, name: str) -> list[Judgment] | None:
        """The guard's verdicts on this record's output, one per question it is asked; None when the guard was not
        asked about it or any question has no verdict (an error, an unreadable reply, not asked yet)."""
        spec = self.guards.get(name)
        if not spec or not answered(record):
            return None
        mine = output_hash(record.output)
        found = [self.judgments.get(judgment_key(record.case_id, q, spec["fingerprint"], mine)) for q in spec["questions"]]
        said = [j for j in found if j is not None and j.error is None]
        return said if said and len(said) == len(found) else None

    def of(self, record: CaseRecord) -> Judgment | None:
        if self.fingerprint is None or not answered(record):
            return None
        key = judgment_key(record.case_id, _criterion_of(record), self.fingerprint, output_hash(record.output))
        return self.judgments.get(key)

    def pair(self, record: CaseRecord) -> tuple[Judgment | None, Judgment | None] | None:
        """The two pairwise judgments (candidate first, baseline first) of a case with a baseline output; None for
        a case the baseline run does not have."""
        base = self.baseline_hashes.get(record.case_id)
        if base is None or self.fingerprint is None or not answered(record):
            return None
        name, mine, fingerprint = _criterion_of(record), output_hash(record.output), self.fingerprint
        first, second = (self.judgments.get(judgment_key(record.case_id, name, fingerprint, mine, order, base))
                         for order in ("candidate_first", "baseline_first"))
        return first, second


def run_verdicts(run: RunDir, info: RunInfo) -> Verdicts | None:
    """The verdicts of the judge the run was configured with (run.json `judge`); None for a run with no judge."""
    spec, guards = getattr(info, "judge", None), getattr(info, "guards", None) or {}
    if not spec and not guards:
        return None
    spec = spec or {}
    judgments = read_judgments(run)
    return Verdicts(spec.get("fingerprint"), judgments, spec.get("on_error", "insufficient"),
                    _baseline_hashes(spec.get("baseline")), guards, run.read_sha256.get(JUDGMENTS_FILE))


def saved_verdicts(run: RunDir) -> Verdicts | None:
    """`run_verdicts` of a saved run directory; None when it has no run.json (records alone: nothing judged)."""
    if not (run.path / "run.json").is_file():
        return None
    return run_verdicts(run, run.read_info())


def _baseline_hashes(path: str | None) -> dict[str, str]:
    """The baseline run's output hashes; an unreadable baseline run gives none (no pairwise figures, never a
    guess)."""
    if not path:
        return {}

    try:
        records = RunDir(path).read_records()
    except (InputError, OSError):
        return {}
    return {r.case_id: output_hash(r.output) for r in records if answered(r)}
