"""What a GGUF export refuses in a Llama config.json before any tensor is read."""

import pytest

from releasegate.export._gguf_llama import ExportError, LlamaHparams

_LLAMA = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
          "intermediate_size": 128, "vocab_size": 100}


def test_linear_rope_scaling_keeps_its_factor():
    hp = LlamaHparams({**_LLAMA, "rope_scaling": {"type": "linear", "factor": 2.0}})
    assert (hp.rope_type, hp.rope_factor) == ("linear", 2.0)


def test_linear_rope_scaling_without_a_factor_is_an_export_error():
    with pytest.raises(ExportError, match="without a factor"):
        LlamaHparams({**_LLAMA, "rope_scaling": {"type": "linear"}})
