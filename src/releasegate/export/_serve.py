"""What `python -m releasegate.export.llamacpp` and `... .vllm` share: the demo's defaults, one-line errors, and
serving once their server is up."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["serve_until_interrupted", "demo_path", "existing_dir", "existing_file", "run_cli"]

DEMO = Path(__file__).resolve().parents[3] / "models" / "demo"
"""The demo model of a checkout (an editable install: the package lives in its src/); a wheel does not hold it."""


def demo_path(part: str) -> Path | None:
    """`models/demo/<part>` of the checkout the package was installed from, whatever the working directory;
    None when the installation has no demo model."""
    path = DEMO / part
    return path if path.is_dir() else None


def existing_dir(text: str) -> Path:
    """An argparse type: a directory that exists (a missing one is a usage error, one line, exit 2)."""
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: no such directory")
    return path


def existing_file(text: str) -> Path:
    """An argparse type: a file that exists (a missing one is a usage error, one line, exit 2)."""
    path = Path(text)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{text}: no such file")
    return path


def run_cli(prog: str, main: Callable[[list[str] | None], None], argv: list[str] | None = None, *,
            extra: str = "llamacpp") -> None:
    """Run a serving CLI: a missing package, a bad path, a port in use or a server that will not start is one
    line on stderr and exit 2 (usage or input) or 4 (the server could not run), never a traceback; Ctrl-C 130."""
    try:
        main(argv)
    except KeyboardInterrupt:
        sys.exit(130)
    except ImportError as exc:
        print(f"{prog}: error: {exc.name or exc} is not installed (pip install 'releasegate[{extra}]')",
              file=sys.stderr)
        sys.exit(2)
    except (FileNotFoundError, NotADirectoryError, ValueError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except (OSError, RuntimeError, TimeoutError) as exc:
        print(f"{prog}: error: the server could not start: {exc}", file=sys.stderr)
        sys.exit(4)


def serve_until_interrupted(server, line: str) -> None:
    """Say where the server listens, then keep it up until Ctrl-C, which stops it."""
    print(line, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
