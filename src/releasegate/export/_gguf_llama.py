"""Llama tensors for GGUF: llama.cpp's tensor names, the rotary permutation, the model's hyper-parameters, and
reading safetensors / writing a GGUF file.

torch, safetensors and numpy are imported only when a function that needs them runs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from ..border.files import read_text
from ..border.structured import json_loads

if TYPE_CHECKING:
    import numpy.typing as npt
    from gguf import GGMLQuantizationType, GGUFWriter, LlamaFileType
    from torch import Tensor

__all__ = [
    "ExportError", "OUTTYPES", "LlamaHparams", "gguf_name", "permute_qk", "read_json", "load_state_dict",
    "to_numpy", "cast_tensor", "encode_tensor", "file_type", "tensor_order", "write_gguf", "QUANTIZED",
]

OUTTYPES = ("f32", "f16", "q8_0", "q4_0")
"""Every tensor type an export can write (the CLIs' --outtype choices)."""

QUANTIZED = {"q8_0": "Q8_0", "q4_0": "Q4_0"}
"""Quantized outtypes -> the gguf.GGMLQuantizationType their matrices take."""

Array: TypeAlias = "npt.NDArray[Any]"
"""A numpy array of any dtype: float32, float16, or the uint8 blocks gguf.quants writes for a quantized type."""
TensorOrderKey = tuple[int, int, str]

_FILE_TYPES = {"f32": "ALL_F32", "f16": "MOSTLY_F16", "q8_0": "MOSTLY_Q8_0", "q4_0": "MOSTLY_Q4_0"}

# HF parameter name inside a decoder layer -> llama.cpp tensor name inside `blk.N.`
_LAYER_NAMES = {
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
    "input_layernorm": "attn_norm",
    "post_attention_layernorm": "ffn_norm",
}
_GLOBAL_NAMES = {
    "model.embed_tokens": "token_embd",
    "model.norm": "output_norm",
    "lm_head": "output",
}
_LAYER_RE = re.compile(r"^model\.layers\.(\d+)\.(.+)\.(weight|bias)$")
_GLOBAL_RE = re.compile(r"^(model\.embed_tokens|model\.norm|lm_head)\.(weight|bias)$")


class ExportError(ValueError):
    """The input cannot be exported (unsupported architecture, tokenizer or adapter feature)."""


def read_json(path: Path) -> dict[str, Any]:
    """A JSON file of the model or adapter directory (a regular file of at most 64 MiB, see `border.files`)."""
    data: dict[str, Any] = json_loads(read_text(path, what=path.name))
    return data


def gguf_name(hf_name: str) -> str | None:
    """llama.cpp's name for an HF Llama parameter (`model.layers.3.self_attn.q_proj.weight` -> `blk.3.attn_q.weight`).

    None for buffers llama.cpp does not need (rotary inv_freq).
    """
    if hf_name.endswith("rotary_emb.inv_freq"):
        return None
    m = _LAYER_RE.match(hf_name)
    if m:
        layer, module, kind = m.groups()
        if module not in _LAYER_NAMES:
            raise ExportError(f"unsupported tensor {hf_name!r}")
        return f"blk.{layer}.{_LAYER_NAMES[module]}.{kind}"
    m = _GLOBAL_RE.match(hf_name)
    if m:
        return f"{_GLOBAL_NAMES[m.group(1)]}.{m.group(2)}"
    raise ExportError(f"unsupported tensor {hf_name!r}")


def permute_qk(w: Array, n_head: int) -> Array:
    """HF's rotary layout (halves) -> llama.cpp's (interleaved pairs), as convert_hf_to_gguf.py does for llama.

    Works on rows: a q/k weight (out, in), a bias (out,), or a LoRA B matrix (out, r).
    """
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


class LlamaHparams:
    """What an export needs of an HF Llama config.json; raises ExportError for what llama.cpp cannot run."""

    def __init__(self, config: dict[str, Any]) -> None:
        arch = (config.get("architectures") or ["?"])[0]
        if config.get("model_type") != "llama" and arch != "LlamaForCausalLM":
            raise ExportError(f"only Llama models are supported, not {arch} ({config.get('model_type')})")
        self.config = config
        self.n_embd = config["hidden_size"]
        self.n_layer = config["num_hidden_layers"]
        self.n_head = config["num_attention_heads"]
        self.n_head_kv = config.get("num_key_value_heads") or self.n_head
        self.head_dim = config.get("head_dim") or self.n_embd // self.n_head
        self.n_ff = config["intermediate_size"]
        self.n_ctx = config.get("max_position_embeddings", 2048)
        self.eps = config.get("rms_norm_eps", 1e-5)
        self.vocab_size = config["vocab_size"]
        self.tied = bool(config.get("tie_word_embeddings", False))
        rope = dict(config.get("rope_parameters") or {})  # transformers >= 5
        legacy = config.get("rope_scaling") or {}
        rope = {**legacy, **rope}
        self.rope_theta = float(rope.get("rope_theta", config.get("rope_theta", 10000.0)))
        self.rope_type = rope.get("rope_type") or rope.get("type") or "default"
        self.rope_factor: float | None = rope.get("factor")
        if self.rope_type not in ("default", "linear"):
            raise ExportError(f"rope scaling {self.rope_type!r} is not supported (only default and linear)")
        if self.rope_type == "linear" and self.rope_factor is None:
            raise ExportError("linear rope scaling without a factor (rope_scaling.factor)")

    def permute(self, gguf_tensor_name: str, w: Array) -> Array:
        """Apply the q/k rotary permutation where the tensor's rows are q or k heads."""
        if ".attn_q." in gguf_tensor_name:
            return permute_qk(w, self.n_head)
        if ".attn_k." in gguf_tensor_name:
            return permute_qk(w, self.n_head_kv)
        return w


def write_gguf(writer: GGUFWriter, path: Path) -> Path:
    """Write what `writer` (a gguf.GGUFWriter) holds to `path`; returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def cast_tensor(array: Array, outtype: str) -> Array:
    """1-D tensors (norms, biases) stay f32 as llama.cpp expects; matrices take the requested type (f32 or f16)."""
    import numpy as np

    array = np.ascontiguousarray(array, dtype=np.float32)
    if array.ndim >= 2 and outtype == "f16":
        return array.astype(np.float16)
    return array


def encode_tensor(array: Array, outtype: str) -> tuple[Array, GGMLQuantizationType | None]:
    """(data, raw_dtype) for GGUFWriter.add_tensor: a tensor as `outtype` stores it, as llama.cpp's converter does.

    1-D tensors (norms, biases) stay f32. Matrices take the quantized type, every one including the token
    embedding (which is also the output projection when embeddings are tied): llama.cpp's CPU backend reads
    Q8_0 and Q4_0 rows in get_rows and mul_mat alike. Quantization runs along each row in blocks of 32; a
    matrix whose row length is not a multiple of that (the demo draft's ffn_down, 176 = 5.5 * 32) falls back
    to f16, as convert_hf_to_gguf.py does. raw_dtype is None where the numpy dtype says the type (f32, f16).
    """
    import gguf
    import numpy as np

    if outtype not in QUANTIZED or np.ndim(array) < 2:
        return cast_tensor(array, outtype), None
    qtype = gguf.GGMLQuantizationType[QUANTIZED[outtype]]
    block_size, _ = gguf.GGML_QUANT_SIZES[qtype]
    if np.shape(array)[-1] % block_size:
        return cast_tensor(array, "f16"), None
    return gguf.quants.quantize(np.ascontiguousarray(array, dtype=np.float32), qtype), qtype


def file_type(outtype: str) -> LlamaFileType:
    """general.file_type of a model exported as `outtype` (a gguf.LlamaFileType)."""
    import gguf

    return gguf.LlamaFileType[_FILE_TYPES[outtype]]


def load_state_dict(directory: Path, stem: str) -> dict[str, Tensor]:
    """All tensors of `stem`.safetensors (or its shards), as torch tensors."""
    from safetensors.torch import load_file

    single = directory / f"{stem}.safetensors"
    if single.is_file():
        return load_file(single)
    index = directory / f"{stem}.safetensors.index.json"
    if index.is_file():
        state: dict[str, Tensor] = {}
        for shard in sorted(set(read_json(index)["weight_map"].values())):
            state.update(load_file(directory / shard))
        return state
    raise ExportError(f"{directory} has no {stem}.safetensors")


def to_numpy(tensor: Tensor) -> Array:
    """A torch tensor as a float32 numpy array."""
    import torch

    return tensor.detach().to(torch.float32).cpu().numpy()


def tensor_order(hf_name: str) -> TensorOrderKey:
    """Sort key of an HF parameter name: the embeddings, then the layers in order, then the rest."""
    m = _LAYER_RE.match(hf_name)
    return (1, int(m.group(1)), hf_name) if m else (0 if "embed" in hf_name else 2, 0, hf_name)
