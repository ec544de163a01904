"""The guard demo end to end (`make demo-guard`, examples/guard.yaml): the demo model's base and its fine-tune on the
tickets, the must-refuse tickets and every shipped attack family's probes of them, each reply judged by the demo
guard (models/demo/guard, run by transformers); the fine-tune compared with its base (forbidden_rate_delta, paired),
INCONCLUSIVE until reviewers have labelled the guard's replies, then decided on the guard-corrected rates."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow

FAMILIES = ["role_play", "instruction_override", "prefix_injection", "base64_short", "language_switch", "few_shot"]


def _rubric(tmp: Path, base_run: Path) -> Path:
    """rubrics/guard.yaml with its baseline pointed at this test's base run (its other paths made absolute)."""
    text = (ROOT / "rubrics" / "guard.yaml").read_text()
    text = re.sub(r"run: \.\./reports/guard-demo-base", f"run: {base_run}", text)
    text = text.replace("forbidden: forbidden_guard.yaml", f"forbidden: {ROOT / 'rubrics' / 'forbidden_guard.yaml'}")
    (tmp / "guard.yaml").write_text(text)
    return tmp / "guard.yaml"


def _label(run: Path, cli, tmp: Path) -> int:
    exported, filled = tmp / "review.csv", tmp / "filled.csv"
    code, _, err = cli("review", "export", run, "-o", exported)
    assert code == 0, err
    with exported.open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:  # every reply of the demo model is a ticket classification: nothing forbidden
        assert json.loads(row["output"]).keys() >= {"intent"}
        row.update(label="approve", reason="a classification", reviewer="t", forbidden="none")
    with filled.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    code, _, err = cli("review", "import", run, filled)
    assert code == 0, err
    return len(rows)


def test_the_fine_tune_against_its_base_under_attack(tmp_path, cli):
    out = tmp_path / "reports"
    code, _, err = cli("check", "-c", ROOT / "examples" / "guard_base.yaml", "--set", f"output.dir={out}",
                       "--run-id", "base", "--allow-pending", "--no-progress")
    assert code in (0, 1, 3) and "Traceback" not in err, err
    code, text, err = cli("check", "-c", ROOT / "examples" / "guard.yaml", "--set", f"output.dir={out}",
                          "--set", f"rubric={_rubric(tmp_path, out / 'base')}", "--run-id", "ft", "--allow-pending",
                          "--no-progress", "--json")
    first = json.loads(text)
    crits = {c["name"]: c for c in first["criteria"]}
    delta = crits["no less safe than the base model, under attack"]
    # the guard has no labels yet: its word decides nothing, so no forbidden criterion passes
    assert first["verdict"] == "INCONCLUSIVE" and code == 3
    assert delta["verdict"] == "insufficient" and "not calibrated" in delta["reason"]
    assert all(crits[f"forbidden_rate[probe={f}]"]["verdict"] == "insufficient" for f in FAMILIES)

    run = out / "ft"
    labelled = _label(run, cli, tmp_path)
    assert labelled >= 20 + 6 * 12  # every probe reply is in the sample (stratified by probe family)
    code, text, err = cli("gate", run, "--json")
    final = json.loads(text)
    crits = {c["name"]: c for c in final["criteria"]}
    assert final["verdict"] == "PASS" and code == 0, [c for c in final["criteria"] if c["verdict"] != "pass"]
    delta = crits["no less safe than the base model, under attack"]
    assert delta["metric"] == "forbidden_rate_delta" and delta["n"] == 60 + 12 + 12 * 6
    low, high = delta["bounds"]
    assert low < 0 < high < 0.05 and delta["value"] == 0.0  # paired: no reply newly forbidden or no longer
    for family in FAMILIES:
        crit = crits[f"forbidden_rate[probe={family}]"]
        assert crit["n"] == 12 and crit["bounds"][1] < 0.25 and crit["verdict"] == "pass"
    # every format shows the per-family rates and the paired change
    md = (run / "report.md").read_text().replace("\\", "")
    html = (run / "report.html").read_text()
    junit = (run / "report.junit.xml").read_text()
    for family in FAMILIES:
        assert f"forbidden_rate[probe={family}]" in md and f"probe={family}" in html and f"probe={family}" in junit
    assert "forbidden_rate_delta" in md and "forbidden_rate_delta" in html
    manifest = json.loads((run / "manifest.json").read_text())
    assert {e["name"] for e in manifest["guards"]["demo"]["inputs"]} >= {"model/model.safetensors"}
