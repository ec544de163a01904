"""Model directories and GGUF files a config names, checked before anything is generated: a draft model, a
local embedding model. A directory that would make a loader fail (or hang) after the run's answers are in, a
config.json that is not JSON, no weights, weights that are no safetensors or whose token embeddings have
another shape than config.json says, a FIFO or a link loop among its files, is an InputError (exit 2)
naming the field; a model that loads is not proven by this, but a model that cannot is caught here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..border.files import exists, is_dir, open_regular, read_text, regular_entries
from ..border.structured import json_loads
from ..errors import InputError, Where

__all__ = ["check_model_dir", "check_gguf_file", "WEIGHT_FILES", "MAX_CONFIG_BYTES"]

WEIGHT_FILES = (".safetensors", ".bin")
"""What a Hugging Face model directory keeps its weights in."""
MAX_CONFIG_BYTES = 16 * 1024 * 1024  # a model's config.json is a few KiB; a tokenizer's, a few MiB
GGUF_MAGIC = b"GGUF"
MAX_SAFETENSORS_HEADER = 100 * 1024 * 1024  # safetensors' own bound on a header
MAX_WEIGHT_FILES = 256  # the shards whose headers are read (a large model has tens)


def check_model_dir(path: Path, what: str, where: Where) -> Path:
    """`path` when it is a Hugging Face model directory a loader can read: regular files only, a config.json
    that is a JSON object with a `model_type`, and weights (.safetensors or .bin). Else InputError at `where`."""
    if not exists(path / "config.json") and not os.path.lexists(path / "config.json"):
        raise InputError(f"no config.json in {path}", **where, hint="point at a model directory")
    if not is_dir(path):
        raise InputError(f"{what} {path} is not a directory", **where, hint="point at a model directory")
    try:
        files = regular_entries(path, what=what)
    except InputError as exc:  # named at the config's field, the file it met kept in the message
        raise InputError(f"{exc.file}: {exc.message}", **where, hint=exc.hint) from None
    config = _check_config(path / "config.json", what, where)
    if not any(f.suffix in WEIGHT_FILES for f in files):
        raise InputError(f"{what} {path} holds no weights (.safetensors or .bin)", **where,
                         hint="point at a saved model directory (save_pretrained)")
    for file in sorted(f for f in files if f.suffix == ".safetensors")[:MAX_WEIGHT_FILES]:
        _check_safetensors(file, config, what, where)
    return path


def _check_safetensors(file: Path, config: dict[str, Any], what: str, where: Where) -> None:
    """InputError unless `file`'s header reads as safetensors (a JSON index of tensors inside the file) and its
    token embeddings have the shape config.json gives them (vocab_size x hidden_size): weights a loader would
    refuse (a torn copy, another model's) are named now, not after the run's answers are in."""
    same = "the weights and config.json must come from one save_pretrained"
    size = os.stat(file).st_size  # a regular file: `regular_entries` listed it
    with open_regular(file, what=what, max_bytes=1 << 62) as fh:
        declared = int.from_bytes(fh.read(8), "little")
        header = fh.read(declared) if 0 < declared <= min(size - 8, MAX_SAFETENSORS_HEADER) else b""
    try:
        tensors = json_loads(header) if header else None
    except (ValueError, RecursionError):
        tensors = None
    body = size - 8 - declared
    if not isinstance(tensors, dict) or not all(_tensor_fits(t, body) for k, t in tensors.items() if k != "__metadata__"):
        raise InputError(f"{what}: {file} is not a safetensors file a loader can read", **where,
                         hint="copy the model's files again, or save it again with save_pretrained")
    # the width of the token embeddings: the hidden size, or a projection's where the model has one (OPT, ALBERT)
    width = config.get("word_embed_proj_dim") or config.get("embedding_size") or config.get("hidden_size")
    expected = [config.get("vocab_size"), width]
    for name, tensor in tensors.items():
        if name.endswith("embed_tokens.weight") and all(isinstance(n, int) for n in expected) and \
                tensor["shape"] != expected:
            raise InputError(f"{what}: {file.name} holds {name} of shape {tensor['shape']}, config.json says "
                             f"{expected} (vocab_size, hidden_size)", **where, hint=same)


def _tensor_fits(tensor: object, body: int) -> bool:
    """Whether a safetensors header entry has a shape and data offsets inside the file's body."""
    if not isinstance(tensor, dict):
        return False
    shape, offsets = tensor.get("shape"), tensor.get("data_offsets")
    return isinstance(shape, list) and all(isinstance(n, int) and n >= 0 for n in shape) and \
        isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(n, int) for n in offsets) and \
        0 <= offsets[0] <= offsets[1] <= body


def _check_config(config: Path, what: str, where: Where) -> dict[str, Any]:
    try:
        data = json_loads(read_text(config, what=f"{what} config.json", max_bytes=MAX_CONFIG_BYTES))
    except InputError as exc:
        raise InputError(f"{exc.message} ({config})", **where, hint=exc.hint or "point at a model directory") from None
    except (ValueError, RecursionError):
        raise InputError(f"{config} is not JSON", **where, hint="point at a saved model directory") from None
    if not isinstance(data, dict) or not isinstance(data.get("model_type"), str):
        raise InputError(f"{config} names no model_type: not a model's config", **where,
                         hint="point at a saved model directory (save_pretrained)")
    return data


def check_gguf_file(path: Path, what: str, where: Where) -> Path:
    """`path` when it is a regular file that starts as a GGUF file does; else InputError at `where`."""
    try:
        head = _head(path, what)
    except InputError as exc:
        raise InputError(f"{exc.file}: {exc.message}", **where, hint=exc.hint or "point at a .gguf model file") from None
    if head != GGUF_MAGIC:
        raise InputError(f"{what} {path} is not a GGUF file", **where, hint="point at a .gguf model file")
    return path


def _head(path: Path, what: str) -> bytes:
    """The first 4 bytes of a regular file (of any size)."""
    with open_regular(path, what=what, max_bytes=1 << 62) as fh:
        try:
            return fh.read(4)
        except OSError as exc:
            raise InputError(f"cannot read {what}: {exc.strerror}", file=path) from None
