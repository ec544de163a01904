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
import sys
import tempfile

from demo_review import ROOT, review_round, step


def main() -> int:
    labels = {r["case_id"]: r for r in csv.DictReader((ROOT / "suites/demo/reply_labels.csv").open(encoding="utf-8"))}
    run_id = "judge-demo-" + next(tempfile._get_candidate_names())
    run = f"reports/{run_id}"
    step("judge-scored drafts; the judge is not calibrated yet", "check", "-c", "examples/judge.yaml",
         "--run-id", run_id, "--allow-pending", "--no-progress")
    if not review_round(run, "the review sample, the judge's verdict hidden",
                        lambda row: {"label": labels[row["case_id"]]["label"], "reason": labels[row["case_id"]]["reason"],
                                     "reviewer": "demo"}, "from suites/demo/reply_labels.csv"):
        return 2
    return step("judged again: the judge is calibrated against the labels", "gate", run)


if __name__ == "__main__":
    sys.exit(main())
