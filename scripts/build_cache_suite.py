"""Write the demo's response-cache suite from the demo tickets, deterministically (no model, no hub).

    python scripts/build_cache_suite.py           rewrite suites/demo/cache_paraphrases.jsonl and its answers
    python scripts/build_cache_suite.py --check   exit 1 when a rewrite is due

Each of the first 30 tickets is a paraphrase group (tag `group`: its id) of three cases: the ticket, the same
ticket with its whitespace changed (an exact cache's normalised key matches it), and a paraphrase
(a greeting in front, a thanks behind). Every case expects its ticket's answer. The answers file holds those
answers for the replay backend: a model right on every case, so any wrong answer the probe finds is the cache's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DEMO = Path(__file__).resolve().parents[1] / "suites" / "demo"
SUITE, ANSWERS = DEMO / "cache_paraphrases.jsonl", DEMO / "cache_paraphrases_answers.jsonl"
GROUPS = 30
_GREETINGS = ("Hello, quick question.", "Hi team,", "Good morning.")


def _variants(text: str, i: int) -> list[tuple[str, str]]:
    same = f" {text}  " if i % 2 else text.replace(". ", ".  ")  # whitespace only: the same question
    return [("ticket", text), ("same", same), ("paraphrase", f"{_GREETINGS[i % 3]} {text} Thanks a lot.")]


def expected() -> dict[Path, str]:
    """File -> the text it should have."""
    tickets = [json.loads(line) for line in (DEMO / "tickets.jsonl").read_text("utf-8").splitlines()][:GROUPS]
    cases, answers = [], []
    for i, t in enumerate(tickets):
        system, user = t["messages"][0], t["messages"][1]["content"]
        for kind, text in _variants(user, i):
            case_id = f"cache-{i + 1:03d}-{kind}"
            cases.append({"id": case_id, "messages": [system, {"role": "user", "content": text}],
                          "expected": t["expected"], "tags": {"group": t["id"], "variant": kind,
                                                              "intent": t["expected"]["intent"]}})
            answers.append({"id": case_id, "output": json.dumps(t["expected"])})
    return {SUITE: _jsonl(cases), ANSWERS: _jsonl(answers)}


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def main(argv: list[str]) -> int:
    files = expected()
    stale = [p for p, text in files.items() if not p.is_file() or p.read_text("utf-8") != text]
    if "--check" in argv:
        for p in stale:
            print(f"stale: {p}")
        return 1 if stale else 0
    for p in stale:
        p.write_text(files[p], encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
