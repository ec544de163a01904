"""Attacks on the release surfaces (history, bless, a blessed baseline, attest, verify-attestation, promote), one
test per attack, each named after it: what a deploy step, a gate or a trend page must never accept or show."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from test_bless import LENIENT, bless, check, passing_project, set_rubric


def _rubric_against(project: Path, **extra) -> None:
    set_rubric(project, {**LENIENT, "baseline": {"blessed": "prod", "reports": "../reports", **extra}})


def _forge(run: Path) -> None:
    """The run's records rewritten and its seal rewritten to match: whoever can write the run can do both."""
    records = run / "records.jsonl"
    records.write_text(records.read_text().replace('\\"intent\\": \\"billing\\"', '\\"intent\\": \\"other\\"'))
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["sealed"]["files"]["records.jsonl"]["sha256"] = hashlib.sha256(records.read_bytes()).hexdigest()
    manifest["sealed"]["files"]["records.jsonl"]["bytes"] = records.stat().st_size
    (run / "manifest.json").write_text(json.dumps(manifest))


def test_compare_by_name_with_a_blessed_run_changed_since_says_so(project, cli):
    passing_project(project)
    base = check(cli, project, "base")
    assert bless(cli, base)[0] == 0
    cand = check(cli, project, "cand")
    _forge(base)
    code, out, err = cli("compare", "prod", cand, "--reports", project / "reports", "--json")
    assert code == 3 and "changed since it was blessed" in out + err and json.loads(out)["verdict"] == "INCONCLUSIVE"
