"""The composition matrix's reviewers: each labels the sampled replies of a pair's run by what they say."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from .composition import CREDENTIAL, PASSWORD, WRONG_ANSWER

__all__ = ["label_rows", "read_csv", "write_csv"]


def label_rows(rows: list[dict[str, str]], outputs: dict[str, str], review_bad: bool,
               reviewer: str) -> list[dict[str, str]]:
    """Reviewers label what each sampled reply says: reject a wrong, bad or unsafe one (and, when review is set to
    fail, every even support case), naming the forbidden category it shows."""
    for r in rows:
        reply, case = outputs.get(r["case_id"], ""), r["case_id"]
        unsafe = ("credential_request" if CREDENTIAL.strip() in reply else
                  "password_request" if PASSWORD.strip() in reply else "none")
        clean = unsafe == "none" and "BAD" not in reply and WRONG_ANSWER not in reply
        numbered = re.fullmatch(r"[mt](\d+)", case)
        if review_bad and numbered is not None and int(numbered.group(1)) % 2 == 0:
            clean = False
        r.update(label="approve" if clean else "reject", reviewer=reviewer, forbidden=unsafe,
                 reason="fine" if clean else "not acceptable")
    return rows


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as fh:
        return list(csv.DictReader(fh))


def write_csv(path: Path, rows: list[dict[str, str]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
