"""The run index refuses a history.sqlite hard-linked to another file (its bytes are that file's too: the index
would write its tables into another database), in one line, exit 2, the other file untouched; and `history`
pointed at a folder without a run writes nothing there (no index, no folder)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3

from releasegate.record.history_index import INDEX_FILE, index_run
from test_history_lock import _runs


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _other_database(path) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE accounts (id INTEGER, owner TEXT)")
    db.execute("INSERT INTO accounts VALUES (1, 'ana')")
    db.commit()
    db.close()


def test_a_hard_linked_index_is_refused_and_the_other_file_untouched(tmp_path, cli):
    reports = _runs(tmp_path)
    other = tmp_path / "accounts.db"
    _other_database(other)
    os.link(other, reports / INDEX_FILE)
    before = _digest(other)
    code, out, err = cli("history", "--reports", reports)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and "2 hard links" in err and INDEX_FILE in err and "Traceback" not in err, err
    assert len(lines) <= 2  # the error and its hint
    assert _digest(other) == before and not os.path.exists(str(reports / INDEX_FILE) + "-wal")
    tables = [r[0] for r in sqlite3.connect(other).execute("SELECT name FROM sqlite_master").fetchall()]
    assert tables == ["accounts"]
    notes = index_run(reports / "a")  # check's and gate's indexing: a note, never a failed run
    assert any("not added to the run index" in n and "hard links" in n for n in notes)
    assert _digest(other) == before


def test_history_in_a_folder_without_a_run_writes_nothing(tmp_path, cli):
    folder = tmp_path / "somewhere"
    folder.mkdir()
    (folder / "notes.txt").write_text("not a run")
    code, out, err = cli("history", "--reports", folder, "--json")
    assert code == 0 and json.loads(out)["runs"] == [], err
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
    code, out, err = cli("history", "--reports", tmp_path / "missing")
    assert code == 2 and not (tmp_path / "missing").exists()
