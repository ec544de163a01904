"""Runs whose truth is FAIL, looked for a way `gate`, `check`, `report`, `verify`, `bless`, `attest` or `promote`
says PASS or releases them, where features meet. The project: a replay target that answers half of its 40 cases
wrong against `accuracy >= 0.7` (truth FAIL, accuracy 0.5), so `verify` can vouch for every input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

RUBRIC = {"name": "r", "review": {"required_domains": []},
          "criteria": [{"metric": "accuracy", "op": ">=", "threshold": 0.7}]}


def _project(root: Path) -> Path:
    (root / "suites").mkdir(parents=True)
    (root / "suites" / "s.jsonl").write_text("".join(
        json.dumps({"id": f"c{i:02d}", "messages": [{"role": "user", "content": f"ticket {i}"}], "expected": "reset"})
        + "\n" for i in range(40)))
    (root / "responses.jsonl").write_text("".join(
        json.dumps({"id": f"c{i:02d}", "output": "reset done" if i % 2 else "sorry"}) + "\n" for i in range(40)))
    (root / "rubric.yaml").write_text(yaml.safe_dump(RUBRIC, sort_keys=False))
    config = root / "releasegate.yaml"
    config.write_text(yaml.safe_dump({
        "target": {"backend": "replay", "responses": "responses.jsonl"}, "generation": {"max_new_tokens": 16},
        "suites": [{"path": "suites/s.jsonl", "answer": {"type": "regex", "pattern": "reset"}}],
        "rubric": "rubric.yaml", "output": {"dir": "reports"}}, sort_keys=False))
    return config


def _check(cli, config: Path, run_id: str, *args: str) -> tuple[int, dict, Path]:
    code, out, err = cli("check", "-c", config, "--run-id", run_id, "--no-progress", "--json", *args)
    assert "Traceback" not in err and out.strip(), err
    return code, json.loads(out), config.parent / "reports" / run_id


def test_the_project_is_a_failing_one_and_its_overridden_run_is_not_released(cli, tmp_path):
    config = _project(tmp_path)
    code, report, _ = _check(cli, config, "base")
    assert (code, report["verdict"]) == (1, "FAIL")
    code, report, run = _check(cli, config, "ov", "--set", "suites[0].answer.pattern=.")
    assert (code, report["verdict"]) == (0, "PASS")  # judged with another answer check: a PASS of no release
    code, _, err = cli("bless", run, "--as", "prod", "--reason", "r")
    assert code == 1 and "--set suites[0].answer.pattern" in err, err


@pytest.mark.parametrize("edit", ["drop-composition", "empty-set"])
def test_an_override_dropped_from_the_manifest_still_keeps_the_run_from_release(cli, tmp_path, edit):
    """manifest.json records the `--set` keys a run was composed with, and is itself no sealed file: deleting its
    `composition` (or emptying it) must not turn a run judged with a judging override into one that `bless` and
    `promote` hand on. run.json, sealed, records the same `--set` keys."""
    config = _project(tmp_path)
    code, report, run = _check(cli, config, "ov", "--set", "suites[0].answer.pattern=.")
    assert report["verdict"] == "PASS"
    manifest = json.loads((run / "manifest.json").read_text())
    if edit == "drop-composition":
        manifest.pop("composition")
    else:
        manifest["composition"] = {"extends": [], "set": [], "over_official": []}
    (run / "manifest.json").write_text(json.dumps(manifest, indent=2))
    code, _, err = cli("bless", run, "--as", "prod", "--reason", "r")
    assert code == 1 and "suites[0].answer.pattern" in err, err
    code, _, err = cli("promote", run, "--webhook", "http://127.0.0.1:9/hook", "--key", tmp_path / "none.key")
    assert code != 0 and "Traceback" not in err, err


@pytest.mark.xfail(strict=True, reason="an extends: layer's override of a judging key is recorded only in "
                   "manifest.json composition.over_official, which no seal covers (run.json records --set keys only; "
                   "the sealed config snapshot names the layers in a comment): deleting it releases the run. Needs "
                   "the composition sealed (record/seal.py), not a local reader fix")
def test_an_extends_layer_override_dropped_from_the_manifest_still_keeps_the_run_from_release(cli, tmp_path):
    _project(tmp_path)
    layer = tmp_path / "layer.yaml"
    layer.write_text(yaml.safe_dump({"extends": "releasegate.yaml", "suites": [
        {"path": "suites/s.jsonl", "answer": {"type": "regex", "pattern": "."}}]}))
    code, report, run = _check(cli, layer, "lay")
    assert report["verdict"] == "PASS"
    assert cli("bless", run, "--as", "prod", "--reason", "r")[0] == 1  # refused while the manifest says why
    manifest = json.loads((run / "manifest.json").read_text())
    manifest.pop("composition")
    (run / "manifest.json").write_text(json.dumps(manifest, indent=2))
    code, _, err = cli("bless", run, "--as", "prod", "--reason", "r")
    assert code == 1 and "suites" in err, err


@pytest.mark.xfail(strict=True, reason="`report` reads report.json through its seal, but a manifest with no "
                   "`sealed` at all is taken for a run from before seals and its report.json is rendered as it is "
                   "(record.gate_report.load_report): deleting that one key lets an edited verdict through. gate "
                   "re-judges FAIL and bless/attest/promote refuse (verify: unverified); telling a pre-seal run "
                   "from a stripped one needs a marker the seal does not depend on")
def test_a_report_of_a_failing_run_whose_seal_was_deleted_never_shows_pass(cli, tmp_path):
    config = _project(tmp_path)
    code, report, run = _check(cli, config, "base")
    assert report["verdict"] == "FAIL"
    edited = {**json.loads((run / "report.json").read_text()), "verdict": "PASS", "exit_code": 0}
    (run / "report.json").write_text(json.dumps(edited))
    manifest = json.loads((run / "manifest.json").read_text())
    manifest.pop("sealed")
    (run / "manifest.json").write_text(json.dumps(manifest))
    code, out, err = cli("report", run, "--format", "json")
    assert code == 2 or json.loads(out)["verdict"] != "PASS", err
