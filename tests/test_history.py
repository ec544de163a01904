"""The run history: a real SQLite index under the reports folder, kept by check and gate, built again from the
run directories when it is missing, damaged or lies, shared safely by writers in separate processes, and its
trend page opened in a real browser."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from releasegate.record.history_index import INDEX_FILE
from test_reports_browser import browse, chromium  # noqa: F401  (the fixture)


def runs(project: Path, cli, *ids: str) -> Path:
    for run_id in ids:
        code, _, err = cli("check", "-c", project / "releasegate.yaml", "--run-id", run_id, "--no-progress")
        assert code in (1, 3), err
    return project / "reports"


def listed(cli, reports: Path, *extra: str) -> tuple[list[str], str]:
    code, out, err = cli("history", "--reports", reports, "--json", *extra)
    assert code == 0, err
    return [r["run_id"] for r in json.loads(out)["runs"]], err


def test_check_indexes_each_run_and_history_lists_and_filters(project, cli):
    reports = runs(project, cli, "a", "b")
    assert (reports / INDEX_FILE).is_file()
    ids, _ = listed(cli, reports)
    assert ids == ["a", "b"]
    code, out, _ = cli("history", "--reports", reports, "--json")
    row = json.loads(out)["runs"][0]
    assert row["suites"] == ["example.jsonl"] and row["verdict"] in ("FAIL", "NEEDS_REVIEW")
    assert row["fingerprint"] and row["metrics"]["accuracy"] == 0.5
    assert {c["name"] for c in row["criteria"]} >= {"accuracy"}
    assert listed(cli, reports, "--suite", "example")[0] == ["a", "b"]
    assert listed(cli, reports, "--suite", "other")[0] == []
    assert listed(cli, reports, "--verdict", row["verdict"])[0] == ["a", "b"]
    assert listed(cli, reports, "--verdict", "PASS")[0] == []
    assert listed(cli, reports, "--target", row["fingerprint"][:10])[0] == ["a", "b"]
    code, out, _ = cli("history", "--reports", reports)
    assert code == 0 and "a" in out and "2 of 2 runs" in out


def test_a_deleted_index_is_built_again_and_says_so(project, cli):
    reports = runs(project, cli, "a", "b")
    (reports / INDEX_FILE).unlink()
    ids, err = listed(cli, reports)
    assert ids == ["a", "b"] and "no run index" in err


@pytest.mark.parametrize("damage", ["garbage", "cut", "row outside", "other schema", "fifo"])
def test_a_damaged_index_never_loses_a_run(project, cli, damage):
    reports = runs(project, cli, "a", "b")
    index = reports / INDEX_FILE
    for side in ("-wal", "-shm"):
        Path(f"{index}{side}").unlink(missing_ok=True)
    if damage == "garbage":
        index.write_bytes(b"not a database at all " * 200)
    elif damage == "cut":
        index.write_bytes(index.read_bytes()[:1500])
    elif damage == "row outside":  # a row that names a directory outside the reports folder
        with sqlite3.connect(index) as db:
            db.execute("UPDATE runs SET dir = '../../etc' WHERE run_id = 'a'")
    elif damage == "other schema":
        with sqlite3.connect(index) as db:
            db.execute("UPDATE meta SET value = '99' WHERE key = 'schema'")
    else:
        index.unlink()
        os.mkfifo(index)
    ids, err = listed(cli, reports)
    assert ids == ["a", "b"], err
    assert "was damaged" in err and "built again" in err
    assert (reports / (INDEX_FILE + ".damaged")).exists()
    assert "damaged" not in listed(cli, reports)[1]  # the new index is whole: nothing more to say


def test_a_run_the_index_missed_is_listed_and_a_removed_one_dropped(project, cli):
    reports = runs(project, cli, "a", "b")
    shutil.copytree(reports / "a", reports / "copied")  # a run directory no command indexed
    shutil.rmtree(reports / "b")
    assert sorted(listed(cli, reports)[0]) == ["a", "a"]  # the copy keeps its run id; its folder is its own row
    code, out, _ = cli("history", "--reports", reports, "--json")
    assert sorted(r["dir"] for r in json.loads(out)["runs"]) == ["a", "copied"]
    os.symlink(reports / "a", reports / "linked")  # a link is not a run directory of this folder
    code, out, _ = cli("history", "--reports", reports, "--json", "--rebuild")
    assert sorted(r["dir"] for r in json.loads(out)["runs"]) == ["a", "copied"]


WRITER = """
import sys
from pathlib import Path
from releasegate.record.history_index import index_run
for name in sys.argv[1:]:
    for _ in range(3):
        notes = index_run(Path(name))
        assert not any("not added" in n for n in notes), notes
