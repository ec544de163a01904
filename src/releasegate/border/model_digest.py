"""The digest OpenSSF model-signing (`model_signing`, github.com/sigstore/model-transparency) gives a model
directory as the subject of its in-toto statement, so that `model_signing verify` at deploy and releasegate's
`verify-attestation` agree on the bytes.

model-signing's default hashing (file by file, sha256): every file under the directory, hidden ones included,
except the git files at its top (`.git/`, `.gitattributes`, `.github/`, `.gitignore`), each hashed whole; the
subject's digest is the sha256 of the raw 32-byte file digests one after the other, in the order of the files'
paths relative to the directory, compared folder by folder (as `pathlib.PurePosixPath` sorts: `a/b` before
`a.b`). A symbolic link is refused, as model-signing refuses one unless `--allow_symlinks` (with it, a link to a
file is hashed as the file it points to); a link to a directory is always refused here (never walked into).
"""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path, PurePosixPath

from ..errors import InputError
from .files import MAX_DIR_DEPTH, MAX_DIR_FILES, sha256_file

__all__ = ["GIT_PATHS", "model_files", "root_digest", "model_directory_digest"]

GIT_PATHS = frozenset({".git", ".gitattributes", ".github", ".gitignore"})
"""What model-signing leaves out at the top of a model directory by default."""


def model_directory_digest(folder: Path, *, allow_symlinks: bool = False) -> str:
    """The sha256 model-signing names the model directory `folder` by (`model_signing.hashing.hash` with its
    default configuration, then the subject of its signing payload)."""
    return root_digest(model_files(folder, allow_symlinks=allow_symlinks))


def root_digest(files: dict[str, str]) -> str:
    """The sha256 over the files' sha256 digests (hex, by relative POSIX path) in model-signing's order."""
    h = hashlib.sha256()
    for name in sorted(files, key=lambda n: PurePosixPath(n).parts):
        h.update(bytes.fromhex(files[name]))
    return h.hexdigest()


def model_files(folder: Path, *, allow_symlinks: bool = False) -> dict[str, str]:
    """Each file model-signing hashes in `folder`, by its path relative to it (POSIX), with its sha256. An
    InputError names anything it would refuse: a link (unless `allow_symlinks`, and never to a directory), a
    FIFO, a device; too many files or folders too deep."""
    out: dict[str, str] = {}
    for path, name in _walk(Path(folder), (), allow_symlinks):
        out[name] = sha256_file(path, what="model file")
    return out


def _walk(folder: Path, parts: tuple[str, ...], allow_symlinks: bool) -> list[tuple[Path, str]]:
    if len(parts) > MAX_DIR_DEPTH:
        raise InputError(f"the model directory is nested more than {MAX_DIR_DEPTH} folders deep", file=folder)
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        raise InputError(f"cannot list the model directory: {exc.strerror}", file=folder) from None
    out: list[tuple[Path, str]] = []
    for entry in entries:
        if not parts and entry.name in GIT_PATHS:
            continue
        path, name = Path(entry.path), "/".join((*parts, entry.name))
        if _kind(entry, path, allow_symlinks) == "dir":
            out += _walk(path, (*parts, entry.name), allow_symlinks)
        else:
            out.append((path, name))
        if len(out) > MAX_DIR_FILES:
            raise InputError(f"the model directory holds more than {MAX_DIR_FILES:,} files", file=folder)
    return out


def _kind(entry: os.DirEntry[str], path: Path, allow_symlinks: bool) -> str:
    """'dir' or 'file' for an entry model-signing hashes; an InputError naming anything it refuses. A link is
    followed by the OS here, so a link that loops (or one the OS cannot look up) is refused by name, as the
    error it raises."""
    try:
        if entry.is_symlink() and (not allow_symlinks or entry.is_dir()):
            raise InputError("a symbolic link in a model directory" + (
                " to a directory" if allow_symlinks else "") + ": model-signing refuses it", file=path,
                hint="copy the file it points to into the directory")
        if entry.is_dir(follow_symlinks=False):
            return "dir"
        if entry.is_file():
            return "file"
    except OSError as exc:
        why = "a link that loops" if exc.errno == errno.ELOOP else f"cannot be looked up ({exc.strerror})"
        raise InputError(f"{why} in a model directory", file=path, hint="remove it") from None
    raise InputError("not a regular file in a model directory", file=path, hint="remove it")
