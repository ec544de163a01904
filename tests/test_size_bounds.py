"""Each journal of a run is read as a stream and bounded (`border.limits.JOURNAL_MAX_BYTES`, 1 GiB): a larger
one is refused by `gate` in one line naming the file and the bound, exit 2, before a byte of it is read. The
files here are sparse: 1 GiB and a byte on no disk at all."""

from __future__ import annotations

import os

import pytest

from releasegate.border.limits import JOURNAL_MAX_BYTES
from releasegate.record.judge_journal import read_judgments
from releasegate.record.ledger import read_ledger
from releasegate.record.records import RunDir
from releasegate.record.review_labels import read_labels
from test_bless import check, passing_project
from test_review import exported, review_project, run_dir  # noqa: F401 - fixtures

JOURNALS = ["records.jsonl", "draws.jsonl", "attempts.jsonl", "reviews.jsonl", "judgments.jsonl"]


def _past_the_bound(path) -> None:
    with open(path, "ab") as fh:
        fh.truncate(JOURNAL_MAX_BYTES + 1)  # sparse: nothing written


@pytest.fixture
def run(project, cli):  # noqa: F811
    passing_project(project)
    return check(cli, project, "ok")


@pytest.mark.parametrize("name", JOURNALS)
def test_a_journal_past_its_bound_is_refused_by_its_reader(run, name):
    _past_the_bound(run / name)
    readers = {"records.jsonl": lambda: RunDir(run).read_records(),
               "draws.jsonl": lambda: RunDir(run).read_records("draws.jsonl", required=False),
               "attempts.jsonl": lambda: read_ledger(run, None),
               "reviews.jsonl": lambda: read_labels(RunDir(run)),
               "judgments.jsonl": lambda: read_judgments(RunDir(run))}
    with pytest.raises(Exception) as caught:
        readers[name]()
    assert type(caught.value).__name__ == "InputError" and caught.value.exit_code == 2
    assert f"{name} is larger than 1 GiB" in str(caught.value)


@pytest.mark.parametrize("name", ["records.jsonl", "draws.jsonl", "reviews.jsonl"])
def test_gate_refuses_a_journal_past_its_bound_in_one_line(run, cli, name):
    _past_the_bound(run / name)
    code, out, err = cli("gate", run)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and "Traceback" not in err, err
    assert any(name in line and "larger than 1 GiB" in line for line in lines), err
    assert os.path.getsize(run / name) == JOURNAL_MAX_BYTES + 1  # nothing of the run rewritten


# -- lists of problems: the first ten named, the rest counted ---------------------------------------------------------
def test_first_named_keeps_ten_and_counts_the_rest():
    from releasegate.errors import first_named

    assert first_named([f"p{i}" for i in range(3)]) == ["p0", "p1", "p2"]
    listed = first_named([f"p{i}" for i in range(25)])
    assert listed[:10] == [f"p{i}" for i in range(10)] and listed[10:] == ["... and 15 more problem(s)"]


def test_review_import_names_the_first_ten_problems_and_counts_the_rest(run_dir, cli, exported):  # noqa: F811
    from test_review import write_rows

    path = run_dir.parent / "many.csv"
    rows = [dict(row, label="maybe") for row in exported] * 25  # a bad label on each, then duplicated ids
    write_rows(path, rows)
    code, _, err = cli("review", "import", run_dir, path)
    listed = [line for line in err.splitlines() if line.startswith(str(path)) and "not listed" not in line]
    assert code == 2 and "Traceback" not in err, err
    assert len(listed) == 10 and f"{len(rows) - 10} more problem(s) not listed" in err, err
