"""What the scripts that write a generated file share: `--check` (exit 1 while the file is not what its sources
give, as `make docs` runs it) or write it."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def write_or_check(out: Path, render: Callable[[], str], *, sources: str, script: str, description: str) -> int:
    """`script [--check]`: with --check, 1 when `out` differs from `render()` (saying so), else 0; without it,
    `out` written."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help=f"exit 1 when the module is not what the {sources} give")
    args = parser.parse_args()
    text = render()
    if args.check:
        if not out.exists() or out.read_text("utf-8") != text:
            print(f"{out.relative_to(ROOT)} is not what the {sources} give: run python scripts/{script}")
            return 1
        return 0
    out.write_text(text, "utf-8")
    return 0
