"""baselines.jsonl names each suite by its path relative to its repository (or to the reports folder's parent)
with its content hash, so a checkout elsewhere (another CI runner's path) still sees a suite changed since the
blessing; a blessing from before, keyed by an absolute path, is still read."""

from __future__ import annotations

import json
import shutil
import subprocess

from conftest import write_jsonl
from test_bless import CASES, RIGHT, _rubric_against, bless, check, passing_project


def _suites(project) -> dict:
    return json.loads((project / "reports" / "baselines.jsonl").read_text().splitlines()[-1])["suites"]


def test_a_suite_is_keyed_by_its_repository_path_and_seen_changed_from_another_checkout(project, cli, tmp_path):
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    passing_project(project)
    assert bless(cli, check(cli, project, "base"))[0] == 0
    suites = _suites(project)
    assert list(suites) == ["suites/example.jsonl"] and all(len(h) == 64 for h in suites.values())
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"  # the same repository, checked out elsewhere
    shutil.copytree(project, elsewhere, symlinks=True)
    try:
        _rubric_against(elsewhere, on_stale="inconclusive")
        with open(elsewhere / "suites" / "example.jsonl", "a") as fh:
            fh.write(json.dumps({**CASES[0], "id": "example-004"}) + "\n")
        write_jsonl(elsewhere / "responses.jsonl", [*RIGHT, {**RIGHT[0], "id": "example-004"}])
        report = json.loads((check(cli, elsewhere, "cand", expect=3) / "report.json").read_text())
        assert any("example.jsonl (changed)" in w for w in report["comparison"]["baseline_problems"])
    finally:
        shutil.rmtree(elsewhere)


def test_an_unchanged_suite_elsewhere_is_not_stale_and_an_absolute_key_from_before_is_read(project, cli, tmp_path):
    passing_project(project)
    assert bless(cli, check(cli, project, "base"))[0] == 0
    assert list(_suites(project)) == ["suites/example.jsonl"]  # no repository: relative to the reports' parent
    _rubric_against(project, on_stale="inconclusive")
    report = json.loads((check(cli, project, "same", expect=3) / "report.json").read_text())
    assert not report["comparison"]["baseline_problems"]
    journal = project / "reports" / "baselines.jsonl"
    entry = json.loads(journal.read_text().splitlines()[-1])
    absolute = str((project / "suites" / "example.jsonl").resolve())
    journal.write_text(json.dumps({**entry, "suites": {absolute: "0" * 64}}) + "\n")  # the old form, changed
    report = json.loads((check(cli, project, "old", expect=3) / "report.json").read_text())
    assert any("example.jsonl (changed)" in w for w in report["comparison"]["baseline_problems"])
