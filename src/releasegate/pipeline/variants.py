"""The variant matrix: the same suites through deployment variants of one HF model, compared with the first.

    adapter      base + LoRA adapter, unmerged (the reference)
    merged       adapter merged into the base (merge_and_unload): greedy outputs must be identical
    int8         merged, then dynamic int8 quantization of Linear layers (CPU)
    speculative  merged, assisted generation with a small draft model: greedy outputs must be identical

Each variant is a full run under reports/<matrix-id>/<variant>/; the matrix compares each with the reference:
quality delta with the paired test, TTFT / TPOT / E2E P95 ratios, cost ratio, and the share of outputs
identical to the reference.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..inputs.backend_facts import capabilities

if TYPE_CHECKING:  # the CLI lists the variants without loading configs
    from ..inputs.config import Config

__all__ = ["VARIANTS", "variant_config", "variant_changes", "parse_variants"]



VARIANTS = ("adapter", "merged", "int8", "speculative")


def variant_changes(variant: str, draft: Path | None) -> dict[str, Any]:
    """How a variant's target differs from the config's (recorded in run.json so a resume rebuilds it)."""
    changes: dict[str, dict[str, Any]] = {
        "adapter": {"merge": False, "quantize": None, "draft": None},
        "merged": {"merge": True, "quantize": None, "draft": None},
        "int8": {"merge": True, "quantize": "int8", "draft": None},
        "speculative": {"merge": True, "quantize": None, "draft": draft, "batch_size": 1},
    }
    return changes[variant]


def variant_config(config: Config, variant: str, draft: Path | None) -> Config:
    """The config of one variant, derived from the base config's target."""
    t = config.target
    if not capabilities(t.backend).variants or t.adapter is None:
        raise InputError("the variant matrix needs an hf target with an adapter", file=config.path, field="target")
    changes = variant_changes(variant, draft)
    if variant == "speculative" and draft is None:
        raise InputError("the speculative variant needs a draft model", field="--draft", hint="pass --draft DIR or set target.draft")
    return dataclasses.replace(config, target=dataclasses.replace(t, **changes))


def parse_variants(text: str) -> list[str]:
    """`--variants a,b,c`: known variant names, the first the reference."""
    names = [v.strip() for v in text.split(",") if v.strip()]
    unknown = [v for v in names if v not in VARIANTS]
    if unknown or not names:
        raise InputError(f"unknown variant '{unknown[0] if unknown else ''}'", field="--variants",
                         hint="choose from " + ", ".join(VARIANTS))
    return names
