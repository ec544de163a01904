"""Files and directories from outside: read only when they are regular files, with byte and count limits.

A FIFO would block a reader forever, /dev/zero never ends, a link loop never resolves: every file is opened
without blocking and checked with fstat() before a byte is read, and read with a cap whatever stat() says
(`open_regular`, `read_capped`); a file handed to another reader (pyarrow, pandas, transformers) is checked
first (`check_regular`). A directory walk (`walk_files`) lists regular files only, never follows a link into
another directory, and stops at a depth and a count: anything else it meets is refused with one line naming the
path. `sha256_file` hashes through the same door.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import itertools
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import InputError

__all__ = [
    "exists", "modified_at", "is_file", "is_dir", "open_regular", "check_regular", "read_capped", "read_text", "sha256_file", "hash_once",
    "walk_files", "regular_entries", "journal_lines", "MAX_LINE_BYTES", "append_regular", "open_append", "replace_file", "MAX_FILE_BYTES", "MAX_HASH_BYTES", "MAX_DIR_FILES", "MAX_DIR_DEPTH",
]

MAX_FILE_BYTES = 64 * 1024 * 1024  # a larger suite is a mistake, not an input
MAX_HASH_BYTES = 1 << 40  # 1 TiB: the largest model file hashed; past it a file is not a model (or never ends)
MAX_DIR_FILES = 100_000  # a model directory or a dataset split holds tens of files, a hub snapshot thousands
MAX_DIR_DEPTH = 32  # nested folders of a model or dataset directory


def exists(path: Path) -> bool:
    """Path.exists that says False for a path the OS cannot even look up (too long, NUL byte, a link loop)."""
    try:
        return Path(path).exists()
    except (OSError, ValueError):
        return False


def modified_at(path: Path) -> float:
    """The time `path` was last written (seconds since the epoch, its link not followed); 0.0 for a path that is
    missing or cannot be looked up."""
    try:
        return os.lstat(path).st_mtime
    except (OSError, ValueError):
        return 0.0


def is_file(path: Path) -> bool:
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


def is_dir(path: Path) -> bool:
    try:
        return Path(path).is_dir()
    except (OSError, ValueError):
        return False


class _Capped(io.RawIOBase):
    """A file that refuses to give more than `limit` bytes in all: past it, the InputError of a file too large."""

    def __init__(self, fh: io.RawIOBase, limit: int, path: Path, what: str) -> None:
        self._fh, self._left, self._path, self._what, self._limit = fh, limit, path, what, limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:  # any writable buffer (collections.abc.Buffer from 3.12)
        n = self._fh.readinto(memoryview(buffer)[: max(1, min(len(buffer), self._left + 1))])
        self._left -= n or 0
        if self._left < 0:
            raise InputError(f"{self._what} is larger than {_size(self._limit)}", file=self._path)
        return n

    def close(self) -> None:
        self._fh.close()
        super().close()

    def identity(self) -> tuple[int, ...]:
        """The open file's device, inode, size, and modification and change times (ns): `hash_once`'s key."""
        info = os.fstat(self._fh.fileno())
        return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _size(limit: int) -> str:
    return f"{limit / 2**30:g} GiB" if limit >= 2**30 else f"{limit / 2**20:g} MiB"


def _open_fd(path: Path, what: str) -> int:
    try:
        return os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(f"{what} is a link that loops", file=path, hint="give a file on disk") from None
        raise InputError(f"cannot read {what}: {exc.strerror}", file=path) from None
    except ValueError:  # a NUL byte in the path
        raise InputError(f"{what}: not a path the system can open", file=path) from None


MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest line of a journal (a record, a judgment, a label): one line past it is refused, never held whole."""