"""


def test_concurrent_writers_in_separate_processes_lose_nothing(project, cli):
    reports = runs(project, cli, "seed")
    (reports / INDEX_FILE).unlink()  # the writers race to create it too
    names = [f"w{i}-{j}" for i in range(6) for j in range(4)]
    for name in names:
        shutil.copytree(reports / "seed", reports / name)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, *(str(reports / f"w{i}-{j}") for j in range(4))], env=env,
                              stderr=subprocess.PIPE, text=True) for i in range(6)]
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
    with sqlite3.connect(reports / INDEX_FILE) as db:
        dirs = sorted(r[0] for r in db.execute("SELECT dir FROM runs"))
    assert dirs == sorted([*names, "seed"])


def test_gate_updates_the_indexed_verdict(project, cli):
    reports = runs(project, cli, "a")
    rubric = reports / "a" / "rubric.yaml"
    before = json.loads(cli("history", "--reports", reports, "--json")[1])["runs"][0]
    with sqlite3.connect(reports / INDEX_FILE) as db:  # the index says something the run does not
        db.execute("UPDATE runs SET verdict = 'PASS'")
    assert rubric.is_file() and cli("gate", reports / "a")[0] in (1, 3)
    after = json.loads(cli("history", "--reports", reports, "--json")[1])["runs"][0]
    assert after["verdict"] == before["verdict"] != "PASS"


def test_the_trend_page_in_a_browser(project, cli, tmp_path, chromium):  # noqa: F811
    reports = runs(project, cli, "a", "b", "c")
    code, _, err = cli("history", "--reports", reports, "--html")
    assert code == 0, err
    page = reports / "history.html"
    dom = browse(chromium, page, tmp_path / "profile", "--dump-dom")
    assert "releasegate history" in dom and dom.count('class="marker"') >= 3
    assert 'class="bound"' in dom and 'class="value"' in dom
    assert "<script" not in dom
    shot = tmp_path / "trend.png"
    browse(chromium, page, tmp_path / "profile-shot", f"--screenshot={shot}", "--window-size=900,1400")
    assert shot.stat().st_size > 10_000


def test_a_symlinked_index_is_never_written_through(project, cli, tmp_path):
    reports = runs(project, cli, "a")
    elsewhere = tmp_path / "elsewhere.sqlite"
    (reports / INDEX_FILE).rename(elsewhere)
    before = elsewhere.read_bytes()
    (reports / INDEX_FILE).symlink_to(elsewhere)
    ids, err = listed(cli, reports)
    assert ids == ["a"] and "symbolic link" in err and "built again" in err
    assert not (reports / INDEX_FILE).is_symlink() and elsewhere.read_bytes() == before


def test_hostile_run_text_stays_text_in_the_table_and_the_trend_page(project, cli):
    reports = runs(project, cli, "a")
    info = json.loads((reports / "a" / "run.json").read_text())
    info["target"] = "<script>document.title='PWNED'</script>\x1b[2J\u202e"
    (reports / "a" / "run.json").write_text(json.dumps(info))
    code, out, err = cli("history", "--reports", reports, "--rebuild", "--html")
    assert code == 0, err
    assert "\x1b" not in out and "\u202e" not in out
    page = (reports / "history.html").read_text()
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_check_makes_the_index_quietly_and_says_when_it_rebuilt_a_damaged_one(project, cli):
    code, out, err = cli("check", "-c", project / "releasegate.yaml", "--run-id", "a", "--no-progress")
    assert code in (1, 3) and "run index" not in out + err
    index = project / "reports" / INDEX_FILE
    for side in ("-wal", "-shm"):
        Path(f"{index}{side}").unlink(missing_ok=True)
    index.write_bytes(b"\0" * 4096)
    code, out, err = cli("check", "-c", project / "releasegate.yaml", "--run-id", "b", "--no-progress")
    assert code in (1, 3) and "was damaged" in out
    assert listed(cli, project / "reports")[0] == ["a", "b"]


def test_an_unreadable_baselines_file_never_hides_a_run(project, cli):
    reports = runs(project, cli, "a")
    (reports / "baselines.jsonl").write_text("not json\n")
    ids, err = listed(cli, reports)
    assert ids == ["a"] and "blessed baselines not shown" in err and "baselines.jsonl:1" in err
