"""The open-ended demo, start to end, with no network (`make demo-judge`):

    1. releasegate check -c examples/judge.yaml     reply drafts graded by the (replayed) judge: INCONCLUSIVE,
                                                    the judge is not calibrated on this suite yet
    2. releasegate review export                    the review sample, the judge's verdict hidden
    3. (a reviewer)                                 labels each row; here from suites/demo/reply_labels.csv
    4. releasegate review import                    the labels stored
    5. releasegate gate                             the judge agrees with the reviewers: calibrated, and the
                                                    helpfulness criterion decides on reviewer-corrected accuracy

Exits with the final gate's exit code.
"""

from __future__ import annotations

import csv
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RELEASEGATE = [sys.executable, "-m", "releasegate"]


def step(title: str, *args: str) -> int:
    print(f"\n$ releasegate {' '.join(args)}    # {title}", flush=True)
    return subprocess.run([*RELEASEGATE, *args], cwd=ROOT).returncode


def label_like_a_reviewer(exported: Path, filled: Path) -> int:
    labels = {r["case_id"]: r for r in csv.DictReader((ROOT / "suites/demo/reply_labels.csv").open(encoding="utf-8"))}
    with exported.open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        row.update(label=labels[row["case_id"]]["label"], reason=labels[row["case_id"]]["reason"], reviewer="demo")
    with filled.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"\n# a reviewer labelled {len(rows)} rows (from suites/demo/reply_labels.csv)")
    return len(rows)


def main() -> int:
    run_id = "judge-demo-" + next(tempfile._get_candidate_names())
    run = f"reports/{run_id}"
    step("judge-scored drafts; the judge is not calibrated yet", "check", "-c", "examples/judge.yaml",
         "--run-id", run_id, "--allow-pending", "--no-progress")
    with tempfile.TemporaryDirectory() as tmp:
        exported, filled = Path(tmp) / "review.csv", Path(tmp) / "filled.csv"
        if step("the review sample, the judge's verdict hidden", "review", "export", run, "-o", str(exported)):
            return 2
        label_like_a_reviewer(exported, filled)
        if step("the labels", "review", "import", run, str(filled)):
            return 2
    return step("judged again: the judge is calibrated against the labels", "gate", run)


if __name__ == "__main__":
    sys.exit(main())
