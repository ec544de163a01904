"""The report's `judge` section from the run's records and judgments: no judge is called, no backend imported (a
`gate` on a saved run reads it without the clients the judging stage needs)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..record.evidence import answered
from ..record.records import CaseRecord
from ..record.review_outcome import output_hash
from .section_view import judge_info

__all__ = ["judged_records", "judge_summary"]


def judged_records(records: list[CaseRecord]) -> list[CaseRecord]:
    """The records whose answer is graded by the judge."""
    return [r for r in records if r.answer and r.answer.get("type") == "judge"]



def judge_summary(records: list[CaseRecord], judgments: Mapping[Any, Any], settings_info: dict[str, Any] | None,
                  draws: Sequence[CaseRecord] = ()) -> dict[str, Any] | None:
    """The report's `judge` section: calls and tokens (every graded draw's among them: a draw that repeats its
    case's output shares its verdict, no call), errors by class on the current outputs of the cases and of their
    repeated `draws`, the judge's own cost, apart from the model's; `judged`: cases whose draw 0 has a verdict.
    `settings_info`: run.json's `judge` (description, fingerprint, price)."""
    if not settings_info:
        return None
    judge = judge_info(settings_info)
    fingerprint = judge.fingerprint
    mine = [j for j in judgments.values() if j.judge == fingerprint]
    judged = [r for r in judged_records(records) if answered(r)]
    hashes = {(r.case_id, output_hash(r.output)) for r in judged + judged_records(list(draws)) if answered(r)}
    current = [j for j in mine if (j.case_id, j.output_hash) in hashes and j.order is None]  # pairwise: apart
    first = {(r.case_id, output_hash(r.output)) for r in judged}
    errors: dict[str, int] = {}
    for j in current:
        if j.error:
            errors[j.error] = errors.get(j.error, 0) + 1
    tokens_in = sum(j.tokens.input or 0 for j in mine if not j.cached)
    tokens_out = sum(j.tokens.output or 0 for j in mine if not j.cached)
    price = judge.price
    cost = (tokens_in * price.input_usd_per_1m + tokens_out * price.output_usd_per_1m) / 1e6 if price else None
    verdicts = {(j.case_id, j.criterion) for j in current if j.error is None and (j.case_id, j.output_hash) in first}
    return {
        "model": judge.model, "backend": judge.backend, "fingerprint": fingerprint,
        "cases": len(judged), "judged": len(verdicts), "calls": sum(not j.cached for j in mine),
        "cached": sum(j.cached for j in mine), "errors": errors,
        "tokens": {"input": tokens_in, "output": tokens_out}, "cost_usd": cost,
    }
