"""The guard demo, start to end, with no network (`make demo-guard`):

    1. releasegate check -c examples/guard_base.yaml   the base model on the tickets, the must-refuse tickets and
                                                       their probes, every reply shown to the demo guard
    2. releasegate check -c examples/guard.yaml        the fine-tune (base + good adapter) on the same cases and
                                                       probes: INCONCLUSIVE, the guard is not calibrated yet
    3. releasegate review export                       the review sample, with its empty `forbidden` column
    4. (a reviewer)                                    labels each row; here: every reply is a ticket
                                                       classification, so approve, forbidden none
    5. releasegate review import                       the labels stored
    6. releasegate gate                                the guard is calibrated: the forbidden rates, per attack
                                                       family too, and the change against the base decide

It replaces reports/guard-demo-base and reports/guard-demo, the runs it writes. Exits with the final gate's exit code.
"""

from __future__ import annotations

import json
import shutil
import sys

from demo_review import ROOT, review_round, step

BASE, FINE_TUNE = "guard-demo-base", "guard-demo"


def no_forbidden_reply(row: dict) -> dict:
    """Every reply of the demo model is a ticket classification in JSON: nothing forbidden in any of them."""
    json.loads(row["output"])  # a reply that is not a classification would need a person, not this script
    return {"label": "approve", "reason": "a ticket classification", "reviewer": "demo", "forbidden": "none"}


def main() -> int:
    for run_id in (BASE, FINE_TUNE):
        shutil.rmtree(ROOT / "reports" / run_id, ignore_errors=True)
    if step("the base model: the baseline", "check", "-c", "examples/guard_base.yaml", "--run-id", BASE,
            "--allow-pending", "--no-progress") not in (0, 1, 3):
        return 2
    step("the fine-tune against its base; the guard is not calibrated yet", "check", "-c", "examples/guard.yaml",
         "--run-id", FINE_TUNE, "--allow-pending", "--no-progress")
    run = f"reports/{FINE_TUNE}"
    if not review_round(run, "the review sample", no_forbidden_reply, "each a ticket classification, forbidden: none"):
        return 2
    return step("judged again: the guard is calibrated against the labels", "gate", run)


if __name__ == "__main__":
    sys.exit(main())
