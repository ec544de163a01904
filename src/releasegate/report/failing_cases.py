"""The failing cases as report.md (a PR comment, a CI job summary) shows them: what each case asked.

A row shows the case's last user message (a prompt case: its prompt), not its whole input: a system prompt that
many cases share would fill every cell and hide what each case asked. Each distinct system prompt is printed
once, above the table, with the cases that use it. A long text is cut at a word, with '…'; records.jsonl and
report.csv in the run directory keep every text whole. Every cell is untrusted text made inert by `escape`
(report.markdown's `md_text`: one line, pipes, backticks and HTML escaped, no link, no mention).
"""

from __future__ import annotations

from collections.abc import Callable

from ..record.gate_report import FailingCase
from .case_models import CaseReview
from .paired_models import read_section

__all__ = ["failing_case_lines", "cut_at_word", "MESSAGE_CHARS", "CELL_CHARS"]

MESSAGE_CHARS = 200
"""A user message is cut at about this many characters in a table row."""
CELL_CHARS = 120
"""The expected answer, the output and a review reason are cut at about this many."""
SYSTEM_CHARS = 400
"""A system prompt above the table is cut at about this many."""
FULL_TEXT = ("Long texts are cut (…); the run directory has each in full: records.jsonl (the case's input and "
             "output) and report.csv.")


def failing_case_lines(shown: list[FailingCase], escape: Callable[[str], str]) -> list[str]:
    """The system prompts of the `shown` cases, each once, then one table row per case."""
    rows = ["| case | suite | why | user message | expected | output | review |", "|---|---|---|---|---|---|---|"]
    for f in shown:
        rows.append("| " + " | ".join(escape(c) for c in _cells(f)) + " |")
    cut = any(len(t) > limit for f in shown for t, limit in _texts(f))
    return _system_lines(shown, escape) + rows + (["", FULL_TEXT] if cut else [])


def _system_lines(shown: list[FailingCase], escape: Callable[[str], str]) -> list[str]:
    """'System prompt of every case below: ...', or one line per distinct prompt naming its cases."""
    prompts: dict[str, list[str]] = {}
    for f in shown:
        if f.system_prompt:
            prompts.setdefault(f.system_prompt, []).append(f.case_id)
    if not prompts:
        return []
    if len(prompts) == 1 and len(next(iter(prompts.values()))) == len(shown):
        (text,) = prompts
        return [f"System prompt of every case below: {escape(cut_at_word(text, SYSTEM_CHARS))}", ""]
    lines = [f"System prompt of {', '.join(escape(i) for i in ids)}: {escape(cut_at_word(text, SYSTEM_CHARS))}"
             for text, ids in prompts.items()]
    return [line for pair in zip(lines, [""] * len(lines)) for line in pair]


def _cells(f: FailingCase) -> list[str]:
    output = f.output or (f"no output: {f.error_message}" if f.error_message else "")
    return [f.case_id, f.suite, "; ".join(f.why), _asked(f), cut_at_word(f.expected, CELL_CHARS),
            cut_at_word(output, CELL_CHARS),
            "; ".join(_review_text(read_section(CaseReview, r, "failing_cases.reviews")) for r in f.reviews)]


def _asked(f: FailingCase) -> str:
    """The last user message; a case of several user turns says which turn it is."""
    if not f.user_message and f.user_turns is None:  # a report.json that predates `user_message`
        return cut_at_word(f.input, MESSAGE_CHARS)
    turn = f"(last of {f.user_turns} user turns) " if (f.user_turns or 0) > 1 else ""
    return turn + cut_at_word(f.user_message, MESSAGE_CHARS)


def _texts(f: FailingCase) -> list[tuple[str, int]]:
    return [(f.user_message or f.input, MESSAGE_CHARS), (f.system_prompt, SYSTEM_CHARS), (f.expected, CELL_CHARS),
            (f.output, CELL_CHARS), (f.error_message or "", CELL_CHARS)]


def cut_at_word(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters with '…': at the last space of its final fifth when there is one, so
    no word is cut in half; mid-word only for a text without spaces (a long token, most non-spaced scripts)."""
    text = " ".join(text.split())  # one line: a table cell holds no line break
    if len(text) <= limit:
        return text
    head = text[:limit]
    space = head.rfind(" ", limit * 4 // 5)
    return (head[:space] if space > 0 else head).rstrip() + "…"


def _review_text(review: CaseReview) -> str:
    """'reject by alice: wrong intent'."""
    reason = f": {cut_at_word(review.reason, CELL_CHARS)}" if review.reason else ""
    return f"{review.label} by {review.reviewer}{reason}"
