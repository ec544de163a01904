"""Export a Hugging Face Llama model directory, and a peft LoRA adapter for it, to GGUF for llama.cpp.

Export the demo model and its adapter. The demo's fp16 weights are lossless either way; with f32 llama.cpp
also keeps activations in f32 in its matmuls (with f16 weights it rounds them to f16), as HF float32 does:

    .venv/bin/python -m releasegate.export.gguf models/demo/base /tmp/demo.gguf --outtype f32
    .venv/bin/python -m releasegate.export.gguf --lora models/demo/adapters/good /tmp/good.gguf

Quantized: `--outtype q8_0` or `q4_0` (pure Python, gguf.quants) quantizes every matrix, the tied token
embedding included; norms stay f32, and a matrix whose rows are not a whole number of 32-value blocks is f16.
On the demo's 100 tickets, served greedy, Q8_0 gives f16's answers to all of them, Q4_0 to 97 (the base
model) and 100 (base + `good` merged); the demo decides by wide margins, a model with closer calls flips more.
LoRA adapters export as f32 or f16 only: to serve an adapter on a quantized model, merge it into the base
first (`releasegate.export.llamacpp.merge_adapter`) and export the merged model. The same inputs give the same
bytes; `export_manifest` lists each file's size, sha256, type and tensor counts by type.

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
torch, safetensors and gguf are imported only when an export runs. Tensor names, hyper-parameters, reading
safetensors and writing GGUF are in `_gguf_llama`; the tokenizer in `_gguf_tokenizer`.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..extras import require
from ..inputs.files import sha256_file
from ._gguf_llama import (
    OUTTYPES,
    QUANTIZED,
    ExportError,
    LlamaHparams,
    cast_tensor,
    encode_tensor,
    file_type,
    gguf_name,
    load_state_dict,
    read_json,
    tensor_order,
    to_numpy,
    write_gguf,
)
from ._gguf_tokenizer import add_tokenizer

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["export_model", "export_lora", "export_manifest", "main", "NEEDS"]

NEEDS = ("gguf", "torch", "safetensors")
"""What an export imports: gguf writes the file (the `llamacpp` extra), safetensors and torch read the weights
(the `hf` extra)."""


def export_model(model_dir: str | Path, out_path: str | Path, *, outtype: str = "f16", name: str | None = None) -> Path:
    """Write the HF Llama model in `model_dir` (config, safetensors, tokenizer.json) as one GGUF file.

    outtype: "f16" (matrices in fp16, norms in f32), "f32", or "q8_0" / "q4_0" (matrices quantized, see
    `_gguf_llama.encode_tensor` for which stay f32 or f16). Returns the output path.
    """
    import gguf

    if outtype not in OUTTYPES:
        raise ExportError(f"outtype must be one of {OUTTYPES}, not {outtype!r}")
    model_dir, out_path = Path(model_dir), Path(out_path)
    hp = LlamaHparams(read_json(model_dir / "config.json"))
    state = load_state_dict(model_dir, "model")

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
        assert hp.rope_factor is not None  # LlamaHparams refuses linear scaling without a factor
        writer.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        writer.add_rope_scaling_factor(float(hp.rope_factor))
    writer.add_vocab_size(hp.vocab_size)
    writer.add_file_type(file_type(outtype))
    add_tokenizer(writer, model_dir, hp)

    for hf_name in sorted(state, key=tensor_order):
        target = gguf_name(hf_name)
        if target is None:
            continue
        if target == "output.weight" and hp.tied:
            continue  # llama.cpp uses token_embd for the output projection when `output` is absent
        # rows are permuted before quantizing: blocks run along a row, so they stay whole
        data, raw_dtype = encode_tensor(hp.permute(target, to_numpy(state[hf_name])), outtype)
        writer.add_tensor(target, data, raw_dtype=raw_dtype)
    if not hp.tied and "lm_head.weight" not in state:
        raise ExportError("the model has untied embeddings but no lm_head.weight")
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    return write_gguf(writer, out_path)


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
    outtype: "f32" or "f16"; llama.cpp adds LoRA products in float, so quantized adapters are refused.
    """
    import gguf

    if outtype in QUANTIZED:
        raise ExportError(f"a LoRA adapter exports as f32 or f16, not {outtype!r}; to serve it on a quantized model, "
                          "merge it into the base (merge_adapter) and export the merged model with that outtype")
    if outtype not in OUTTYPES:
        raise ExportError(f"outtype must be one of {OUTTYPES}, not {outtype!r}")
    adapter_dir, out_path = Path(adapter_dir), Path(out_path)
    config = read_json(adapter_dir / "adapter_config.json")
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
    hp = LlamaHparams(read_json(_adapter_base(adapter_dir, config, base) / "config.json"))
    rank = int(config["r"])
    alpha = float(config["lora_alpha"])
    if config.get("use_rslora"):
        alpha *= math.sqrt(rank)  # llama.cpp scales by alpha / r; rsLoRA by alpha / sqrt(r)

    state = load_state_dict(adapter_dir, "adapter_model")
    pairs: dict[str, dict[str, Tensor]] = {}
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
        a = to_numpy(pair["A"])  # (r, in)  -> ggml ne = [in, r]
        b = to_numpy(pair["B"])  # (out, r) -> ggml ne = [r, out]
        if a.shape[0] != b.shape[1]:
            raise ExportError(f"{target}: lora_A {a.shape} and lora_B {b.shape} ranks differ")
        writer.add_tensor(target + ".lora_a", cast_tensor(a, outtype))
        writer.add_tensor(target + ".lora_b", cast_tensor(hp.permute(target, b), outtype))
    return write_gguf(writer, out_path)


# ---------------------------------------------------------------------------------------------------------
# Manifest

def export_manifest(paths: list[Path]) -> list[dict[str, Any]]:
    """Per GGUF file what identifies the exported artefact, read back from the file itself (not from what the
    export meant to write): {"file": name, "bytes": size, "sha256": hex, "type": general.file_type as
    "F32" / "F16" / "Q8_0" / "Q4_0" (None where the file has none, as LoRA adapters), "tensors": {type: count}}.
    """
    import gguf

    manifest = []
    for path in map(Path, paths):
        reader = gguf.GGUFReader(path)
        field = reader.get_field(gguf.Keys.General.FILE_TYPE)
        kind = None if field is None else gguf.LlamaFileType(int(field.contents())).name.split("_", 1)[1]
        counts: dict[str, int] = {}
        for tensor in reader.tensors:
            counts[tensor.tensor_type.name] = counts.get(tensor.tensor_type.name, 0) + 1
        manifest.append({"file": path.name, "bytes": path.stat().st_size, "sha256": sha256_file(path),
                         "type": kind, "tensors": dict(sorted(counts.items()))})
    return manifest


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
    parser.add_argument("--outtype", choices=OUTTYPES, help="tensor type (default: f16 for models, f32 for LoRA; "
                        "q8_0 and q4_0 for models only)")
    args = parser.parse_args(argv)
    try:
        require("the GGUF export", *NEEDS)
    except InputError as exc:  # a missing extra: one line, exit 2, as the releasegate command says it
        print(f"error: {exc}", file=sys.stderr)
        return 2
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
