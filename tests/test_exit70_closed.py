"""The last four ways in to an internal error (exit 70), each now one line naming the field and the fix, exit 2:
embedding weights of another shape than their config.json, a draft model whose weights are no safetensors or
of another shape (for `target.draft` and for a served variant's `speculative.draft`), and a lean install (no
torch) whose served-variant plan needs the GGUF export. Behind the checks at the config, the loaders that would
have raised say the same (the local embedding model's, the draft's export)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from releasegate.errors import InputError, TargetError
from test_lean_install import one_line, without

DEMO = ROOT / "models" / "demo"


def _torn(where: Path, source: Path = DEMO / "draft") -> Path:
    """A copy of `source` whose weights are no safetensors file (a copy cut short, then filled with noise)."""
    shutil.copytree(source, where)
    data = (where / "model.safetensors").read_bytes()
    (where / "model.safetensors").write_bytes(b"\xff" * 8 + data[8:4096])
    return where


def _reshaped(where: Path, source: Path = DEMO / "draft") -> Path:
    """A copy of `source` whose token embeddings are wider than its config.json says (another model's)."""
    import torch
    from safetensors.torch import load_file, save_file

    shutil.copytree(source, where)
    weights = load_file(where / "model.safetensors")
    name = next(k for k in weights if k.endswith("embed_tokens.weight"))
    rows, columns = weights[name].shape
    weights[name] = torch.zeros(rows, columns + 3)
    save_file(weights, where / "model.safetensors", metadata={"format": "pt"})
    return where


BROKEN = {"torn": (_torn, "is not a safetensors file"), "reshaped": (_reshaped, "of shape")}


def _one_line(code: int, err: str, *needles: str) -> None:
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("  ")]
    assert code == 2 and "Traceback" not in err and len(lines) == 1, err
    assert all(n in lines[0] for n in needles), lines[0]


@pytest.mark.parametrize("form", sorted(BROKEN))
def test_a_broken_draft_model_is_refused_at_target_draft(project, cli, tmp_path, form):
    make, words = BROKEN[form]
    draft = make(tmp_path / "draft")
    config = project / "releasegate.yaml"
    config.write_text(config.read_text().replace(
        "  backend: replay\n", f"  backend: hf\n  base: {DEMO / 'base'}\n  draft: {draft}\n#"))
    code, out, err = cli("validate", "-c", config)
    _one_line(code, err, "target.draft", words)


@pytest.mark.parametrize("form", sorted(BROKEN))
def test_a_broken_draft_model_is_refused_at_the_variant_plan(project, cli, tmp_path, form):
    make, words = BROKEN[form]
    draft = make(tmp_path / "draft")
    config = project / "releasegate.yaml"
    base = f"base: {DEMO / 'base'}"
    config.write_text(config.read_text() + f"variants:\n  - {{name: a, server: llamacpp, {base}}}\n"
                      f"  - {{name: b, server: llamacpp, {base}, speculative: {{draft: {draft}}}}}\n")
    code, out, err = cli("validate", "-c", config)
    _one_line(code, err, "variants[1].speculative.draft", words)


def test_a_draft_the_export_cannot_read_is_one_input_error(tmp_path):
    """Behind the config's check: the export of a draft whose weights cannot be read names the draft."""
    from releasegate.export.variant_files import _exported_draft

    draft = _torn(tmp_path / "draft")
    (tmp_path / "out").mkdir()
    with pytest.raises(InputError) as caught:
        _exported_draft(draft, tmp_path / "out")
    assert caught.value.field == "speculative.draft" and str(draft) in caught.value.message


def test_embedding_weights_of_another_shape_are_refused_at_the_config(project, cli, tmp_path):
    model = _reshaped(tmp_path / "embedder", DEMO / "base")
    config = project / "releasegate.yaml"
    config.write_text(config.read_text() + f"response_cache_probe:\n  threshold: 0.9\n  embeddings: {{local: {model}}}\n")
    code, out, err = cli("validate", "-c", config)
    _one_line(code, err, "response_cache_probe.embeddings.local", "of shape", "config.json says")


@pytest.mark.slow
def test_the_local_embedding_loader_names_weights_of_another_shape(tmp_path):
    """Behind the config's check: transformers' refusal (a RuntimeError) is the probe's error, naming the fix."""
    from releasegate.backends.embeddings import embed
    from releasegate.inputs.cache_config import EmbeddingSource

    model = _reshaped(tmp_path / "embedder", DEMO / "base")
    with pytest.raises(TargetError) as caught:
        embed(["a question"], EmbeddingSource(local=model))
    assert "could not be loaded" in str(caught.value) and "save_pretrained" in str(caught.value)


def test_a_lean_install_is_told_the_variant_plan_needs_the_export_extras(project):
    config = project / "releasegate.yaml"
    base = f"base: {DEMO / 'base'}"
    config.write_text(config.read_text() + f"variants:\n  - {{name: a, server: llamacpp, {base}}}\n"
                      f"  - {{name: b, server: llamacpp, {base}, quant: q8_0}}\n")
    for command in ("validate", "matrix"):
        out = without("torch,transformers,peft,safetensors,accelerate", "releasegate", command, "-c", config,
                      cwd=project)
        one_line(out, "variants[0].server", "needs torch, safetensors", "pip install")


def _header(tensors: object, body: int = 16) -> bytes:
    import json

    head = json.dumps(tensors).encode()
    return len(head).to_bytes(8, "little") + head + b"\0" * body


@pytest.mark.parametrize("weights", [
    b"", b"\x00" * 7, (10**9).to_bytes(8, "little") + b"{}", (4).to_bytes(8, "little") + b"nope",
    _header([1, 2]), _header({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 64]}}),
    _header({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}),
    _header({"w": {"dtype": "F32", "shape": "2", "data_offsets": [0, 8]}}),
    _header({"w": "x"}), (100_000).to_bytes(8, "little") + b"[" * 100_000,
])
def test_weights_that_are_no_safetensors_are_one_input_error(tmp_path, weights):
    from releasegate.inputs.model_files import check_model_dir

    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "llama", "vocab_size": 4, "hidden_size": 2}')
    (model / "model.safetensors").write_bytes(weights)
    with pytest.raises(InputError) as caught:
        check_model_dir(model, "draft model", {"field": "target.draft"})
    assert caught.value.field == "target.draft" and "not a safetensors file" in caught.value.message


def test_weights_whose_header_reads_pass(tmp_path):
    from releasegate.inputs.model_files import check_model_dir

    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "llama", "vocab_size": 4, "hidden_size": 2}')
    (model / "model.safetensors").write_bytes(_header(
        {"__metadata__": {"format": "pt"}, "model.embed_tokens.weight": {"dtype": "F32", "shape": [4, 2],
                                                                          "data_offsets": [0, 32]}}, body=32))
    assert check_model_dir(model, "draft model", {"field": "target.draft"}) == model
