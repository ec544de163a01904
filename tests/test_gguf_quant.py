"""Quantized GGUF exports (Q8_0, Q4_0) of the demo model: what the file holds, read back with gguf's own reader
and dequantizer; that the same inputs give the same bytes; the manifest; and (slow) that a real llama.cpp
server loads the quantized merged model and answers like the f16 one.
"""

from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor

import pytest

import llamacpp
from llamacpp import DEMO, SUITES, post_json
from releasegate.export._gguf_llama import OUTTYPES, ExportError, permute_qk
from releasegate.export.gguf import export_lora, export_manifest, export_model, main
from releasegate.inputs.files import sha256_file

QUANT = {"q8_0": "Q8_0", "q4_0": "Q4_0"}
N_CASES = 20
MAX_TOKENS = 32
MIN_Q8_IDENTICAL = 0.9
"""Share of Q8_0 greedy answers equal to f16's. Measured on the merged `good` model: 20 of 20 here (100 of 100
over both demo suites; first-token logprobs move by ~1e-5). The floor leaves room for two near-tie flips."""


def _require_export():
    if os.environ.get("CI"):  # in CI a missing piece is a failure, never a silent skip
        import gguf  # noqa: F401
        import safetensors  # noqa: F401
        import torch  # noqa: F401

        assert llamacpp.demo_available(), f"demo model not built: {DEMO}"
    for module in ("gguf", "torch", "safetensors"):
        pytest.importorskip(module, reason=f"{module} (the hf and llamacpp extras) not installed")
    if not llamacpp.demo_available():
        pytest.skip(f"demo model not built: {DEMO}")


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """The demo base model exported at every outtype: outtype -> path."""
    _require_export()
    out = tmp_path_factory.mktemp("quant")
    return {t: export_model(DEMO / "base", out / f"base-{t}.gguf", outtype=t) for t in OUTTYPES}


def _tensors(path):
    import gguf

    return {t.name: t for t in gguf.GGUFReader(path).tensors}


def _hf_weights():
    from safetensors.numpy import load_file

    return {k: v.astype("float32") for k, v in load_file(DEMO / "base" / "model.safetensors").items()}


@pytest.mark.parametrize("outtype", list(QUANT))
def test_matrices_are_quantized_and_norms_stay_f32(exports, outtype):
    import gguf

    reference = _tensors(exports["f32"])
    tensors = _tensors(exports[outtype])
    assert tensors.keys() == reference.keys() and "token_embd.weight" in tensors
    for name, tensor in tensors.items():
        assert list(tensor.shape) == list(reference[name].shape), name  # ggml's ne, as written
        expected = "F32" if len(tensor.shape) == 1 else QUANT[outtype]
        assert tensor.tensor_type.name == expected, name
    field = gguf.GGUFReader(exports[outtype]).get_field(gguf.Keys.General.FILE_TYPE)
    assert gguf.LlamaFileType(int(field.contents())).name == "MOSTLY_" + QUANT[outtype]


def test_file_sizes_shrink_with_the_type(exports):
    sizes = [exports[t].stat().st_size for t in ("f32", "f16", "q8_0", "q4_0")]
    assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == 4, sizes


@pytest.mark.parametrize("outtype", list(QUANT))
def test_the_same_inputs_give_the_same_bytes(exports, tmp_path, outtype):
    again = export_model(DEMO / "base", tmp_path / exports[outtype].name, outtype=outtype)
    assert sha256_file(again) == sha256_file(exports[outtype])


# A Q8_0 block stores round(x / d) with d = max|x| / 127 (in fp16): the error is at most d / 2. Q4_0 has
# d = max / -8 over 16 levels, and the level opposite the max is clipped: the error is at most |d|.
MAX_ERROR = {"q8_0": 1 / 200, "q4_0": 1 / 7}  # of the tensor's max |weight|, with room for the fp16 scale


@pytest.mark.parametrize("outtype", list(QUANT))
def test_dequantized_weights_are_the_hf_weights(exports, outtype):
    """Each matrix, dequantized by gguf, is close to the HF weight in llama.cpp's row order: q/k rows rotary
    permuted, the rest as HF stores them (out, in). A transposed, unpermuted or misaligned block would be off by
    the weights' own scale."""
    import gguf
    import numpy as np

    hf = _hf_weights()
    tensors = _tensors(exports[outtype])
    layer = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
             "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
             "ffn_down": "mlp.down_proj"}
    config = json.loads((DEMO / "base" / "config.json").read_text())
    checked = 0
    for name, tensor in tensors.items():
        if len(tensor.shape) == 1:
            continue
        if name == "token_embd.weight":
            want = hf["model.embed_tokens.weight"]
        else:
            _, block, kind, _ = name.split(".")
            want = hf[f"model.layers.{block}.{layer[kind]}.weight"]
            if kind in ("attn_q", "attn_k"):
                heads = config["num_attention_heads"] if kind == "attn_q" else config["num_key_value_heads"]
                unpermuted = want
                want = permute_qk(want, heads)
                assert np.abs(gguf.quants.dequantize(tensor.data, tensor.tensor_type) - unpermuted).max() > 0.1 * \
                    np.abs(want).max(), f"{name}: the check cannot tell permuted rows from unpermuted ones"
        got = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        assert got.shape == want.shape, name
        error = float(np.abs(got - want).max())
        assert error <= MAX_ERROR[outtype] * float(np.abs(want).max()), (name, error)
        checked += 1
    assert checked == 1 + 7 * config["num_hidden_layers"]


