"""Compiled report templates kept between runs: jinja2 compiles report.html's template to Python code on every
start (about a third of a `gate`'s own work on the demo run); this cache keeps that code in a per-user folder,
`$XDG_CACHE_HOME/releasegate/templates` (else `~/.cache/releasegate/templates`).

A cached file is used only when everything that made its code matches: it is named by the template's name and
path, a hash of its source, the jinja2 and Python versions and the environment's options, and it carries a
sha256 of its own content, so a file cut short or changed on disk is compiled afresh, never run. The folder is
used only when it is the user's own and nobody else can write to it (the file holds code that is run). Whatever
goes wrong (no home, a read-only disk, a full one, a corrupt or foreign file), the template is compiled as
before: the cache only ever saves time.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from pathlib import Path

import jinja2
from jinja2 import BytecodeCache, Environment
from jinja2.bccache import Bucket

from ..border.files import replace_file
from ..errors import InputError

__all__ = ["CompiledTemplates", "template_cache", "cache_folder"]

MAGIC = b"releasegate compiled template 1\n"
MAX_CACHED_BYTES = 8 * 1024 * 1024  # report.html's compiled template is about 200 kB
_DIGEST_BYTES = 32


def cache_folder() -> Path | None:
    """Where compiled templates are kept for this user; None when there is no home to keep them in."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(base):  # the XDG rule: a relative value is ignored
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return Path(base) / "releasegate" / "templates"


def template_cache(folder: Path | None = None) -> CompiledTemplates | None:
    """The cache in `folder` (default: `cache_folder()`), made if missing; None when it cannot be used safely:
    not creatable, not a directory of the user's own, or writable by others."""
    folder = folder if folder is not None else cache_folder()
    if folder is None:
        return None
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_mode & 0o022 or info.st_uid != _user():
        return None
    return CompiledTemplates(folder)


def _user() -> int:
    return os.getuid() if hasattr(os, "getuid") else 0


def _options(environment: Environment) -> str:
    """What of the environment shapes the code a template compiles to (filters and globals are looked up when
    it renders, so they are not here)."""
    keys = ("block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
            "comment_start_string", "comment_end_string", "line_statement_prefix", "line_comment_prefix",
            "trim_blocks", "lstrip_blocks", "newline_sequence", "keep_trailing_newline", "optimized", "is_async")
    shown = [repr(getattr(environment, key)) for key in keys]
    autoescape = environment.autoescape
    shown += [repr(autoescape) if isinstance(autoescape, bool) else getattr(autoescape, "__qualname__", "?"),
              repr(environment.finalize is not None), environment.undefined.__qualname__,
              repr(sorted(environment.extensions))]
    return "|".join(shown)


class CompiledTemplates(BytecodeCache):
    """jinja2's bytecode cache, one file per template in `folder` (see the module's doc)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, bucket: Bucket) -> Path:
        made_by = "\0".join((bucket.key, bucket.checksum, jinja2.__version__, sys.version,
                             _options(bucket.environment)))
        return self.folder / f"{hashlib.sha256(made_by.encode()).hexdigest()}.jinja"

    def load_bytecode(self, bucket: Bucket) -> None:
        """Fill `bucket` from its file when the file is whole and ours; otherwise leave it empty (compiled)."""
        payload = _read_own(self._path(bucket))
        if payload is None:
            return
        try:
            bucket.bytecode_from_string(payload)
        except Exception:  # a file from another version of jinja2 that still passed the digest: compile instead
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        """Keep the bucket's code; a folder that cannot be written to only means the next run compiles again."""
        payload = bucket.bytecode_to_string()
        try:
            replace_file(self._path(bucket), MAGIC + hashlib.sha256(payload).digest() + payload,
                         what="compiled template", mode=0o600)
        except InputError:
            pass


def _read_own(path: Path) -> bytes | None:
    """The payload of a cache file: None unless it is a regular file of the user's own, within MAX_CACHED_BYTES,
    starting with MAGIC and holding the sha256 of what follows it."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:  # checked on the descriptor before it is read as a file: a folder opens read-only, and reads fail
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != _user() or info.st_mode & 0o022:
            return None
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read(MAX_CACHED_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    head, digest, payload = data[:len(MAGIC)], data[len(MAGIC):len(MAGIC) + _DIGEST_BYTES], data[len(MAGIC) + _DIGEST_BYTES:]
    if len(data) > MAX_CACHED_BYTES or head != MAGIC or hashlib.sha256(payload).digest() != digest:
        return None
    return payload
