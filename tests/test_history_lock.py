"""A run index another process holds write-locked: `history` waits at most the index's bound (5 s), then lists
the runs from their directories and says so; `check`'s and `gate`'s indexing notes "not added", never hangs; the
locked index is never taken for damage and moved aside."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

from conftest import run_subprocess
from releasegate.record.history_index import INDEX_FILE


def _runs(tmp_path):
    from test_false_pass import Run, ok

    reports = tmp_path / "reports"
    for name in ("a", "b"):
        path = Run([ok(i) for i in range(10)]).build(tmp_path / name)
        path.rename(reports / name) if reports.exists() else (reports.mkdir(), path.rename(reports / name))
    return reports


HOLD = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("BEGIN IMMEDIATE")  # the write lock, held until killed
print("locked", flush=True)
time.sleep(600)
"""


def test_a_locked_index_is_listed_around_not_waited_on(tmp_path, children):
    reports = _runs(tmp_path)
    assert run_subprocess("history", "--reports", reports, "--json").returncode == 0  # the index exists
    holder = children.start([sys.executable, "-c", HOLD, str(reports / INDEX_FILE)], stdout=subprocess.PIPE,
                            text=True)
    assert holder.stdout.readline().strip() == "locked"
    out = run_subprocess("history", "--reports", reports, "--json")  # the old wait, 50 minutes, ends the test
    assert out.returncode == 0, out.stderr
    assert sorted(r["dir"] for r in json.loads(out.stdout)["runs"]) == ["a", "b"]
    assert "locked by another process" in out.stderr + out.stdout
    gate = run_subprocess("gate", reports / "a", "--allow-pending")
    assert gate.returncode == 0 and "not added to the run index" in gate.stdout + gate.stderr, gate.stderr
    holder.kill()
    holder.wait()
    assert (reports / INDEX_FILE).exists() and not (reports / (INDEX_FILE + ".damaged")).exists()
    with sqlite3.connect(reports / INDEX_FILE) as db:
        assert db.execute("PRAGMA quick_check").fetchone()[0] == "ok"
