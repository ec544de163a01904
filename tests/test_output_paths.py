"""`-o FILE` never replaces a run's own files nor, unasked, an existing file: `report`, `servers` and `review
export` refuse (exit 2, one line naming the file) and leave every byte as it was; `--force` replaces an ordinary
file; a filled-in review CSV is never replaced silently."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from test_hostile_files import refused, replay_project

RUN_FILES = ["records.jsonl", "run.json", "reviews.jsonl", "judgments.jsonl", "manifest.json", "config.yaml",
             "rubric.yaml", "review_sample.json", "report.json"]


@pytest.fixture
def run(tmp_path, cli) -> Path:
    config = replay_project(tmp_path)
    for run_id in ("r", "r2"):
        code, _, err = cli("check", "-c", config, "--run-id", run_id, "--no-progress")
        assert code in (0, 3), err
    path = tmp_path / "reports" / "r"
    assert cli("review", "export", path)[0] == 0
    (path / "reviews.jsonl").touch()
    (path / "judgments.jsonl").touch()
    return path


def snapshot(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.is_file()}


def commands(run: Path, target: Path) -> list[tuple[str, ...]]:
    return [("report", run, "-f", "csv", "-o", target), ("review", "export", run, "-o", target),
            ("servers", run, run.parent / "r2", "--format", "csv", "-o", target)]


@pytest.mark.parametrize("name", RUN_FILES)
def test_no_command_writes_over_a_run_file(run, cli, name):
    before = snapshot(run)
    for args in commands(run, run / name):
        refused(cli(*args), str(run / name), "inside the run directory")
        refused(cli(*args, "--force"), str(run / name), "inside the run directory")  # --force does not open the run
    assert snapshot(run) == before


def test_a_symlink_into_the_run_is_the_file_it_names(run, cli, tmp_path):
    link = tmp_path / "innocent.csv"
    link.symlink_to(run / "records.jsonl")
    before = snapshot(run)
    for args in commands(run, link):
        refused(cli(*args, "--force"), "inside the run directory")
    assert snapshot(run) == before


def test_an_existing_file_is_replaced_only_with_force(run, cli, tmp_path):
    for i, args in enumerate(commands(run, tmp_path / "out.csv")):
        target = tmp_path / f"out{i}.csv"
        args = tuple(target if a == tmp_path / "out.csv" else a for a in args)
        target.write_text("keep me\n")
        refused(cli(*args), str(target), "already exists", "--force")
        assert target.read_text() == "keep me\n"
        code, _, err = cli(*args, "--force")
        assert code in (0, 3), err
        assert target.read_text() != "keep me\n"


def fill(path: Path) -> int:
    rows = list(csv.DictReader(io.StringIO(path.read_text("utf-8-sig"), newline="")))
    for row in rows:
        row.update(label="approve", reason="fine", reviewer="ann")
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8-sig")
    return len(rows)


def test_a_filled_in_review_csv_is_never_replaced_silently(run, cli, tmp_path):
    filled = tmp_path / "filled.csv"
    assert cli("review", "export", run, "-o", filled)[0] == 0
    labelled = fill(filled)
    kept = filled.read_bytes()
    refused(cli("review", "export", run, "-o", filled), str(filled), "already exists")
    assert filled.read_bytes() == kept
    code, out, err = cli("review", "export", run, "-o", filled, "--force")
    assert code == 0 and f"held {labelled} labelled rows" in out + err


def test_the_default_queue_is_rewritten_unless_it_was_filled_in(run, cli):
    queue = run / "review_queue.csv"
    assert cli("review", "export", run)[0] == 0  # an unlabelled queue: rewritten as before
    labelled = fill(queue)
    kept = queue.read_bytes()
    refused(cli("review", "export", run), str(queue), f"filled-in review CSV ({labelled} labelled rows)", "import it first")
    assert queue.read_bytes() == kept
    assert cli("review", "import", run, queue)[0] in (0, 3)
    assert cli("review", "export", run, "--force")[0] == 0
