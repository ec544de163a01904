"""Runs whose truth is FAIL, looked for a way `gate`, `check`, `report`, `verify`, `bless`, `attest` or `promote`
says PASS or releases them, where features meet. The project: a replay target that answers half of its 40 cases
wrong against `accuracy >= 0.7` (truth FAIL, accuracy 0.5), so `verify` can vouch for every input."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

RUBRIC = {"name": "r", "review": {"required_domains": []},
          "criteria": [{"metric": "accuracy", "op": ">=", "threshold": 0.7}]}


def _project(root: Path, *, right: bool = False, rubric: dict = RUBRIC) -> Path:
    """The replay project: 40 cases, half answered wrong (every one right when `right`), judged by `rubric`."""
    (root / "suites").mkdir(parents=True, exist_ok=True)
    (root / "suites" / "s.jsonl").write_text("".join(
        json.dumps({"id": f"c{i:02d}", "messages": [{"role": "user", "content": f"ticket {i}"}], "expected": "reset"})
        + "\n" for i in range(40)))
    (root / "responses.jsonl").write_text("".join(
        json.dumps({"id": f"c{i:02d}", "output": "reset done" if right or i % 2 else "sorry"}) + "\n"
        for i in range(40)))
    (root / "rubric.yaml").write_text(yaml.safe_dump(rubric, sort_keys=False))
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


def _edit_composition(run: Path, edit: str) -> None:
    manifest = json.loads((run / "manifest.json").read_text())
    if edit == "drop-composition":
        manifest.pop("composition")
    else:
        manifest["composition"] = {"extends": [], "set": [], "over_official": []}
    (run / "manifest.json").write_text(json.dumps(manifest, indent=2))


def _as_run_before_composition_digests(run: Path) -> None:
    """The run as one made before run.json kept `composition_sha256`: the key gone, run.json sealed again."""
    info = json.loads((run / "run.json").read_text())
    info.pop("composition_sha256")
    (run / "run.json").write_text(json.dumps(info, indent=2))
    manifest = json.loads((run / "manifest.json").read_text())
    data = (run / "run.json").read_bytes()
    manifest["sealed"]["files"]["run.json"] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (run / "manifest.json").write_text(json.dumps(manifest, indent=2))


@pytest.mark.parametrize("edit", ["drop-composition", "empty-set"])
def test_an_override_dropped_from_the_manifest_still_keeps_the_run_from_release(cli, tmp_path, edit):
    """manifest.json records the `--set` keys a run was composed with, and is itself no sealed file: deleting its
    `composition` (or emptying it) must not turn a run judged with a judging override into one that `bless` and
    `promote` hand on. run.json, sealed, keeps the composition's digest: the edited manifest is refused."""
    config = _project(tmp_path)
    code, report, run = _check(cli, config, "ov", "--set", "suites[0].answer.pattern=.")
    assert report["verdict"] == "PASS"
    _edit_composition(run, edit)
    code, _, err = cli("bless", run, "--as", "prod", "--reason", "r")
    assert code == 2 and "manifest.json" in err and "composition" in err and len(err.strip().splitlines()) == 1, err
    code, _, err = cli("promote", run, "--webhook", "http://127.0.0.1:9/hook", "--key", tmp_path / "none.key")
    assert code != 0 and "Traceback" not in err, err
    assert cli("attest", "--generate-key", tmp_path / "k.pem")[0] == 0
    code, _, err = cli("attest", run, "--key", tmp_path / "k.pem", "-o", tmp_path / "a.json")
    assert code == 2 and "composition" in err and not (tmp_path / "a.json").exists(), err


@pytest.mark.parametrize("edit", ["drop-composition", "empty-set"])
def test_a_run_from_before_composition_digests_still_counts_its_sealed_set_keys(cli, tmp_path, edit):
    """A run whose run.json keeps no composition digest is read as before: the `--set` keys sealed run.json
    records still count, the manifest's composition edited or not."""
    config = _project(tmp_path)
    code, report, run = _check(cli, config, "ov", "--set", "suites[0].answer.pattern=.")
    _as_run_before_composition_digests(run)
    _edit_composition(run, edit)
    code, _, err = cli("bless", run, "--as", "prod", "--reason", "r")
    assert code == 1 and "suites[0].answer.pattern" in err, err


def test_an_extends_layer_override_dropped_from_the_manifest_still_keeps_the_run_from_release(cli, tmp_path):
    _project(tmp_path)
    layer = tmp_path / "layer.yaml"
    layer.write_text(yaml.safe_dump({"extends": "releasegate.yaml", "suites": [
        {"path": "suites/s.jsonl", "answer": {"type": "regex", "pattern": "."}}]}))
    code, report, run = _check(cli, layer, "lay")
    assert report["verdict"] == "PASS"
    code, _, err = cli("bless", run, "--as", "prod", "--reason", "r")
    assert code == 1 and "suites" in err, err  # refused while the manifest says why
    manifest = json.loads((run / "manifest.json").read_text())
    manifest.pop("composition")
    (run / "manifest.json").write_text(json.dumps(manifest, indent=2))
    code, _, err = cli("bless", run, "--as", "prod", "--reason", "r")
    assert code == 2 and "manifest.json" in err and "composition" in err, err


def test_an_untouched_run_with_an_extends_layer_of_no_judging_key_blesses(cli, tmp_path):
    """The digest check refuses only an edited composition: a run composed with an `extends:` layer that
    overrides no judging key (where the reports go) blesses as it always did, its replies all right."""
    _project(tmp_path)
    (tmp_path / "responses.jsonl").write_text("".join(
        json.dumps({"id": f"c{i:02d}", "output": "reset done"}) + "\n" for i in range(40)))
    layer = tmp_path / "layer.yaml"
    layer.write_text(yaml.safe_dump({"extends": "releasegate.yaml", "output": {"dir": "reports"}}))
    code, report, run = _check(cli, layer, "lay")
    assert (code, report["verdict"]) == (0, "PASS")
    assert json.loads((run / "manifest.json").read_text())["composition"]["extends"]
    code, _, err = cli("bless", run, "--as", "prod", "--reason", "r")
    assert code == 0, err


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
    assert "nothing seals this run" in err and "say FAIL" in err, err


def test_a_passing_run_with_no_seal_still_renders_its_pass(cli, tmp_path):
    """A run nothing seals (older, or built by hand) whose records agree with its PASS renders as before."""
    config = _project(tmp_path)
    code, report, run = _check(cli, config, "ov", "--set", "suites[0].answer.pattern=.")
    assert report["verdict"] == "PASS"
    manifest = json.loads((run / "manifest.json").read_text())
    manifest.pop("sealed")
    (run / "manifest.json").write_text(json.dumps(manifest))
    code, out, err = cli("report", run, "--format", "json")
    assert code == 0 and json.loads(out)["verdict"] == "PASS", err
