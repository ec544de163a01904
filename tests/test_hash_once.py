"""`hash_once`: inside it a file is read once however often it is hashed, and a file written in between is read
again, even at the same size with its modification time set back (its change time moves, and no user sets that)."""

from __future__ import annotations

import hashlib
import os

import pytest

import releasegate.border.files as files
from releasegate.border.files import hash_once, sha256_file


@pytest.fixture
def reads(monkeypatch):
    """Each read of a file to hash, counted (hashlib.file_digest as border.files calls it)."""
    seen: list[int] = []
    real = hashlib.file_digest

    def counting(fh, name):
        seen.append(1)
        return real(fh, name)

    monkeypatch.setattr(files.hashlib, "file_digest", counting)
    return seen


def test_a_file_hashed_twice_in_the_block_is_read_once(tmp_path, reads):
    f = tmp_path / "model.safetensors"
    f.write_bytes(b"weights" * 1000)
    with hash_once():
        assert sha256_file(f) == sha256_file(f) == hashlib.sha256(f.read_bytes()).hexdigest()
    assert len(reads) == 1
    sha256_file(f)  # outside the block: read every time
    sha256_file(f)
    assert len(reads) == 3


def _rewrite_keeping_size_and_mtime(f, data: bytes, ctime_before: int) -> None:
    """`data` (same size) written over `f`, its modification time set back, until its change time has moved: the
    kernel's clock for it ticks every few milliseconds, so a write within the tick keeps the old one."""
    kept = os.stat(f)
    for _ in range(1_000_000):  # a tick is milliseconds: far fewer writes than this
        f.write_bytes(data)
        os.utime(f, ns=(kept.st_atime_ns, kept.st_mtime_ns))
        if os.stat(f).st_ctime_ns != ctime_before:
            return
    raise AssertionError("the file's change time never moved: a file system with no change time")


def test_a_file_written_in_between_is_read_again_even_at_the_same_size_and_mtime(tmp_path, reads):
    f = tmp_path / "adapter.safetensors"
    f.write_bytes(b"A" * 4096)
    with hash_once():
        first = sha256_file(f)
        _rewrite_keeping_size_and_mtime(f, b"B" * 4096, os.stat(f).st_ctime_ns)
        assert os.stat(f).st_size == 4096
        assert sha256_file(f) == hashlib.sha256(b"B" * 4096).hexdigest() != first
    assert len(reads) == 2


def test_a_file_swapped_for_another_by_rename_is_read_again(tmp_path, reads):
    f, other = tmp_path / "model.gguf", tmp_path / "other.gguf"
    f.write_bytes(b"GGUF good")
    other.write_bytes(b"GGUF evil")
    with hash_once():
        sha256_file(f)
        os.replace(other, f)  # another inode under the same name
        assert sha256_file(f) == hashlib.sha256(b"GGUF evil").hexdigest()
    assert len(reads) == 2


def test_blocks_do_not_share_what_they_hashed(tmp_path, reads):
    f = tmp_path / "m.bin"
    f.write_bytes(b"x")
    with hash_once():
        sha256_file(f)
    with hash_once():
        sha256_file(f)
    assert len(reads) == 2
