"""The review sample: which cases people label. Seeded, stratified by slice, cases that failed a check
over-sampled, a random audit share on top. The same run and seed always give the same sample.

Each case gets a random key from a hash of (seed, case id), so the draw depends on neither the order of the records
nor the other cases; a weight w (`oversample`) turns it into u ** (1 / w), and taking the largest keys is a
weighted sample without replacement (Efraimidis-Spirakis). The draw, in order:

    1. stratum    `per_slice` cases from each stratum (a combination of the `stratify_by` keys)
    2. required   each required slice topped up to the labels it needs (`ReviewPolicy.labels_needed`)
    3. quota      each `quotas` slice topped up to its n
    4. judge      one judge-scored case from each sampling cell (below) of judge-scored cases none was drawn from
    5. audit      ceil(audit x cases) more cases, uniformly at random from those not drawn yet

Every step treats alike the cases that share a stratum, an automatic outcome and the required and quota slices
they belong to: such a set is a sampling cell (`sampling_cells`), and every case of a cell had the same chance
to be drawn, while cells had very different chances (an answer_fail case drawn 3x as often as a passing one, a
required slice topped up). Each item records its cell and the share of its cell drawn (`inclusion`), so what the
labels say can be weighted back to the run: judge calibration post-stratifies by cell (llm_judge.correction), and
a cell with no label leaves it unknown, hence step 4.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from ..border.files import exists, read_text
from ..clock import now
from ..errors import InputError
from ..inputs.review_policy import ReviewPolicy, slice_name
from ..model_base import Model
from ..record.metrics import select
from ..record.records import CaseRecord, RunDir
from ..record.review_cover import DrawnRow
from ..record.review_outcome import automatic_outcome, output_hash
from ..record.run_parts import problem_line

__all__ = ["ReviewItem", "ReviewSample", "choose_sample", "review_id", "SAMPLE_FILE", "read_sample", "write_sample",
           "sampling_cells", "drawn_rows"]

SAMPLE_FILE = "review_sample.json"
_NONE = "(none)"


class ReviewItem(Model):
    """One sampled case: a row of the review CSV."""

    review_id: str
    """Stable id of the review row: 'R-' and 12 hex digits of sha256(run id, case id)."""
    case_id: str
    """The case under review."""
    stratum: str
    """The case's stratum, e.g. 'suite=tickets,domain=customer_support'."""
    sampled_as: str
    """Why it was drawn: 'stratum', 'required', 'quota', 'judge' (the first of its sampling cell's judge-scored
    cases) or 'audit'."""
    outcome: str
    """The automatic outcome when it was drawn (`outcome.OUTCOMES`; 'borderline' in samples drawn before the split)."""
    output_hash: str
    """'sha256:<hex>' of the output as exported; an import must carry the same."""
    cell: str | None = None
    """The sampling cell it was drawn from (stratum | outcome | required and quota slices it is in, see
    `sampling_cells`): every case of a cell had the same chance to be drawn. None in samples drawn before."""
    inclusion: float | None = None
    """The share of its cell's cases that were drawn (its inclusion probability, as the draw realised it)."""


class ReviewSample(Model):
    """The cases chosen for human review in one run (`review_sample.json`)."""

    run_id: str
    """The run the sample was drawn from."""
    created_at: str
    """ISO 8601 UTC time the sample was drawn."""
    policy: dict[str, Any]
    """The review policy it was drawn with, seed included."""
    cases: int
    """How many cases the run had."""
    required: list[str]
    """The required slices found in the run, e.g. ['domain=customer_support']."""
    items: list[ReviewItem]
    """The sampled cases, ordered by stratum, then case id."""

    def by_id(self) -> dict[str, ReviewItem]:
        return {item.review_id: item for item in self.items}

    def drawn(self) -> tuple[DrawnRow, ...]:
        """Its rows as the gate holds labels to them (`record.review_cover`)."""
        return tuple(DrawnRow(i.review_id, i.case_id, i.output_hash) for i in self.items)


def review_id(run_id: str, case_id: str) -> str:
    """Stable across exports and re-samplings of the run; text in every spreadsheet (never read as a number)."""
    return "R-" + hashlib.sha256(f"{run_id}\0{case_id}".encode()).hexdigest()[:12]