def journal_lines(fh: BinaryIO, *, path: Path, what: str, max_line: int = MAX_LINE_BYTES) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of a binary journal, each line read at most `max_line` bytes at a time: a longer one is
    an InputError naming the file and line (a journal of one endless line costs no more memory than the cap)."""
    for number in itertools.count(1):
        line = fh.readline(max_line + 1)
        if not line:
            return
        if len(line) > max_line:
            raise InputError(f"{what}: a line over {max_line // (1024 * 1024)} MiB", file=path, line=number,
                             hint="a journal line is one record; this file was not written by releasegate")
        yield number, line


def open_regular(path: Path, *, what: str, max_bytes: int = MAX_FILE_BYTES) -> BinaryIO:
    """`path` open for reading in binary, when it is a regular file; reads past `max_bytes` raise InputError
    (whatever stat says: /proc files say 0). Opened without blocking, so a FIFO is refused, never waited on."""
    path = Path(path)
    if is_dir(path):
        raise InputError(f"{what} is a directory, expected a file", file=path)
    if not exists(path) and not os.path.lexists(path):
        raise InputError(f"{what} not found", file=path, hint="check the path")
    fd = _open_fd(path, what)
    fh = os.fdopen(fd, "rb", buffering=0)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        fh.close()
        raise InputError(f"{what} is not a regular file (a FIFO, a device or a socket)", file=path,
                         hint="give a file on disk")
    if info.st_size > max_bytes:
        fh.close()
        raise InputError(f"{what} is larger than {_size(max_bytes)}, the most releasegate reads of it", file=path)
    return io.BufferedReader(_Capped(fh, max_bytes, path, what), buffer_size=1 << 20)


def check_regular(path: Path, *, what: str, max_bytes: int | None = None) -> None:
    """InputError unless `path` is a regular file (at most `max_bytes`, when given), before another reader
    (pyarrow, pandas, datasets, transformers) opens it."""
    open_regular(path, what=what, max_bytes=max_bytes if max_bytes is not None else 1 << 62).close()


def read_capped(path: Path, *, what: str, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most `max_bytes` (see `open_regular`)."""
    with open_regular(path, what=what, max_bytes=max_bytes) as fh:
        try:
            return fh.read()
        except OSError as exc:
            raise InputError(f"cannot read {what}: {exc.strerror}", file=path) from None


def read_text(path: Path, *, what: str, max_bytes: int = MAX_FILE_BYTES) -> str:
    """Read a UTF-8 text file or raise an InputError that says what was expected there."""
    data = read_capped(path, what=what, max_bytes=max_bytes)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", file=path, hint="save it as UTF-8") from None


def sha256_file(path: Path, *, what: str = "file to hash", max_bytes: int = MAX_HASH_BYTES) -> str:
    """sha256 hex of a regular file's bytes (what `sha256sum` prints), read a chunk at a time: a multi-GB model
    file never sits in memory whole; a FIFO, a device or a link loop is an InputError naming it. Inside
    `hash_once`, a file already hashed and unchanged since is not read again."""
    with open_regular(path, what=what, max_bytes=max_bytes) as fh:
        memo = _HASHED.get()
        before = _identity(fh) if memo is not None else None
        if memo is not None and before is not None and before in memo:
            return memo[before]
        try:
            digest = hashlib.file_digest(fh, "sha256").hexdigest()  # type: ignore[arg-type]  # a binary file
        except OSError as exc:
            raise InputError(f"cannot read {what}: {exc.strerror}", file=path) from None
        if memo is not None and before is not None and _identity(fh) == before:
            memo[before] = digest  # kept only when the file did not change while it was read
        return digest


def _identity(fh: BinaryIO) -> tuple[int, ...] | None:
    raw = getattr(fh, "raw", None)
    return raw.identity() if isinstance(raw, _Capped) else None


_HASHED: ContextVar[dict[tuple[int, ...], str] | None] = ContextVar("hashed_once", default=None)


@contextlib.contextmanager
def hash_once() -> Iterator[None]:
    """For the block, `sha256_file` reads a file once: hashed again, a file whose device, inode, size and
    modification and change times (to the nanosecond, as the opened file has them) are those it had when it was
    hashed gives the same digest without a read. A command that verifies a run's inputs and then hashes its model
    directories (`attest`, `promote`) reads each model file once; a file written in between has another change
    time (which no user can set back) and is read again."""
    token = _HASHED.set({})
    try:
        yield
    finally:
        _HASHED.reset(token)


