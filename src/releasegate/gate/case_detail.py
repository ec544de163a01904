"""What the reports show of one case beyond its verdict: the input as sent, the expected answer, every check's
result, the server's error message for a failed request, and the reviewers' labels with their names and reasons.

One shape for every surface: report.json's failing cases carry it (`case_detail`), and the per-case tables of
the HTML, Markdown and CSV reports read the same functions, so a reader sees the same case everywhere. All of it
is untrusted text (suites, model outputs, server replies, reviewers): the renderers make it inert and escape it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..record.evidence import attempts_why, failure
from ..record.records import CaseRecord
from ..record.review_labels import LabelEdit, current_labels
from .case_scores import CaseScores, ChatMessage, ContentPart, ForbiddenScore, FormatCheck, PartScore, case_scores
from .case_scores import case_input as read_input

__all__ = ["failing_cases", "kept_failing", "failing_why", "flipped_cases", "FLIPPED_KEPT", "input_text", "expected_text", "check_results",
           "case_reviews", "case_detail", "cut", "DETAIL_CHARS", "user_message", "system_prompt"]

DETAIL_CHARS = 1000
"""report.json keeps this much of a failing case's input, expected answer and error message (records.jsonl has
all of it): enough to recognise the case, and 1,000 failing cases stay a few megabytes."""


def failing_why(record: CaseRecord, scores: dict[str, Any] | CaseScores) -> list[str]:
    """Why a case failed, one phrase per problem (its error class, a failed check with its detail, a forbidden
    hit); empty when it passed. The one rule every report and comparison uses for a case's pass or fail."""
    scored = scores if isinstance(scores, CaseScores) else case_scores(scores)
    why = []
    if (kind := failure(record)) is not None:
        why.append(f"error: {kind}")
    for key, part in (("answer", scored.answer), ("format", scored.format)):
        if part is not None and not part.passed:
            detail = part.detail or "; ".join(c.detail or "" for c in part.checks if not c.passed)
            why.append(f"{key}: {detail}")
    found = scored.forbidden
    if found is not None and found.hit:
        why.append("forbidden: " + forbidden_detail(found))
    elif found is not None and found.unknown:
        why.append("forbidden: no verdict from guard " + ", ".join(found.no_verdict))
    return why


def forbidden_detail(found: ForbiddenScore) -> str:
    """The categories a reply hit, each with the rule(s) that said so: 'credential_request (guard lg: S7)'."""
    by_category: dict[str, list[str]] = {}
    for match in found.matches:
        said = f"{match.rule}: {match.match}" if match.rule != "rules" else f"rules: {match.match!r}"
        by_category.setdefault(match.category, []).append(said)
    if not by_category:
        return ", ".join(found.categories)
    return ", ".join(f"{c} ({'; '.join(dict.fromkeys(s))})" for c, s in by_category.items())


def input_text(case_input: dict[str, Any]) -> str:
    """The case's input as a reader sees it: the prompt, or one 'role: content' line per chat message."""
    given = read_input(case_input)
    if given.prompt is not None:
        return given.prompt
    if given.messages is not None:
        return "\n".join(_message(m) for m in given.messages)
    return json.dumps(case_input, ensure_ascii=False, sort_keys=True, default=str)


def _message(message: Any) -> str:
    if not isinstance(message, dict):
        return str(message)
    said = ChatMessage.model_validate(message)
    return f"{said.role}: {_content(said)}"


def _content(message: ChatMessage) -> str:
    content = message.content
    if isinstance(content, list):  # content parts (text, images): their text
        content = " ".join(str(ContentPart.model_validate(p).text) if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)


def _messages(case_input: dict[str, Any], role: str) -> list[str]:
    given = read_input(case_input)
    if given.prompt is not None or given.messages is None:
        return []
    said = [ChatMessage.model_validate(m) for m in given.messages if isinstance(m, dict)]
    return [_content(m) for m in said if m.role == role]


def user_message(case_input: dict[str, Any]) -> tuple[str, int]:
    """What the case asks, as a reader looks for it first: the last user message (the prompt of a prompt case),
    and how many user turns the case has (1 for a prompt). A chat without a user turn: its whole input."""
    given = read_input(case_input)
    if given.prompt is not None:
        return given.prompt, 1
    turns = _messages(case_input, "user")
    return (turns[-1], len(turns)) if turns else (input_text(case_input), 0)


def system_prompt(case_input: dict[str, Any]) -> str:
    """The case's system message(s), one per line ('' for none): the reports show a prompt shared by many
    cases once, above their table, instead of in every row."""
    return "\n".join(_messages(case_input, "system"))


def expected_text(expected: Any) -> str:
    """The reference answer as text: a string as it is, anything else as JSON ('' for none)."""
    if expected is None:
        return ""
    if isinstance(expected, str):
        return expected
    return json.dumps(expected, ensure_ascii=False, sort_keys=True, default=str)


def check_results(scores: dict[str, Any] | CaseScores) -> list[dict[str, Any]]:
    """Every check of a case with its result, in the order the case has them: {'check': 'answer', 'format: json'
    or 'forbidden', 'passed': True, False or None (the check could not be made), 'detail': why}. Empty for a
    failed request: nothing was checked (its `why` and error message say what happened)."""
    scored = scores if isinstance(scores, CaseScores) else case_scores(scores)
    out = []
    if scored.answer is not None:
        out.append(_check("answer", scored.answer))
    for check in scored.format.checks if scored.format is not None else []:
        out.append(_check(f"format: {check.type}", check))
    if (hit := scored.forbidden) is not None:
        passed = None if hit.unknown else not hit.hit
        detail = forbidden_detail(hit) if hit.hit else "no guard verdict" if hit.unknown else ""
        out.append({"check": "forbidden", "passed": passed, "detail": detail})
    return out