def choose_sample(
    run_id: str, records: list[CaseRecord], scores: dict[str, dict[str, Any]], policy: ReviewPolicy, *, seed: int | None = None
) -> ReviewSample:
    """Draw the review sample of a run (see the module docstring for the order)."""
    spec = policy.sample
    seed = spec.seed if seed is None else seed
    outcome = {r.case_id: automatic_outcome(r, scores[r.case_id]) for r in records}
    weight = {cid: spec.oversample.get(o, 1.0) for cid, o in outcome.items()}
    key = {cid: _uniform(seed, "sample", cid) ** (1.0 / weight[cid]) for cid in outcome}
    stratum = {r.case_id: _stratum(r, spec.stratify_by) for r in records}
    chosen: dict[str, str] = {}  # case id -> sampled_as, in draw order

    def top_up(pool: list[CaseRecord], n: int, why: str, keys: dict[str, float] = key) -> None:
        have = sum(r.case_id in chosen for r in pool)
        rest = sorted((r for r in pool if r.case_id not in chosen), key=lambda r: (-keys[r.case_id], r.case_id))
        for r in rest[: max(0, n - have)]:
            chosen[r.case_id] = why

    for name in sorted(set(stratum.values())):
        top_up([r for r in records if stratum[r.case_id] == name], spec.per_slice, "stratum")
    for slice_ in policy.required(records):
        pool = select(records, slice_)
        top_up(pool, policy.labels_needed(len(pool)), "required")  # as many as its approval bound needs
    for quota in spec.quotas:
        top_up(select(records, quota.slice), quota.n, "quota")
    cell = sampling_cells(records, scores, policy)
    for pool in _judged_cells(records, scores, cell).values():
        top_up(pool, 1, "judge")
    if spec.audit > 0 and records:
        audit_key = {cid: _uniform(seed, "audit", cid) for cid in outcome}
        top_up(records, len(chosen) + math.ceil(spec.audit * len(records)), "audit", audit_key)

    by_id = {r.case_id: r for r in records}
    share = _drawn_share(cell, chosen)
    items = [
        ReviewItem(
            review_id=review_id(run_id, cid), case_id=cid, stratum=stratum[cid], sampled_as=why,
            outcome=outcome[cid], output_hash=output_hash(by_id[cid].output), cell=cell[cid],
            inclusion=share[cell[cid]],
        )
        for cid, why in chosen.items()
    ]
    items.sort(key=lambda i: (i.stratum, i.case_id))
    return ReviewSample(
        run_id=run_id, created_at=now(),
        policy={**policy.as_dict(), "sample": {**spec.as_dict(), "seed": seed}}, cases=len(records),
        required=[slice_name(s) for s in policy.required(records)], items=items,
    )


def sampling_cells(records: list[CaseRecord], scores: dict[str, dict[str, Any]], policy: ReviewPolicy) -> dict[str, str]:
    """Case id -> its sampling cell: 'stratum|outcome', then '|' and the required and quota slices it is in. The
    draw depends on nothing else, so the cases of a cell were equally likely to be drawn."""
    spec = policy.sample
    topped_up = [*policy.required(records), *(q.slice for q in spec.quotas)]
    members = [(slice_name(s), {r.case_id for r in select(records, s)}) for s in topped_up]
    out = {}
    for r in records:
        inside = "+".join(dict.fromkeys(name for name, ids in members if r.case_id in ids))
        cell = f"{_stratum(r, spec.stratify_by)}|{automatic_outcome(r, scores[r.case_id])}"
        out[r.case_id] = f"{cell}|{inside}" if inside else cell
    return out


def _judged_cells(records: list[CaseRecord], scores: dict[str, dict[str, Any]], cell: dict[str, str]) -> dict[str, list[Any]]:
    """Sampling cell -> its cases the judge gave a verdict on, for the cells that have any."""
    out: dict[str, list[Any]] = {}
    for r in records:
        if (scores[r.case_id].get("answer", {}).get("judge") or {}).get("passed") is not None:
            out.setdefault(cell[r.case_id], []).append(r)
    return dict(sorted(out.items()))


def _drawn_share(cell: dict[str, str], chosen: dict[str, str]) -> dict[str, float]:
    """Cell -> the share of its cases in the sample."""
    sizes: dict[str, list[int]] = {}
    for cid, name in cell.items():
        size = sizes.setdefault(name, [0, 0])
        size[0] += 1
        size[1] += cid in chosen
    return {name: drawn / cases for name, (cases, drawn) in sizes.items()}


def read_sample(run: RunDir) -> ReviewSample | None:
    """The run's saved sample, or None when `review export` has not drawn one yet."""
    path = run.path / SAMPLE_FILE
    if not exists(path) and not path.is_symlink():  # a FIFO, a device, a directory or a dangling link is no
        return None  # "not drawn yet": read_text refuses it, naming the file (its drawn rows are never dropped)
    try:
        return ReviewSample.model_validate_json(read_text(path, what="review sample"))
    except ValueError as exc:
        raise InputError(f"unreadable review sample: {problem_line(exc)}", file=path,
                         hint="draw it again with releasegate review export --resample") from None


def drawn_rows(run: RunDir) -> tuple[DrawnRow, ...]:
    """The rows of the run's review sample; none before `review export` drew one."""
    sample = read_sample(run)
    return () if sample is None else sample.drawn()


def write_sample(run: RunDir, sample: ReviewSample) -> None:
    run.write_text(SAMPLE_FILE, json.dumps(sample.model_dump(), indent=2, ensure_ascii=False) + "\n")


def _stratum(record: CaseRecord, keys: tuple[str, ...]) -> str:
    values = {k: record.slice_value(k) for k in keys}
    return slice_name({k: _NONE if v is None else v for k, v in values.items()}) or "all"


def _uniform(seed: int, salt: str, case_id: str) -> float:
    """A number in (0, 1) fixed by (seed, salt, case id)."""
    digest = hashlib.sha256(f"{seed}\0{salt}\0{case_id}".encode()).digest()
    return (int.from_bytes(digest[:8], "big") + 0.5) / 2.0**64
