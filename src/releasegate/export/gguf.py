"""Export a Hugging Face Llama model directory, and a peft LoRA adapter for it, to GGUF for llama.cpp.

Export the demo model and its adapter. The demo's fp16 weights are lossless either way; with f32 llama.cpp
also keeps activations in f32 in its matmuls (with f16 weights it rounds them to f16), as HF float32 does:

    .venv/bin/python -m releasegate.export.gguf models/demo/base /tmp/demo.gguf --outtype f32
    .venv/bin/python -m releasegate.export.gguf --lora models/demo/adapters/good /tmp/good.gguf

(`--base DIR` names the base model of an adapter when `base_model_name_or_path` in adapter_config.json
does not resolve, relative to the adapter directory, to a local directory.)

Serve both with llama.cpp, in-process through xllamacpp (`tests/llamacpp.py` does exactly this):

    import xllamacpp as xlc
    p = xlc.CommonParams()
    p.model.path = "/tmp/demo.gguf"
    p.lora_adapters = [xlc.CommonAdapterLoraInfo("/tmp/good.gguf", 1.0)]   # adapter id 0
    p.model_alias = {"demo"}                             # the model id /v1/models reports
    p.hostnames = ["127.0.0.1"]; p.port = 0              # 0: the server binds a free port
    p.n_parallel = 4; p.n_ctx = 4 * 256                  # n_ctx is split: 256 tokens (the demo's window) per slot
    p.cpuparams.n_threads = p.cpuparams_batch.n_threads = 1
    p.endpoint_metrics = True                            # Prometheus /metrics (llamacpp:* series)
    p.cache_ram_mib = 0; p.cache_idle_slots = False      # see below: per-request LoRA + RAM prompt cache
    p.flash_attn_type = xlc.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED  # CPU flash attn is f16
    p.cache_type_k = p.cache_type_v = xlc.ggml_type.GGML_TYPE_F32
    server = xlc.Server(p)                               # returns once the model is loaded (/health ok)
    base_url = server.listening_address + "/v1"          # OpenAI-compatible: /v1/chat/completions, /v1/models
    ...
    del server                                           # ~Server stops the HTTP server and the decode loop

The same with the stock binary (flags from llama.cpp's server README, not exercised by the tests):
`llama-server -m /tmp/demo.gguf --lora /tmp/good.gguf --alias demo --port 8080 -t 1 -np 4 -c 1024 --metrics
--cache-ram 0 -fa off -ctk f32 -ctv f32`.

The chat template travels in the GGUF (tokenizer.chat_template); llama.cpp's jinja engine renders it to the
same text, and tokens, as `tokenizer.apply_chat_template(messages, add_generation_prompt=True)`. A request picks
the adapter strength with `"lora": [{"id": 0, "scale": 1.0}]` (scale 0.0 = the base model). Two settings matter
for fidelity: llama.cpp's host-RAM prompt cache (on by default) restores KV computed under another request's
LoRA scale (ggml-org/llama.cpp#26207), so it is off; and CPU flash attention computes in f16 (logprobs drift
~2e-3 from HF float32, enough to flip near-tie greedy choices), so it is off and the K/V cache is f32. With
both, greedy answers are token-identical to transformers + peft in float32.

Only the Llama architecture (LlamaForCausalLM) and byte-level BPE tokenizers are supported.
torch, safetensors and gguf are imported only when an export runs.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["export_model", "export_lora", "main"]

_OUTTYPES = ("f32", "f16")

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


# ---------------------------------------------------------------------------------------------------------
# shared helpers


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


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


def permute_qk(w, n_head: int):
    """HF's rotary layout (halves) -> llama.cpp's (interleaved pairs), as convert_hf_to_gguf.py does for llama.

    Works on rows: a q/k weight (out, in), a bias (out,), or a LoRA B matrix (out, r).
    """
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


class _Hparams:
    def __init__(self, config: dict[str, Any]):
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
        self.rope_factor = rope.get("factor")
        if self.rope_type not in ("default", "linear"):
            raise ExportError(f"rope scaling {self.rope_type!r} is not supported (only default and linear)")

    def permute(self, gguf_tensor_name: str, w):
        """Apply the q/k rotary permutation where the tensor's rows are q or k heads."""
        if ".attn_q." in gguf_tensor_name:
            return permute_qk(w, self.n_head)
        if ".attn_k." in gguf_tensor_name:
            return permute_qk(w, self.n_head_kv)
        return w


