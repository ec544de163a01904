"""Reading user files: path checks, size-limited UTF-8 text, safe YAML with line numbers, field paths.

Every loader goes through here (and `schema_check` for JSON Schema validation) so that every rejection names
file, line and field the same way. A file is read only when it is a regular file (a FIFO would block forever,
/dev/zero never ends), opened without blocking, and read with a cap whatever stat() says (`open_regular`,
`read_capped`); a file handed to another reader (pyarrow, pandas, datasets) is checked first (`check_regular`).
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from ..errors import InputError

__all__ = [
    "read_text", "load_yaml", "load_yaml_text", "field_path", "line_of", "exists", "is_file", "is_dir", "resolve_under", "open_regular",
    "check_regular", "read_capped", "sha256_file", "MAX_FILE_BYTES",
]

MAX_FILE_BYTES = 64 * 1024 * 1024  # a larger suite is a mistake, not an input
MAX_YAML_BYTES = 4 * 1024 * 1024  # configs, rubrics, rule files and price tables are hand-written and small
MAX_YAML_NODES = 200_000  # after expanding aliases: a "billion laughs" document stops here
MAX_DEPTH = 64  # nesting of YAML collections; JSON lines are limited by the parser (RecursionError)


def exists(path: Path) -> bool:
    """Path.exists that says False for a path the OS cannot even look up (too long, NUL byte)."""
    try:
        return Path(path).exists()
    except (OSError, ValueError):
        return False


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


def sha256_file(path: Path) -> str:
    """sha256 hex of a file's bytes (what `sha256sum` prints), read a chunk at a time: a multi-GB model file never
    sits in memory whole."""
    with Path(path).open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def resolve_under(here: Path, relative: str) -> Path:
    """A config path resolved against the config's directory, `..` folded, so reports show clean paths."""
    return Path(os.path.normpath(here / relative))


class _Capped(io.RawIOBase):
    """A file that refuses to give more than `limit` bytes in all: past it, the InputError of a file too large."""

    def __init__(self, fh: io.RawIOBase, limit: int, path: Path, what: str) -> None:
        self._fh, self._left, self._path, self._what, self._limit = fh, limit, path, what, limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self._fh.readinto(memoryview(buffer)[: max(1, min(len(buffer), self._left + 1))])
        self._left -= n or 0
        if self._left < 0:
            raise InputError(f"{self._what} is larger than {self._limit / 2**20:g} MiB", file=self._path)
        return n

    def close(self) -> None:
        self._fh.close()
        super().close()


def open_regular(path: Path, *, what: str, max_bytes: int = MAX_FILE_BYTES) -> BinaryIO:
    """`path` open for reading in binary, when it is a regular file; reads past `max_bytes` raise InputError
    (whatever stat says: /proc files say 0). Opened without blocking, so a FIFO is refused, never waited on."""
    path = Path(path)
    if not exists(path):
        raise InputError(f"{what} not found", file=path, hint="check the path")
    if is_dir(path):
        raise InputError(f"{what} is a directory, expected a file", file=path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror}", file=path) from None
    fh = os.fdopen(fd, "rb", buffering=0)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        fh.close()
        raise InputError(f"{what} is not a regular file (a FIFO, a device or a socket)", file=path,
                         hint="give a file on disk")
    if os.fstat(fd).st_size > max_bytes:
        fh.close()
        raise InputError(f"{what} is larger than {max_bytes / 2**20:g} MiB", file=path)
    return io.BufferedReader(_Capped(fh, max_bytes, path, what), buffer_size=1 << 20)


def check_regular(path: Path, *, what: str, max_bytes: int | None = None) -> None:
    """InputError unless `path` is a regular file (at most `max_bytes`, when given), before another reader
    (pyarrow, pandas, datasets) opens it."""
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


def load_yaml(path: Path, *, what: str) -> tuple[Any, yaml.Node | None]:
    """Parse YAML safely (SafeLoader only: no Python objects); return the data and the node tree (for line
    numbers of later errors). Rejects files over MAX_YAML_BYTES, nesting deeper than MAX_DEPTH and documents
    whose aliases expand past MAX_YAML_NODES."""
    text = read_text(path, what=what, max_bytes=MAX_YAML_BYTES)
    return _parse_yaml(text, path)


def load_yaml_text(text: str, *, source: str) -> Any:
    """YAML given as text (a `--set` value), read with the same safe loader and limits as a file; errors name
    `source`."""
    return _parse_yaml(text, source)[0]


def _parse_yaml(text: str, path: Path | str) -> tuple[Any, yaml.Node | None]:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        _check_shape(node, path)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        line = mark.line + 1 if mark is not None else None
        raise InputError(f"malformed YAML: {problem}", file=path, line=line) from None
    except RecursionError:
        raise InputError(f"YAML nested too deeply (more than {MAX_DEPTH} levels)", file=path) from None
    except (ValueError, TypeError, OverflowError) as exc:  # a scalar the safe constructors reject: 2021-13-45
        raise InputError(f"malformed YAML value: {_first_line(exc)}", file=path) from None
    return data, node


def _check_shape(root: yaml.Node | None, path: Path | str) -> None:
    """Depth and expanded size of a node tree (an alias counts as often as it is used); no NUL in scalars."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node, depth: int) -> int:
        if depth > MAX_DEPTH:  # also what a recursive alias (&a [*a]) runs into
            line = node.start_mark.line + 1
            raise InputError(f"YAML nested too deeply (more than {MAX_DEPTH} levels)", file=path, line=line)
        if id(node) in sizes:
            return sizes[id(node)]
        if isinstance(node, yaml.MappingNode):
            total = 1 + sum(size(k, depth + 1) + size(v, depth + 1) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            total = 1 + sum(size(child, depth + 1) for child in node.value)
        else:
            if "\x00" in node.value:  # no file name, pattern or label has one; the OS rejects it in paths
                raise InputError("NUL character in a value", file=path, line=node.start_mark.line + 1)
            total = 1
        if total > MAX_YAML_NODES:
            raise InputError(f"YAML too large: more than {MAX_YAML_NODES} values once aliases are expanded",
                             file=path, line=node.start_mark.line + 1)
        sizes[id(node)] = total
        return total

    if root is not None:
        size(root, 0)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def field_path(parts: list[str | int]) -> str:
    """['suites', 0, 'path'] -> 'suites[0].path'."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def line_of(node: yaml.Node | None, parts: list[str | int]) -> int | None:
    """Walk the YAML node tree to the deepest node on `parts`; return its 1-based line."""
    if node is None:
        return None
    best = node.start_mark.line + 1
    for part in parts:
        child = None
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == part:
                    child, best = value, key.start_mark.line + 1
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            child = node.value[part]
            best = child.start_mark.line + 1
        if child is None:
            break
        node = child
    return best
