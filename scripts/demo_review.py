"""What the review demos (`make demo-judge`, `make demo-guard`) share: a releasegate command shown and run, and a
review round in which a scripted reviewer fills the exported CSV: export, label, import."""

from __future__ import annotations

import csv
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RELEASEGATE = [sys.executable, "-m", "releasegate"]


def step(title: str, *args: str) -> int:
    print(f"\n$ releasegate {' '.join(args)}    # {title}", flush=True)
    return subprocess.run([*RELEASEGATE, *args], cwd=ROOT).returncode


def review_round(run: str, export_title: str, label: Callable[[dict], dict], said: str) -> bool:
    """Export `run`'s review sample, fill each row with `label(row)` (the columns a reviewer writes), import it.
    False when a command failed."""
    with tempfile.TemporaryDirectory() as tmp:
        exported, filled = Path(tmp) / "review.csv", Path(tmp) / "filled.csv"
        if step(export_title, "review", "export", run, "-o", str(exported)):
            return False
        with exported.open(encoding="utf-8-sig", newline="") as fh:
            rows = list(csv.DictReader(fh))
        for row in rows:
            row.update(label(row))
        with filled.open("w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        print(f"\n# a reviewer labelled {len(rows)} rows ({said})")
        return step("the labels", "review", "import", run, str(filled)) == 0