def _write(writer, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _cast(array, outtype: str):
    """1-D tensors (norms, biases) stay f32 as llama.cpp expects; matrices take the requested type."""
    import numpy as np

    array = np.ascontiguousarray(array, dtype=np.float32)
    if array.ndim >= 2 and outtype == "f16":
        return array.astype(np.float16)
    return array


# ---------------------------------------------------------------------------------------------------------
# tokenizer


def _token_content(value) -> str | None:
    if isinstance(value, dict):
        return value.get("content")
    return value


def _chat_template(model_dir: Path, tok_config: dict[str, Any]) -> str | None:
    template = tok_config.get("chat_template")
    if isinstance(template, list):  # named templates: [{"name": "default", "template": ...}, ...]
        named = {t.get("name"): t.get("template") for t in template}
        template = named.get("default") or next(iter(named.values()), None)
    if template:
        return template
    if (model_dir / "chat_template.jinja").is_file():  # transformers >= 4.50 saves it separately
        return (model_dir / "chat_template.jinja").read_text(encoding="utf-8")
    if (model_dir / "chat_template.json").is_file():
        return _read_json(model_dir / "chat_template.json").get("chat_template")
    return None


def _post_processor_adds(tokenizer: dict[str, Any], token: str | None) -> bool | None:
    """Whether the HF post-processor puts `token` around a single sequence (None: cannot tell)."""
    post = tokenizer.get("post_processor")
    if not post or token is None:
        return None
    processors = post.get("processors", [post]) if post.get("type") == "Sequence" else [post]
    for p in processors:
        if p.get("type") == "TemplateProcessing":
            return any(item.get("SpecialToken", {}).get("id") == token for item in p.get("single", []))
    return None


def _add_tokenizer(writer, model_dir: Path, hp: _Hparams) -> None:
    import gguf

    path = model_dir / "tokenizer.json"
    if not path.is_file():
        raise ExportError(f"{model_dir} has no tokenizer.json (only fast byte-level BPE tokenizers are supported)")
    tokenizer = _read_json(path)
    model = tokenizer.get("model", {})
    pre = tokenizer.get("pre_tokenizer") or {}
    if model.get("type") != "BPE" or pre.get("type") != "ByteLevel" or not pre.get("use_regex", True):
        raise ExportError(
            "only byte-level BPE tokenizers with the GPT-2 pre-tokenizer are supported, got "
            f"model={model.get('type')} pre_tokenizer={pre.get('type')}"
        )
    if tokenizer.get("normalizer"):
        raise ExportError(f"tokenizer normalizers are not supported: {tokenizer['normalizer'].get('type')}")

    tok_config_path = model_dir / "tokenizer_config.json"
    tok_config = _read_json(tok_config_path) if tok_config_path.is_file() else {}

    by_id: dict[int, tuple[str, int]] = {}
    for text, i in model["vocab"].items():
        by_id[i] = (text, gguf.TokenType.NORMAL)
    for added in tokenizer.get("added_tokens", []):
        kind = gguf.TokenType.CONTROL if added.get("special") else gguf.TokenType.USER_DEFINED
        by_id[added["id"]] = (added["content"], kind)
    n_vocab = max(hp.vocab_size, max(by_id) + 1)
    if n_vocab != hp.vocab_size:
        raise ExportError(f"tokenizer has ids up to {max(by_id)} but the model's vocab_size is {hp.vocab_size}")
    tokens, types = [], []
    for i in range(n_vocab):
        text, kind = by_id.get(i, (f"[PAD{i}]", gguf.TokenType.UNUSED))
        tokens.append(text)
        types.append(kind)

    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]

    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)

    ids = {text: i for i, (text, _) in by_id.items()}
    special = {}
    for key in ("bos", "eos", "unk", "pad"):
        text = _token_content(tok_config.get(f"{key}_token"))
        if text is not None and text in ids:
            special[key] = ids[text]
        elif tok_config.get(f"{key}_token") is None and hp.config.get(f"{key}_token_id") is not None:
            value = hp.config[f"{key}_token_id"]
            special[key] = value[0] if isinstance(value, list) else value
    adders = {"bos": writer.add_bos_token_id, "eos": writer.add_eos_token_id,
              "unk": writer.add_unk_token_id, "pad": writer.add_pad_token_id}
    for key, token_id in special.items():
        adders[key](int(token_id))

    bos_text = _token_content(tok_config.get("bos_token"))
    eos_text = _token_content(tok_config.get("eos_token"))
    add_bos = tok_config.get("add_bos_token")
    if add_bos is None:
        add_bos = bool(_post_processor_adds(tokenizer, bos_text))
    add_eos = tok_config.get("add_eos_token")
    if add_eos is None:
        add_eos = bool(_post_processor_adds(tokenizer, eos_text))
    writer.add_add_bos_token(bool(add_bos))
    writer.add_add_eos_token(bool(add_eos))

    template = _chat_template(model_dir, tok_config)
    if template:
        writer.add_chat_template(template)


