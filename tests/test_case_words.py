"""The failing cases show what each case asked: the last user message in report.md, the PR comment and the
GitHub step summary (a shared system prompt once, above the table), long messages cut at a word with the full text
named, untrusted text that cannot break the table; "N answered, M right" where requests succeeded and answers
failed."""

from __future__ import annotations

import json
from pathlib import Path

from test_false_pass import WRONG, Run, ok
from test_reports import md_rows

SYSTEM = ("You are the triage desk of a hospital. Answer with JSON only: {\"intent\": ...}. Never diagnose, never "
          "prescribe, and send anything urgent to a person; keep every answer under fifty words, in the patient's language.")
ASKED = "가슴이 답답하고 왼팔이 저려요 (chest tightness, left arm numb): what do I do?"
HOSTILE = "a | b\nsecond line `code` <b>bold</b> [x](http://evil.example) @here"


def _chat(i: int, user: str, *, earlier: list[str] = (), system: str | None = SYSTEM) -> dict:
    record = ok(i, output=WRONG)
    messages = [{"role": "system", "content": system}] if system else []
    for turn in earlier:
        messages += [{"role": "user", "content": turn}, {"role": "assistant", "content": "noted"}]
    record["input"] = {"messages": messages + [{"role": "user", "content": user}]}
    return record


def _gated(tmp_path: Path, cli, records: list[dict]) -> Path:
    path = Run(records).build(tmp_path)
    code, _, err = cli("gate", path)
    assert code in (0, 1), err  # a pass over a few failing cases lists them too
    return path


def _visible(cell: str) -> str:
    """A cell as a reader sees it: without the zero-width characters that keep links and mentions inert."""
    return cell.replace("\u200d", "").replace("\u200b", "")


def _failing_rows(markdown: str) -> dict[str, list[str]]:
    return {r[0]: r for r in md_rows(markdown, "<summary>Failing cases")}


def test_the_step_summary_shows_each_failing_cases_user_message_and_the_system_prompt_once(tmp_path, cli, monkeypatch):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    records = [_chat(i, f"{ASKED} #{i}") for i in range(3)] + [ok(i) for i in range(3, 40)]
    path = _gated(tmp_path, cli, records)
    text = summary.read_text()
    assert text == (path / "report.md").read_text() + "\n"  # the PR comment and the job summary are one text
    rows = _failing_rows(text)
    assert set(rows) == {"c000", "c001", "c002"}
    for i in range(3):
        assert _visible(rows[f"c{i:03d}"][3]) == f"{ASKED} #{i}"  # what the case asked, whole: not the system prompt
    assert text.count("You are the triage desk") == 1  # the shared system prompt once, above the table
    header = text[text.index("<summary>Failing cases"):].split("| case |")[0]
    assert "System prompt of every case below: You are the triage desk" in header


def test_a_multi_turn_case_shows_its_last_user_turn(tmp_path, cli):
    records = [_chat(0, "and now it is worse", earlier=["my head hurts", "since yesterday"])]
    from releasegate.gate.case_detail import user_message

    rows = _failing_rows((_gated(tmp_path, cli, records + [ok(i) for i in range(1, 40)]) / "report.md").read_text())
    assert rows["c000"][3] == "(last of 3 user turns) and now it is worse"
    assert user_message(records[0]["input"]) == ("and now it is worse", 3)


def test_different_system_prompts_are_each_named_once_with_their_cases(tmp_path, cli):
    records = [_chat(0, "q0", system="Prompt A"), _chat(1, "q1", system="Prompt B"), _chat(2, "q2", system="Prompt A"),
               _chat(3, "q3", system=None)] + [ok(i) for i in range(4, 44)]
    text = (_gated(tmp_path, cli, records) / "report.md").read_text()
    assert "System prompt of c000, c002: Prompt A" in text and "System prompt of c001: Prompt B" in text
    assert text.count("Prompt A") == 1 and "every case below" not in text


def test_a_long_message_is_cut_at_a_word_and_the_full_text_is_named(tmp_path, cli):
    from releasegate.report.failing_cases import FULL_TEXT, MESSAGE_CHARS

    long = " ".join(f"word{i:03d}" for i in range(200))
    path = _gated(tmp_path, cli, [_chat(0, long)] + [ok(i) for i in range(1, 40)])
    text = (path / "report.md").read_text()
    cell = _failing_rows(text)["c000"][3]
    assert cell.endswith("…") and len(cell) <= MESSAGE_CHARS + 1
    assert long.startswith(cell[:-1]) and cell[:-1].split()[-1] in long.split()  # no word cut in half
    assert FULL_TEXT in text
    journal = [json.loads(line) for line in (path / "records.jsonl").read_text().splitlines()]
    assert journal[0]["input"]["messages"][-1]["content"] == long  # the full text, in the run directory


def test_untrusted_text_cannot_break_the_table(tmp_path, cli):
    path = _gated(tmp_path, cli, [_chat(0, HOSTILE, system=HOSTILE)] + [ok(i) for i in range(1, 40)])
    text = (path / "report.md").read_text()
    table = text[text.index("| case | suite |"):].split("\n\n")[0].splitlines()
    assert len(table) == 3  # header, delimiter, one row: the newline did not end the row
    row = _failing_rows(text)["c000"]
    assert len(row) == 7 and _visible(row[3]) == " ".join(HOSTILE.split())
    for raw in ("<b>", "`code`", "[x](", "@here"):
        assert raw not in text  # no tag, no code span, no link, no mention
    prompt_line = next(line for line in text.splitlines() if line.startswith("System prompt of"))
    assert "<b>" not in prompt_line and "\\|" in prompt_line


def test_answered_and_right_are_counted_apart(tmp_path, cli):
    path = _gated(tmp_path, cli, [ok(i, output=WRONG) for i in range(43)])
    md = (path / "report.md").read_text()
    assert "- cases: 43 (43 answered, 0 right)" in md and "succeeded" not in md
    assert "43 cases (43 answered, 0 right)" in " ".join((path / "report.html").read_text().split())
    assert json.loads((path / "report.json").read_text())["counts"]["right"] == 0


def test_the_message_helpers_read_prompts_and_chats():
    from releasegate.gate.case_detail import system_prompt, user_message
    from releasegate.report.failing_cases import cut_at_word

    assert user_message({"prompt": "hi"}) == ("hi", 1) and system_prompt({"prompt": "hi"}) == ""
    chat = {"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": [{"type": "text", "text": "look"}]}]}
    assert user_message(chat) == ("look", 1) and system_prompt(chat) == "S"
    assert user_message({"messages": [{"role": "system", "content": "only"}]}) == ("system: only", 0)
    assert cut_at_word("abc " * 100, 50).endswith("abc…") and cut_at_word("x" * 100, 50) == "x" * 50 + "…"