def _check(name: str, score: PartScore | FormatCheck) -> dict[str, Any]:
    return {"check": name, "passed": None if score.unknown else bool(score.passed), "detail": score.detail or ""}


def case_reviews(edits: list[LabelEdit]) -> dict[str, list[dict[str, Any]]]:
    """Case id -> each reviewer's current label of it (the latest edit per reviewer, as the gate counts them):
    {'reviewer', 'label' ('approve' or 'reject'), 'reason'}, by reviewer name; an adjudicator's last, named so."""
    current: dict[str, list[LabelEdit]] = {}
    for edit in current_labels(edits).values():
        current.setdefault(edit.case_id, []).append(edit)
    out = {case_id: [{"reviewer": e.reviewer, "label": e.label, "reason": e.reason}
                     for e in sorted(found, key=lambda e: e.reviewer.casefold())] for case_id, found in current.items()}
    for edit in {e.case_id: e for e in edits if e.adjudication}.values():  # the one that decides: the latest
        out.setdefault(edit.case_id, []).append({"reviewer": f"{edit.reviewer} (adjudicator)", "label": edit.label,
                                                 "reason": edit.reason})
    return out


def case_detail(record: CaseRecord, scores: dict[str, Any], reviews: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The fields report.json keeps for a failing case besides its id, suite, output and why (`FailingCase`)."""
    asked, turns = user_message(record.input)
    return {
        "input": cut(input_text(record.input), DETAIL_CHARS),
        "user_message": cut(asked, DETAIL_CHARS), "user_turns": turns,
        "system_prompt": cut(system_prompt(record.input), DETAIL_CHARS),
        "expected": cut(expected_text(record.expected), DETAIL_CHARS),
        "error_message": cut(record.error_message, DETAIL_CHARS) if record.error_message else None,
        "checks": check_results(scores),
        "reviews": reviews or [],
    }


def cut(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, with '…' where it was cut."""
    return text if len(text) <= limit else text[:limit] + "…"


FLIPPED_KEPT = 200
"""A comparison lists at most this many flipped cases in each direction (the counts are whole)."""
_FLIP_CHARS = 300


Scores = dict[str, Any] | CaseScores
"""A record's scores, as `scorers.score_record` gives them or read into their type."""


def flipped_cases(pairs: Sequence[tuple[CaseRecord, CaseRecord, Scores, Scores]]) -> dict[str, Any]:
    """The shared cases whose pass or fail (`failing_why`) differs between the two runs: `pass_to_fail` (the
    candidate lost them) and `fail_to_pass` (it gained them), counted, and listed (the first FLIPPED_KEPT each)
    with the input, both outputs and why the failing side failed. `pairs`: (baseline record, candidate record,
    baseline scores, candidate scores) per shared case."""
    counts = {"pass_to_fail": 0, "fail_to_pass": 0}
    cases = []
    for base, cand, base_scores, cand_scores in pairs:
        base_why, cand_why = failing_why(base, base_scores), failing_why(cand, cand_scores)
        if bool(base_why) == bool(cand_why):
            continue
        direction = "pass_to_fail" if cand_why else "fail_to_pass"
        counts[direction] += 1
        if counts[direction] <= FLIPPED_KEPT:
            cases.append(_flip(direction, base, cand, base_why or cand_why))
    return {**counts, "cases": cases}


def _flip(direction: str, base: CaseRecord, cand: CaseRecord, why: list[str]) -> dict[str, Any]:
    return {"case_id": cand.case_id, "suite": cand.suite, "flip": direction, "why": why,
            "input": cut(input_text(cand.input), _FLIP_CHARS), "expected": cut(expected_text(cand.expected), _FLIP_CHARS),
            "baseline_output": cut(base.output or "", _FLIP_CHARS), "candidate_output": cut(cand.output or "", _FLIP_CHARS)}


def case_why(record: CaseRecord, scores: dict[str, Any]) -> list[str]:
    """Why a case failed (`failing_why`), and how many of its attempts failed when it was sent more than once;
    empty when it passed."""
    why = failing_why(record, scores)
    if why and (tried := attempts_why(record)):  # a case answered on a retry is in the counts
        why.append(tried)
    return why


def failing_cases(records: list[CaseRecord], scores: dict[str, Any], limit: int | None = 50,
                  reviews: dict[str, list[dict[str, Any]]] | None = None) -> list[dict[str, Any]]:
    """Cases with an error (an empty answer among them), a failed check or a forbidden hit, each with why, and
    what a reader needs to see the case (`case_detail`: input, expected answer, every check, the server's error
    message, the reviewers' labels from `reviews`, case id -> labels); first `limit` (None: all). A failing case
    sent more than once says how many of its attempts failed."""
    return kept_failing(records, scores, limit, reviews)[0]


def kept_failing(records: list[CaseRecord], scores: dict[str, Any], limit: int | None = 50,
                 reviews: dict[str, list[dict[str, Any]]] | None = None) -> tuple[list[dict[str, Any]], int]:
    """`failing_cases` (the first `limit`, None: all) and how many cases fail in all: the cases past `limit` are
    counted, never detailed (a run with 30,000 failing cases holds 50 details, not 30,000)."""
    out, total = [], 0
    for r in records:
        if why := case_why(r, scores[r.case_id]):
            total += 1
            if limit is None or total <= limit:
                out.append({"case_id": r.case_id, "suite": r.suite, "output": (r.output or "")[:300], "why": why,
                            **case_detail(r, scores[r.case_id], (reviews or {}).get(r.case_id))})
    return out, total