# ---------------------------------------------------------------------------------------------------------
# tensors


def _load_state_dict(directory: Path, stem: str) -> dict[str, Any]:
    """All tensors of `stem`.safetensors (or its shards), as torch tensors."""
    from safetensors.torch import load_file

    single = directory / f"{stem}.safetensors"
    if single.is_file():
        return load_file(single)
    index = directory / f"{stem}.safetensors.index.json"
    if index.is_file():
        state: dict[str, Any] = {}
        for shard in sorted(set(_read_json(index)["weight_map"].values())):
            state.update(load_file(directory / shard))
        return state
    raise ExportError(f"{directory} has no {stem}.safetensors")


def _to_numpy(tensor):
    import torch

    return tensor.detach().to(torch.float32).cpu().numpy()


def export_model(model_dir: str | Path, out_path: str | Path, *, outtype: str = "f16", name: str | None = None) -> Path:
    """Write the HF Llama model in `model_dir` (config, safetensors, tokenizer.json) as one GGUF file.

    outtype: "f16" (matrices in fp16, norms in f32) or "f32". Returns the output path.
    """
    import gguf

    if outtype not in _OUTTYPES:
        raise ExportError(f"outtype must be one of {_OUTTYPES}, not {outtype!r}")
    model_dir, out_path = Path(model_dir), Path(out_path)
    hp = _Hparams(_read_json(model_dir / "config.json"))
    state = _load_state_dict(model_dir, "model")

    writer = gguf.GGUFWriter(out_path, "llama")
    writer.add_type(gguf.GGUFType.MODEL)
    writer.add_name(name or model_dir.resolve().name)
    writer.add_context_length(hp.n_ctx)
    writer.add_embedding_length(hp.n_embd)
    writer.add_block_count(hp.n_layer)
    writer.add_feed_forward_length(hp.n_ff)
    writer.add_head_count(hp.n_head)
    writer.add_head_count_kv(hp.n_head_kv)
    writer.add_layer_norm_rms_eps(hp.eps)
    writer.add_rope_freq_base(hp.rope_theta)
    writer.add_rope_dimension_count(hp.head_dim)
    if hp.head_dim != hp.n_embd // hp.n_head:
        writer.add_key_length(hp.head_dim)
        writer.add_value_length(hp.head_dim)
    if hp.rope_type == "linear":
        writer.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        writer.add_rope_scaling_factor(float(hp.rope_factor))
    writer.add_vocab_size(hp.vocab_size)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if outtype == "f16" else gguf.LlamaFileType.ALL_F32)
    _add_tokenizer(writer, model_dir, hp)

    for hf_name in sorted(state, key=_tensor_order):
        target = gguf_name(hf_name)
        if target is None:
            continue
        if target == "output.weight" and hp.tied:
            continue  # llama.cpp uses token_embd for the output projection when `output` is absent
        writer.add_tensor(target, _cast(hp.permute(target, _to_numpy(state[hf_name])), outtype))
    if not hp.tied and "lm_head.weight" not in state:
        raise ExportError("the model has untied embeddings but no lm_head.weight")
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    return _write(writer, out_path)


def _tensor_order(hf_name: str):
    m = _LAYER_RE.match(hf_name)
    return (1, int(m.group(1)), hf_name) if m else (0 if "embed" in hf_name else 2, 0, hf_name)


# ---------------------------------------------------------------------------------------------------------
# LoRA


def _adapter_base(adapter_dir: Path, config: dict[str, Any], base: str | Path | None) -> Path:
    if base is not None:
        return Path(base)
    ref = config.get("base_model_name_or_path")
    if ref:
        for candidate in (adapter_dir / ref, Path(ref)):
            if (candidate / "config.json").is_file():
                return candidate
    raise ExportError(
        f"cannot find the base model of {adapter_dir} (base_model_name_or_path={ref!r}); pass base= / --base DIR"
    )