def test_rows_that_are_not_whole_blocks_fall_back_to_f16(tmp_path):
    """The draft model's ffn_down rows are 176 = 5.5 blocks of 32 long: f16; its other matrices quantize."""
    _require_export()
    path = export_model(DEMO / "draft", tmp_path / "draft.gguf", outtype="q4_0")
    for name, tensor in _tensors(path).items():
        if len(tensor.shape) == 1:
            expected = "F32"
        else:
            expected = "F16" if int(tensor.shape[0]) % 32 else "Q4_0"  # shape[0]: ggml's ne0, the row length
        assert tensor.tensor_type.name == expected, name
    assert export_manifest([path])[0]["tensors"]["F16"] == 2  # one ffn_down per layer


def test_manifest_reads_each_file_back(exports):
    paths = [exports[t] for t in OUTTYPES]
    manifest = export_manifest(paths)
    assert [m["file"] for m in manifest] == [p.name for p in paths]
    assert [m["type"] for m in manifest] == ["F32", "F16", "Q8_0", "Q4_0"]
    for entry, path in zip(manifest, paths):
        assert entry["bytes"] == path.stat().st_size
        assert entry["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    n_matrices = 1 + 7 * 4
    assert manifest[0]["tensors"] == {"F32": n_matrices + 9}
    assert manifest[2]["tensors"] == {"F32": 9, "Q8_0": n_matrices}
    assert manifest[3]["tensors"] == {"F32": 9, "Q4_0": n_matrices}


def test_lora_export_refuses_quantized_types(tmp_path):
    _require_export()
    with pytest.raises(ExportError, match="f32 or f16, not 'q8_0'.*merge"):
        export_lora(DEMO / "adapters" / "good", tmp_path / "good.gguf", base=DEMO / "base", outtype="q8_0")
    assert not (tmp_path / "good.gguf").exists()


def test_cli_exports_quantized_and_refuses_a_quantized_lora(tmp_path, capsys):
    _require_export()
    out = tmp_path / "base.gguf"
    assert main([str(DEMO / "base"), str(out), "--outtype", "q8_0"]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert export_manifest([out])[0]["type"] == "Q8_0"
    assert main(["--lora", str(DEMO / "adapters" / "good"), str(tmp_path / "good.gguf"), "--outtype", "q4_0"]) == 1
    assert "f32 or f16, not 'q4_0'" in capsys.readouterr().err


# --- served by llama.cpp (slow: merges the adapter with transformers + peft) ---------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """Greedy answers of the merged `good` model at f16, q8_0 and q4_0 to the first N_CASES tickets, each asked
    twice on one server: outtype -> (first run, second run) of replies."""
    _require_export()
    pytest.importorskip("xllamacpp", reason="llama.cpp bindings (pip install xllamacpp) not installed")
    pytest.importorskip("peft", reason="peft (the hf extra) not installed")
    from releasegate.export.llamacpp import merge_adapter

    out = tmp_path_factory.mktemp("quant-served")
    merged = merge_adapter(DEMO / "base", DEMO / "adapters" / "good", out / "merged")
    cases = _cases()
    replies = {}
    for outtype in ("f16", "q8_0", "q4_0"):
        server = llamacpp.start_server(export_model(merged, out / f"merged-{outtype}.gguf", outtype=outtype), [])
        try:
            replies[outtype] = (_ask_all(server, cases), _ask_all(server, cases))
        finally:
            server.stop()
    return cases, replies


def _cases() -> list[dict]:
    rows = [json.loads(line) for line in SUITES[0].read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if r.get("messages")][:N_CASES]


def _ask_all(server, cases) -> list[dict]:
    def ask(case):
        return post_json(server.base_url + "/chat/completions", {
            "model": server.model, "messages": case["messages"], "temperature": 0, "max_tokens": MAX_TOKENS,
        })["choices"][0]

    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(ask, cases))


def _text(choice: dict) -> str:
    return choice["message"]["content"]


def _right(case: dict, text: str) -> bool:
    try:
        answer = json.loads(text)
    except ValueError:
        return False
    expected = case["expected"]
    return isinstance(answer, dict) and all(answer.get(k) == expected[k] for k in ("intent", "priority"))


@pytest.mark.slow
def test_quantized_models_answer_every_request_the_same_way_twice(served):
    cases, replies = served
    for outtype, (first, second) in replies.items():
        assert len(first) == len(cases)
        assert all(c["finish_reason"] in ("stop", "length") and _text(c) for c in first), outtype
        assert [_text(c) for c in first] == [_text(c) for c in second], outtype


@pytest.mark.slow
def test_q8_0_answers_like_f16(served):
    cases, replies = served
    f16 = [_text(c) for c in replies["f16"][0]]
    same = {}
    for outtype in ("f16", "q8_0", "q4_0"):
        texts = [_text(c) for c in replies[outtype][0]]
        same[outtype] = sum(a == b for a, b in zip(texts, f16))
        right = sum(_right(case, text) for case, text in zip(cases, texts))
        print(f"\n{outtype}: {same[outtype]}/{len(cases)} identical to f16, {right}/{len(cases)} right intent+priority")
    assert same["q8_0"] >= MIN_Q8_IDENTICAL * len(cases), same
