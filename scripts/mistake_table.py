"""The mistake table: what `releasegate validate` says about typical mistakes, from the corpus in tests/mistakes/.

Each case is a directory of tests/mistakes/cases/ holding the files it changes in tests/mistakes/base/ (a project
that validates as it is), `mistake.txt` (the mistake in a few words), optionally `args.txt` (more `validate`
options, one a line) and `says.txt` (the one line `validate` prints, run in a copy of the project from its
directory). tests/test_mistakes.py runs every case (exit 2, that one line, no traceback) and checks the table in
docs/configuration.md ("Mistakes and what validate says") against this rendering:

    python scripts/mistake_table.py            # rewrite the docs' table from the corpus
    python scripts/mistake_table.py --check    # exit 1 when the docs' table differs from the corpus
    python scripts/mistake_table.py --record   # write each case's says.txt from a run (a new case), then the table
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "mistakes"
DOCS = ROOT / "docs" / "configuration.md"
BEGIN = "<!-- mistakes: written by scripts/mistake_table.py from tests/mistakes/ -->"
END = "<!-- /mistakes -->"
NOT_PROJECT = {"mistake.txt", "args.txt", "says.txt"}


def cases() -> list[Path]:
    return sorted(p for p in (CORPUS / "cases").iterdir() if p.is_dir())


def run_case(case: Path) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `releasegate validate -c releasegate.yaml [args]` in a copy of the base
    project with the case's files over it, run from its directory (so messages name relative paths)."""
    from releasegate.cli import main

    args = (case / "args.txt").read_text().split("\n") if (case / "args.txt").exists() else []
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        shutil.copytree(CORPUS / "base", project)
        for file in case.rglob("*"):
            if file.is_file() and file.name not in NOT_PROJECT:
                (project / file.relative_to(case)).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(file, project / file.relative_to(case))
        out, err, here = io.StringIO(), io.StringIO(), Path.cwd()
        os.chdir(project)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(["validate", "-c", "releasegate.yaml", *[a for a in args if a]])
        finally:
            os.chdir(here)
    return code, out.getvalue(), err.getvalue()


def says(case: Path) -> str:
    return (case / "says.txt").read_text(encoding="utf-8").strip()


def render() -> str:
    """The table as the docs hold it, between its markers."""
    rows = ["| mistake | `releasegate validate` says (exit 2) |", "|---|---|"]
    for case in cases():
        what = (case / "mistake.txt").read_text(encoding="utf-8").strip()
        line = says(case).removeprefix("error: ").replace("|", "\\|")
        rows.append(f"| {what} | `{line}` |")
    return "\n".join([BEGIN, "", *rows, "", END])  # blank lines: the table is a block of its own


def docs_table(text: str) -> str:
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[start:end]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the docs' table is not the corpus'")
    parser.add_argument("--record", action="store_true", help="write each case's says.txt from a run first")
    opts = parser.parse_args()
    if opts.record:
        for case in cases():
            code, _, err = run_case(case)
            (case / "says.txt").write_text(err.strip() + "\n", encoding="utf-8")
            print(f"{case.name}: exit {code}: {err.strip()}")
    text = DOCS.read_text(encoding="utf-8")
    if opts.check:
        if docs_table(text) != render():
            print(f"{DOCS.relative_to(ROOT)}: the mistake table differs: run python scripts/mistake_table.py")
            return 1
        return 0
    DOCS.write_text(text.replace(docs_table(text), render()), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