def export_lora(
    adapter_dir: str | Path, out_path: str | Path, *, base: str | Path | None = None, outtype: str = "f32"
) -> Path:
    """Write the peft LoRA adapter in `adapter_dir` as a llama.cpp GGUF LoRA (general.type=adapter).

    `base` is the HF base model directory (only its config.json is read); by default
    `base_model_name_or_path` of adapter_config.json, resolved against the adapter directory.
    """
    import gguf

    if outtype not in _OUTTYPES:
        raise ExportError(f"outtype must be one of {_OUTTYPES}, not {outtype!r}")
    adapter_dir, out_path = Path(adapter_dir), Path(out_path)
    config = _read_json(adapter_dir / "adapter_config.json")
    if config.get("peft_type", "LORA") != "LORA":
        raise ExportError(f"only LoRA adapters are supported, not {config.get('peft_type')}")
    unsupported = [
        key for key in ("use_dora", "modules_to_save", "rank_pattern", "alpha_pattern", "lora_bias",
                        "trainable_token_indices", "layer_replication", "alora_invocation_tokens")
        if config.get(key)
    ]
    if unsupported:
        raise ExportError(f"adapter features llama.cpp LoRA cannot express: {', '.join(unsupported)}")
    if config.get("fan_in_fan_out"):
        raise ExportError("fan_in_fan_out adapters (Conv1D layers) are not supported")
    hp = _Hparams(_read_json(_adapter_base(adapter_dir, config, base) / "config.json"))
    rank = int(config["r"])
    alpha = float(config["lora_alpha"])
    if config.get("use_rslora"):
        alpha *= math.sqrt(rank)  # llama.cpp scales by alpha / r; rsLoRA by alpha / sqrt(r)

    state = _load_state_dict(adapter_dir, "adapter_model")
    pairs: dict[str, dict[str, Any]] = {}
    for key, tensor in state.items():
        m = re.match(r"^(?:base_model\.model\.)?(.+)\.lora_([AB])(?:\.[^.]+)?\.weight$", key)
        if not m:
            raise ExportError(f"unexpected tensor in adapter: {key!r} (embedding or full-weight adapters are not supported)")
        module, which = m.groups()
        target = gguf_name(module + ".weight")
        if target is None or not target.startswith("blk.") or target.endswith("_norm.weight"):
            raise ExportError(f"LoRA on {module!r} is not supported")
        pairs.setdefault(target, {})[which] = tensor

    writer = gguf.GGUFWriter(out_path, "llama")
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, alpha)
    writer.add_name(adapter_dir.resolve().name)
    for target in sorted(pairs, key=lambda t: (int(t.split(".")[1]), t)):
        pair = pairs[target]
        if set(pair) != {"A", "B"}:
            raise ExportError(f"{target}: LoRA A/B pair is incomplete")
        a = _to_numpy(pair["A"])  # (r, in)  -> ggml ne = [in, r]
        b = _to_numpy(pair["B"])  # (out, r) -> ggml ne = [r, out]
        if a.shape[0] != b.shape[1]:
            raise ExportError(f"{target}: lora_A {a.shape} and lora_B {b.shape} ranks differ")
        writer.add_tensor(target + ".lora_a", _cast(a, outtype))
        writer.add_tensor(target + ".lora_b", _cast(hp.permute(target, b), outtype))
    return _write(writer, out_path)


# ---------------------------------------------------------------------------------------------------------
# CLI


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m releasegate.export.gguf",
        description="Export an HF Llama model directory, or (--lora) a peft LoRA adapter, to GGUF for llama.cpp.",
    )
    parser.add_argument("source", type=Path, help="HF model directory (or adapter directory with --lora)")
    parser.add_argument("out", type=Path, help="output .gguf file")
    parser.add_argument("--lora", action="store_true", help="SOURCE is a peft LoRA adapter directory")
    parser.add_argument("--base", type=Path, help="with --lora: the adapter's HF base model directory")
    parser.add_argument("--outtype", choices=_OUTTYPES, help="tensor type (default: f16 for models, f32 for LoRA)")
    args = parser.parse_args(argv)
    try:
        if args.lora:
            path = export_lora(args.source, args.out, base=args.base, outtype=args.outtype or "f32")
        else:
            if args.base is not None:
                parser.error("--base is only for --lora")
            path = export_model(args.source, args.out, outtype=args.outtype or "f16")
    except (ExportError, OSError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
