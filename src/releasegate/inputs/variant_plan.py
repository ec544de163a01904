"""The served-variant plan (`variants:` and `variant_choice:`): the ways one fine-tuned model could be served,
each run on the same suites and load by `releasegate matrix`, and which one to ship.

A variant names its server and what it serves:

    server: llamacpp   started here, in a child process: the model (`base`, default the target's) with its
                       `adapter` (default the target's) exported to GGUF at `quant`, the adapter merged into the
                       weights (`lora: merged`) or served beside them and chosen per request (`lora: per_request`);
                       or a prebuilt `gguf` file. `speculative`: a draft model or n-gram lookup.
    server: vllm       started here from .venv-vllm (`make vllm`): the merged checkpoint, or the base with the
                       adapter as a LoRA module chosen per request; `speculative: {kind: ngram}` is vLLM's
                       prompt-lookup speculation.
    server: endpoint   already running at `base_url`, serving `model`: releasegate only measures it.

The first variant is the reference every other one is compared with. The choice (`variant_choice:`) is the
cheapest variant whose own gate passes and whose quality is non-inferior to the reference's within `margin`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import ConfigDict

from ..border.http import url_problem
from ..data_classes import dataclass
from ..errors import InputError, Where
from ..extras import require
from ..model_base import Model
from ..redaction import mask_url
from .files import KeyAt, exists, is_file, resolve_under
from .model_files import check_gguf_file, check_model_dir
from .read_doc import read_doc

__all__ = ["VariantSpec", "SpeculativeSpec", "VariantPlan", "parse_variant_plan", "SERVERS", "QUANTS"]

SERVERS = ("llamacpp", "vllm", "endpoint")
QUANTS = ("f32", "f16", "q8_0", "q4_0")
"""llama.cpp model file types (`releasegate.export.gguf` OUTTYPES: the schema's enum is checked against it)."""
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
RESERVED = frozenset({"server-logs", "variants.json", "variants.md", "variants.html", "variants.csv",
                      "variants.junit.xml"})
"""What the matrix directory holds beside the variants' runs (pipeline.served_variants, report.variants)."""


@dataclass(frozen=True)
class SpeculativeSpec:
    """Speculative decoding on the server: a draft model proposes, the served model verifies."""

    kind: str
    """draft: a small model of the same vocabulary; ngram: n-gram lookup in the prompt and the text so far."""
    draft: Path | None = None
    """The draft's Hugging Face model directory (kind draft; exported to GGUF for llama.cpp)."""
    n_max: int = 4
    """Most tokens proposed per step."""

    def describe(self) -> str:
        return f"{self.kind} speculation" + (f" ({self.draft.name}, up to {self.n_max})" if self.draft else "")


@dataclass(frozen=True)
class VariantSpec:
    """One way of serving the model."""

    name: str
    server: str
    base: Path | None = None
    adapter: Path | None = None
    lora: str = "merged"
    quant: str | None = None
    gguf: Path | None = None
    speculative: SpeculativeSpec | None = None
    base_url: str | None = None
    model: str | None = None
    parallel: int = 4
    threads: int = 1
    hourly_usd: float | None = None

    def describe(self) -> str:
        """'llama.cpp q8_0, merged, draft speculation (draft, up to 4)'."""
        server = {"llamacpp": "llama.cpp", "vllm": "vLLM", "endpoint": f"endpoint {self.model or ''}".strip()}[self.server]
        parts = [f"{server} {self.quant}" if self.quant else server]
        if self.gguf is not None:
            parts.append(self.gguf.name)
        if self.adapter is not None and self.server != "endpoint":
            parts.append("LoRA per request" if self.lora == "per_request" else "merged")
        if self.speculative is not None:
            parts.append(self.speculative.describe())
        return ", ".join(parts)

    def as_record(self) -> dict[str, Any]:
        """What a run records of its variant (paths as text)."""
        spec = self.speculative
        return {"name": self.name, "server": self.server, "base": _text(self.base), "adapter": _text(self.adapter),
                "lora": self.lora if self.adapter is not None else None, "quant": self.quant, "gguf": _text(self.gguf),
                "speculative": None if spec is None else {"kind": spec.kind, "draft": _text(spec.draft), "n_max": spec.n_max},
                "base_url": mask_url(self.base_url) if self.base_url else None, "model": self.model, "parallel": self.parallel, "threads": self.threads,
                "hourly_usd": self.hourly_usd, "described": self.describe()}


@dataclass(frozen=True)
class VariantPlan:
    """The variants, the first the reference, and the choice's settings."""

    variants: tuple[VariantSpec, ...]
    margin: float | None = None
    """Non-inferiority margin of every quality rate (None: compare's default, 0.02)."""
    min_parity_share: float = 0.9
    """Quality must be decided on at least this share of the reference's cases."""

    @property
    def reference(self) -> VariantSpec:
        return self.variants[0]


class _Doc(Model):
    model_config = ConfigDict(frozen=True, extra="allow")


class SpeculativeDoc(_Doc):
    """A variant's `speculative:` as written."""

    kind: str | None = None
    draft: str | None = None
    n_max: int = 4


class VariantDoc(_Doc):
    """One entry of `variants:` as written (`adapter: null`, given, is no adapter; absent, the target's)."""

    name: str
    server: str
    base: str | None = None
    adapter: str | None = None
    gguf: str | None = None
    lora: str = "merged"
    quant: str = "f16"
    model: str | None = None
    base_url: str | None = None
    parallel: int = 4
    threads: int = 1
    hourly_usd: int | float | None = None
    speculative: SpeculativeDoc | None = None


class ChoiceDoc(_Doc):
    """`variant_choice:` as written."""

    margin: int | float | None = None
    min_parity_share: int | float = 0.9


class InheritedDoc(_Doc):
    """What a variant takes from the `target:` section unless it says otherwise."""

    base: str | None = None
    adapter: str | None = None
    model: str | None = None


def parse_variant_plan(raw: list[Any] | None, choice: dict[str, Any] | None, target: dict[str, Any], here: Path, at: KeyAt) -> VariantPlan | None:
    """The `variants:` list (schema-checked) as a VariantPlan, paths resolved under `here`; None when absent.
    `target`: the raw `target:` section, whose base, adapter and model a variant inherits."""
    if raw is None:
        if choice is not None:
            raise InputError("variant_choice needs variants to choose from", **at("variant_choice"),
                             hint="add a variants: list[Any], or remove variant_choice")
        return None
    inherited = read_doc(InheritedDoc, target, None)
    specs = tuple(_variant(read_doc(VariantDoc, item, None), item, i, inherited, here, at) for i, item in enumerate(raw))
    seen: set[str] = set()
    for i, spec in enumerate(specs):
        if spec.name.lower() in seen:  # each is a run directory: names equal but for case collide on some disks
            raise InputError(f"variant name '{spec.name}' is used twice", **at("variants", i, "name"),
                             hint="give every variant its own name")
        seen.add(spec.name.lower())
    chosen = read_doc(ChoiceDoc, choice or {}, None)
    return VariantPlan(variants=specs, margin=chosen.margin, min_parity_share=chosen.min_parity_share)


def _variant(doc: VariantDoc, item: dict[str, Any], i: int, target: InheritedDoc, here: Path, at: KeyAt) -> VariantSpec:
    """`item`: the entry as written (which keys it gives), `doc` the same read."""
    def where(*parts: str) -> Where:
        return at("variants", i, *parts)

    name, server = doc.name, doc.server
    if not NAME.match(name):
        raise InputError(f"variant name '{name}' is not a plain name", **where("name"),
                         hint="letters, digits, '.', '_' and '-', up to 64 characters (it names a run directory)")
    if name.lower() in RESERVED:
        raise InputError(f"variant name '{name}' is the name of a file of the plan's own", **where("name"),
                         hint="choose another name")
    if server == "endpoint":
        return _endpoint(doc, item, target, where)
    for key in ("base_url",):
        if key in item:
            raise InputError(f"{key} is for server: endpoint", **where(key), hint=f"a {server} variant is started here")
    base = _directory(doc.base if "base" in item else target.base, here, where("base"), "config.json", "a model directory")
    adapter_raw = doc.adapter if "adapter" in item else target.adapter
    adapter = _directory(adapter_raw, here, where("adapter"), "adapter_config.json", "a peft adapter directory")
    gguf = resolve_under(here, doc.gguf) if doc.gguf else None
    if gguf is not None and not is_file(gguf):
        raise InputError(f"no GGUF file at {gguf}", **where("gguf"), hint="point at a .gguf model file")
    if gguf is not None:
        check_gguf_file(gguf, "GGUF model", where("gguf"))
    if gguf is None and base is None:
        raise InputError("the variant has no model to serve", **where("base"),
                         hint="set base (or target.base), or gguf for a prebuilt llama.cpp file")
    _check_server_keys(item, doc, gguf, adapter, where)
    speculative = _speculative(doc.speculative, server, here, where)
    _check_extras(server, gguf is None or adapter is not None or bool(speculative and speculative.draft),
                  adapter is not None and doc.lora == "merged", where)
    return VariantSpec(
        name=name, server=server, base=base, adapter=adapter, lora=doc.lora,
        quant=doc.quant if server == "llamacpp" and gguf is None else None, gguf=gguf,
        speculative=speculative, model=doc.model, parallel=doc.parallel, threads=doc.threads,
        hourly_usd=doc.hourly_usd,
    )


def _check_extras(server: str, exporting: bool, merging: bool, where: KeyAt) -> None:
    """The extras the variant's server needs, said now (one line naming them), never a plan that fails on its
    first variant: llama.cpp (and the GGUF export, when it exports), or torch to merge an adapter for vLLM."""
    modules = []
    if server == "llamacpp":
        modules = ["xllamacpp", *(("gguf", "torch", "safetensors") if exporting else ())]
    if merging:
        modules += ["torch", "transformers", "peft"]
    if modules:
        require(f"a {server} variant", *dict.fromkeys(modules), **where("server"))


def _check_server_keys(item: dict[str, Any], doc: VariantDoc, gguf: Path | None, adapter: Path | None,
                       where: KeyAt) -> None:
    if doc.server == "vllm":
        for key in ("quant", "gguf"):
            if key in item:
                raise InputError(f"{key} is for server: llamacpp", **where(key),
                                 hint="vLLM serves the Hugging Face checkpoint (merged or with its LoRA module)")
    if gguf is not None and "quant" in item:
        raise InputError("a prebuilt gguf file has its own type: quant does not apply", **where("quant"))
    if gguf is not None and adapter is not None and doc.lora == "merged":
        raise InputError("a prebuilt gguf cannot have the adapter merged into it here", **where("gguf"),
                         hint="serve the adapter with lora: per_request, or set adapter: null if it is merged already")
    if "lora" in item and adapter is None:
        raise InputError("lora is set but the variant has no adapter", **where("lora"),
                         hint="set adapter (or target.adapter), or remove lora")


def _endpoint(doc: VariantDoc, item: dict[str, Any], target: InheritedDoc, where: KeyAt) -> VariantSpec:
    for key in ("base", "adapter", "lora", "quant", "gguf", "speculative", "parallel", "threads"):
        if key in item:
            raise InputError(f"{key} does not apply to an endpoint: it is served as it is", **where(key),
                             hint="describe the served model in its name; releasegate only measures it")
    if not doc.base_url:
        raise InputError("an endpoint variant needs its base_url", **where("base_url"),
                         hint="e.g. base_url: http://127.0.0.1:8000/v1")
    if (problem := url_problem(doc.base_url)) is not None:
        raise InputError(f"base_url is {problem}", **where("base_url"), hint="e.g. base_url: http://127.0.0.1:8000/v1")
    model = doc.model or target.model
    if not model:
        raise InputError("an endpoint variant needs the model it serves", **where("model"))
    return VariantSpec(name=doc.name, server="endpoint", base_url=doc.base_url, model=model,
                       hourly_usd=doc.hourly_usd, lora="merged")


def _speculative(raw: SpeculativeDoc | None, server: str, here: Path, where: KeyAt) -> SpeculativeSpec | None:
    if raw is None:
        return None
    kind = raw.kind if raw.kind is not None else "draft" if "draft" in raw.model_fields_set else "ngram"
    if kind == "draft" and server == "vllm":
        raise InputError("vLLM variants here take ngram speculation only", **where("speculative", "kind"),
                         hint="kind: ngram, or serve the draft model with llama.cpp")
    draft = _directory(raw.draft, here, where("speculative", "draft"), "config.json", "a model directory")
    if draft is not None:  # exported or served only once the plan runs: a draft that cannot load is refused now
        check_model_dir(draft, "draft model", where("speculative", "draft"))
    if kind == "draft" and draft is None:
        raise InputError("draft speculation needs its draft model", **where("speculative", "draft"),
                         hint="a Hugging Face model directory with the same vocabulary, e.g. models/demo/draft")
    if kind == "ngram" and draft is not None:
        raise InputError("ngram speculation takes no draft model", **where("speculative", "draft"))
    return SpeculativeSpec(kind=kind, draft=draft, n_max=raw.n_max)


def _directory(value: str | None, here: Path, where: Where, marker: str, what: str) -> Path | None:
    if value is None:
        return None
    path = resolve_under(here, value)
    if not exists(path / marker):
        raise InputError(f"no {marker} in {path}", **where, hint=f"point at {what}")
    return path


def _text(path: Path | None) -> str | None:
    return None if path is None else str(path)
