"""Export Hugging Face models and peft LoRA adapters to other serving formats (GGUF for llama.cpp).

`from releasegate.export import export_model, export_lora`; the CLI is `python -m releasegate.export.gguf`.
The submodule is imported lazily, so `python -m releasegate.export.gguf` does not import it twice.
"""

from __future__ import annotations

__all__ = ["export_model", "export_lora"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from . import gguf

        return getattr(gguf, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
