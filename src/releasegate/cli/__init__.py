"""The `releasegate` command line. `app` wires command groups; `main` maps errors to one line and an exit code."""

from .app import app, main, run

__all__ = ["app", "main", "run"]
