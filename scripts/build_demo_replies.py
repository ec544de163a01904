"""Build the open-ended demo deterministically: reply drafts for the demo's support tickets, graded by a judge.

    suites/demo/replies.jsonl           60 cases: write a reply to a support ticket (answer: {type: judge})
    suites/demo/reply_drafts.jsonl      the drafts a fine-tuned reply model wrote (the replayed target): most
                                        helpful, some that promise what support may not, ask for a password,
                                        ignore the question, or are rude
    suites/demo/reply_verdicts.jsonl    scripted verdicts of a judge (replayed), right on most drafts and
                                        wrong on a few, as a real judge is
    suites/demo/reply_labels.csv        what reviewers would say of every draft (case id, label): the
                                        calibration demo imports the rows the review sample draws

Nothing random: each ticket's draft kind comes from its position, so a rebuild gives the same files.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "suites" / "demo"
SYSTEM = "You are a customer support agent. Write a short, polite reply draft to the ticket."

GOOD = {
    "refund": "Thank you for reaching out. I have checked your return and the refund is being processed; it "
              "usually reaches your account within 5 to 7 business days. I will update you if anything changes.",
    "billing": "Thank you for letting us know. I have opened a billing review for this invoice and our billing "
               "team will correct the amount and send you a revised invoice within two business days.",
    "technical": "Sorry for the trouble. Please restart the device and update it to the latest firmware. If the "
                 "error comes back, reply with the error code and we will arrange a repair or replacement.",
    "account": "Thanks for getting in touch. You can update your profile under Settings > Account. If anything "
               "there does not work, reply to this message and I will make the change for you.",
    "shipping": "Thanks for your patience. I have checked your order and sent you the tracking link by email; "
                "if it has not arrived in three days we will send a replacement at no cost.",
}
BAD = {
    "promise": ("We promise a full refund today, guaranteed, no questions asked.", "promises what support may not"),
    "password": ("To look into this, please send me your account password and the PIN of your card.",
                 "asks for a secret"),
    "off_topic": ("Thank you for contacting us. Have you seen our new spring collection? Use code SPRING10.",
                  "ignores the question"),
    "rude": ("Read the help center before writing to us. This is not our problem.", "rude"),
}
BAD_AT = {4: "promise", 9: "password", 15: "off_topic", 22: "rude", 28: "promise", 33: "off_topic",
          39: "password", 45: "rude", 51: "off_topic", 57: "promise"}
"""Ticket index -> the kind of bad draft written for it (10 of 60)."""
JUDGE_WRONG_AT = {12, 33, 47}
"""Drafts the scripted judge grades wrongly (a helpful draft failed, an off-topic one passed, ...)."""


def main() -> None:
    tickets = [json.loads(line) for line in (DEMO / "tickets.jsonl").open(encoding="utf-8")]
    cases, drafts, verdicts, labels = [], [], [], []
    for i, t in enumerate(tickets):
        case_id = t["id"].replace("tickets", "replies")
        intent = t["expected"]["intent"]
        cases.append({
            "id": case_id, "messages": [{"role": "system", "content": SYSTEM}, t["messages"][1]],
            "expected": GOOD[intent], "tags": {"domain": "customer_support", "intent": intent},
        })
        bad = BAD_AT.get(i)
        text, why = BAD[bad] if bad else (GOOD[intent], "answers the question politely")
        drafts.append({"id": case_id, "output": text})
        good = bad is None
        judged = good != (i in JUDGE_WRONG_AT)
        reason = ("the draft " + why) if judged == good else "the draft seems " + ("fine" if judged else "unhelpful")
        verdicts.append({"id": case_id, "output": json.dumps({"reason": reason, "verdict": "pass" if judged else "fail"})})
        labels.append({"case_id": case_id, "label": "approve" if good else "reject", "reason": why})
    _write_jsonl(DEMO / "replies.jsonl", cases)
    _write_jsonl(DEMO / "reply_drafts.jsonl", drafts)
    _write_jsonl(DEMO / "reply_verdicts.jsonl", verdicts)
    with (DEMO / "reply_labels.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=["case_id", "label", "reason"])
        writer.writeheader()
        writer.writerows(labels)


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
