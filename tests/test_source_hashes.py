"""The manifest hashes the bytes behind a suite source, so `verify` and `check --resume` see it change: every
file of a save_to_disk split, the snapshot files of a hub dataset and the commit its revision resolves to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_subprocess

pytest.importorskip("pandas")
pytest.importorskip("datasets")

from test_suite_sources import ANSWER, FORMAT, _config, _entry, _hub_cache, _nested, _responses  # noqa: E402


def _run(project, cli, kind: str) -> Path:
    _responses(project)
    config = _config(project, _entry(kind, project), f"{kind}.yaml")
    code, _, err = cli("check", "-c", config, "--run-id", "r", "--allow-pending", "--no-progress")
    assert code == 1, err
    run = project / "reports" / "r"
    assert cli("verify", run)[0] == 0
    return run


def _changes(out: str) -> list[tuple[str, str, str]]:
    return [(r["role"], r["path"], r["change"]) for r in json.loads(out)["changes"] if r["role"] != "package"]


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def test_a_changed_arrow_file_of_a_save_to_disk_directory_fails_verify_and_resume(project, cli):
    run = _run(project, cli, "disk")
    manifest = json.loads((run / "manifest.json").read_text())
    arrows = [e for e in manifest["inputs"] if e["path"].endswith(".arrow")]
    assert [e["role"] for e in arrows] == ["suite:data"]
    _flip_a_byte(Path(arrows[0]["path"]))  # state.json untouched: only the data changed

    code, out, err = cli("verify", run, "--json")
    assert code == 1, (out, err)
    assert _changes(out) == [("suite:data", arrows[0]["path"], "changed")]
    info = json.loads((run / "run.json").read_text())
    info["status"] = "interrupted"
    (run / "run.json").write_text(json.dumps(info))
    code, _, err = cli("check", "--resume", run, "--allow-pending", "--no-progress")
    assert code == 2 and "changed" in err, err


def test_a_file_added_to_the_split_directory_shows(project, cli):
    run = _run(project, cli, "disk")
    (project / "saved" / "validation" / "data-00001-of-00002.arrow").write_bytes(b"more rows")
    code, out, _ = cli("verify", run, "--json")
    added = str((project / "saved" / "validation" / "data-00001-of-00002.arrow").resolve())
    assert code == 1 and _changes(out) == [("suite:data", added, "added")], out


def _hub_run(project, home: Path, cli, monkeypatch) -> Path:
    _hub_cache(home, "acme/tickets")
    _responses(project)
    columns = "columns: {id: ticket_id, messages: messages, expected: expected, tags: [domain, risk, task]}"
    entry = (f"  - name: tickets\n    source: {{hub: acme/tickets, split: validation}}\n"
             f"    {columns}\n    {ANSWER}\n    {FORMAT}\n")
    env = {"HF_HOME": str(home), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    config = _config(project, entry, "hub.yaml")
    out = run_subprocess("check", "-c", config, "--run-id", "h", "--allow-pending", "--no-progress", cwd=project, env=env)
    assert out.returncode == 1, out.stderr
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(home / "hub"))  # verify looks here, in-process
    run = project / "reports" / "h"
    assert cli("verify", run)[0] == 0
    return run


def test_hub_dataset_files_and_revision_are_hashed(project, tmp_path_factory, cli, monkeypatch):
    home = tmp_path_factory.mktemp("hf_home")
    run = _hub_run(project, home, cli, monkeypatch)
    manifest = json.loads((run / "manifest.json").read_text())
    roles = sorted(e["role"] for e in manifest["inputs"] if e["role"].startswith("suite"))
    assert roles == ["suite:data", "suite:data", "suite:revision"]

    folder = home / "hub" / "datasets--acme--tickets"
    snapshot = next((folder / "snapshots").iterdir())
    _flip_a_byte(snapshot / "data" / "validation-00000-of-00001.parquet")
    code, out, _ = cli("verify", run, "--json")
    assert code == 1, out
    assert [(role, Path(path).name) for role, path, _ in _changes(out)] == [("suite:data", "validation-00000-of-00001.parquet")]
    _nested().to_parquet(snapshot / "data" / "validation-00000-of-00001.parquet")
    assert cli("verify", run)[0] == 0

    newer = "fedcba9876543210fedcba9876543210fedcba98"  # main now points at another commit
    (folder / "snapshots" / newer).mkdir()
    (snapshot / "data").rename(folder / "snapshots" / newer / "data")
    (folder / "refs" / "main").write_text(newer)
    code, out, _ = cli("verify", run, "--json")
    assert code == 1, out
    assert ("suite:revision", "hub:acme/tickets@main#snapshot", "changed") in _changes(out), out
