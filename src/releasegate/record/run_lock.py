"""The advisory lock one `check` process holds on its run directory."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import InputError

__all__ = ["held"]


@contextmanager
def held(path: Path) -> Iterator[None]:
    """Hold the run directory for one `check` process; a second one (a concurrent resume) is refused.
    The kernel drops the lock when its process dies, so a killed run can be resumed at once."""
    try:
        import fcntl
    except ImportError:  # no advisory locks (Windows): run directories are still never shared by new runs
        yield
        return
    with (path / ".lock").open("a+") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(
                "run directory is in use by another releasegate process", file=path,
                hint="wait for it to finish; a killed run can be resumed with check --resume",
            ) from None
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