def open_append(path: Path, *, what: str) -> BinaryIO:
    """`path` open for appending in binary (created when missing), when it is a regular file: a FIFO, a device
    or a socket is refused (InputError), never written to or waited on: opened without blocking, checked before
    a byte goes."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:  # ENXIO: a FIFO nobody reads; ELOOP: a link loop
        why = "a FIFO or a device with no reader" if exc.errno == errno.ENXIO else exc.strerror
        raise InputError(f"{what} cannot be appended to ({why}): not written", file=path) from None
    except ValueError:
        raise InputError(f"{what}: not a path the system can open", file=path) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InputError(f"{what} is not a regular file (a FIFO, a device or a socket): not written", file=path)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "ab")


def append_regular(path: Path, text: str, *, what: str) -> None:
    """Append `text` (UTF-8) to the regular file `path` (see `open_append`)."""
    with open_append(path, what=what) as fh:
        try:
            fh.write(text.encode("utf-8"))
        except OSError as exc:
            raise InputError(f"{what} cannot be appended to ({exc.strerror}): not written", file=path) from None


def replace_file(path: Path, data: bytes | Iterable[bytes], *, what: str, durable: bool = False,
                 mode: int = 0o644) -> Path:
    """Write `data` (bytes, or chunks of them written as they come: a long report never held whole) to `path`
    atomically: a new temp file of a name nobody could have planted (mkstemp: created,
    never opened if it exists, so never a FIFO), then renamed over `path`; a reader never sees half a file.
    `durable`: the file and its directory fsynced, so the new content survives a crash (a journal rewritten).
    `mode`: 0o600 for a private key, readable by nobody else from its first byte."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise InputError(f"cannot write {what}: {exc.strerror}", file=path) from None
    try:
        os.fchmod(fd, mode)  # 0o644: as a plain write would leave it (mkstemp makes 0600)
        with os.fdopen(fd, "wb") as fh:
            for chunk in [data] if isinstance(data, bytes) else data:
                fh.write(chunk)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
        if durable:
            _fsync_dir(path.parent)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"cannot write {what}: {exc.strerror}", file=path) from None
    return path


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _kind(path: Path) -> str | None:
    """None for a regular file (followed through links); else what it is, in the user's words."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a link that loops"
        return "a link to nothing" if os.path.islink(path) else f"unreadable ({exc.strerror})"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a socket" if stat.S_ISSOCK(mode) else "not a regular file"


def _refuse(path: Path, kind: str, what: str) -> InputError:
    return InputError(f"{what}: {kind}, not a regular file", file=path, hint="remove it, or give a directory of "
                      "regular files")


def regular_entries(folder: Path, *, what: str, suffixes: tuple[str, ...] | None = None) -> list[Path]:
    """The files directly in `folder` (sorted; only those ending in `suffixes`, when given), each a regular file:
    a FIFO, a device, a dangling link or a link loop among them is an InputError naming it."""
    out: list[Path] = []
    for entry in _listing(Path(folder), what):
        if suffixes is not None and entry.suffix not in suffixes or is_dir(entry):
            continue
        _add_regular(entry, what, Path(folder), out)
    return out


def _add_regular(entry: Path, what: str, folder: Path, out: list[Path]) -> None:
    """`entry` appended to `out` when it is a regular file (else an InputError naming what it is), within
    MAX_DIR_FILES."""
    kind = _kind(entry)
    if kind is not None:
        raise _refuse(entry, kind, what)
    out.append(entry)
    if len(out) > MAX_DIR_FILES:
        raise InputError(f"{what} holds more than {MAX_DIR_FILES:,} files", file=folder)


def _listing(folder: Path, what: str) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except OSError as exc:
        raise InputError(f"cannot list {what}: {exc.strerror}", file=folder) from None


def walk_files(folder: Path, *, what: str, hidden: bool = False) -> list[Path]:
    """Every regular file under `folder`, sorted, hidden names (and `__pycache__`) left out unless `hidden`.
    Links to directories are not followed (a loop cannot be walked into); a FIFO, a device, a socket, a
    dangling link or a link loop is an InputError naming it; past MAX_DIR_DEPTH levels or MAX_DIR_FILES files,
    an InputError too."""
    out: list[Path] = []
    _walk(Path(folder), what, hidden, 0, out)
    return sorted(out)


def _walk(folder: Path, what: str, hidden: bool, depth: int, out: list[Path]) -> None:
    if depth > MAX_DIR_DEPTH:
        raise InputError(f"{what} is nested more than {MAX_DIR_DEPTH} folders deep", file=folder)
    for entry in _listing(folder, what):
        if not hidden and (entry.name.startswith(".") or entry.name == "__pycache__"):
            continue
        if entry.is_dir() and not entry.is_symlink():
            _walk(entry, what, hidden, depth + 1, out)
            continue
        if not is_dir(entry):  # a link to a directory: never followed
            _add_regular(entry, what, folder, out)
