"""Speculative decoding for the llama.cpp server: its settings (`Speculative`), how they become llama.cpp's
parameters and `python -m releasegate.export.llamacpp` options, and the check that the server does speculate.

    p.speculative.types = [xlc.common_speculative_type.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
    p.speculative.draft.mparams.path = "draft.gguf"; p.speculative.draft.n_max = 4
    # or COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE with p.speculative.ngram_simple.size_n / size_m

An answer's "timings" then has draft_n and draft_n_accepted; /metrics has llamacpp:spec_decode_num_*_total.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..data_classes import dataclass
from ._serve import existing_dir, existing_file, http_get_json

__all__ = ["Speculative", "SPECULATIVE_KINDS", "NGRAM_MATCH", "apply_speculative", "check_speculating",
           "add_speculative_arguments", "check_speculative_arguments", "speculative_from_arguments"]

XllamacppParams = Any
"""An xllamacpp.CommonParams (llama.cpp's common_params; the xllamacpp wheel has no type information)."""

SPECULATIVE_KINDS = ("draft", "ngram")
NGRAM_MATCH = 3
"""Tokens the n-gram kind matches against the text so far (llama.cpp's ngram-simple size_n). Its default, 12,
drafted nothing even on demo tickets that quote earlier answers; 3 drafted there (114 of 296 tokens accepted,
20 cases); 2 also drafted on the plain demo tickets, where every drafted token was rejected."""


@dataclass(frozen=True)
class Speculative:
    """Speculative decoding for a llama.cpp server: greedy answers stay those of the target alone, only faster
    (or slower) to come.

    kind "draft": a small model with the target's vocabulary (`draft`, a GGUF file) proposes up to n_max tokens
    a step, each kept while its probability is at least p_min, and drafts under n_min tokens are dropped.
    kind "ngram": no second model; the tokens that followed the last matching n-gram of the prompt and answer so
    far are proposed (llama.cpp's ngram-simple, prompt lookup), up to n_max; n_min and p_min are not its.
    """

    kind: str = "draft"
    draft: Path | None = None
    n_max: int = 4
    n_min: int = 0
    p_min: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in SPECULATIVE_KINDS:
            raise ValueError(f"speculative kind must be one of {SPECULATIVE_KINDS}, not {self.kind!r}")
        if self.kind == "draft" and self.draft is None:
            raise ValueError("speculative kind 'draft' needs a draft model file (a GGUF with the target's vocabulary)")
        if self.kind == "ngram" and (self.draft is not None or self.n_min or self.p_min):
            raise ValueError("speculative kind 'ngram' takes no draft model, n_min or p_min (they are a draft "
                             "model's); use kind 'draft' to serve one")
        if not 1 <= self.n_max or not 0 <= self.n_min <= self.n_max:
            raise ValueError(f"speculative drafts need 1 <= n_max and 0 <= n_min <= n_max, not n_max={self.n_max}, "
                             f"n_min={self.n_min}")
        if not 0.0 <= self.p_min <= 1.0:
            raise ValueError(f"speculative p_min is a probability in [0, 1], not {self.p_min}")

    def cli_arguments(self) -> list[str]:
        """These settings as `python -m releasegate.export.llamacpp` options."""
        args = ["--speculative", self.kind, "--draft-max", str(self.n_max)]
        if self.draft is not None:
            args += ["--draft-gguf", str(Path(self.draft).resolve()), "--draft-min", str(self.n_min),
                     "--draft-p-min", repr(self.p_min)]
        return args


def apply_speculative(params: XllamacppParams, spec: Speculative, *, threads: int, exact_attention: bool) -> None:
    """Set llama.cpp's speculative parameters; the draft model computes like the target (threads, K/V types)."""
    import xllamacpp as xlc

    kinds = xlc.common_speculative_type
    sp = params.speculative
    if spec.kind == "ngram":
        sp.types = [kinds.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE]
        sp.ngram_simple.size_n = NGRAM_MATCH
        sp.ngram_simple.size_m = spec.n_max  # ngram-simple's draft length; it ignores draft.n_max
        return
    if not Path(spec.draft or "").is_file():
        raise FileNotFoundError(f"{spec.draft}: no such draft model file")
    sp.types = [kinds.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
    sp.draft.mparams.path = str(spec.draft)
    sp.draft.n_max, sp.draft.n_min, sp.draft.p_min = spec.n_max, spec.n_min, spec.p_min
    sp.draft.cpuparams.n_threads = threads
    sp.draft.cpuparams_batch.n_threads = threads
    if exact_attention:
        sp.draft.cache_type_k = xlc.ggml_type.GGML_TYPE_F32
        sp.draft.cache_type_v = xlc.ggml_type.GGML_TYPE_F32


def check_speculating(root_url: str, spec: Speculative) -> None:
    """Raise RuntimeError unless every slot speculates: llama.cpp logs a draft it cannot use (another
    vocabulary, say) and serves on without speculation, which would measure the plain server under the
    speculative variant's name."""
    status, body = http_get_json(root_url + "/slots", timeout=10)
    slots = body if status == 200 else None
    if not isinstance(slots, list) or not slots or not all(isinstance(s, dict) for s in slots):
        raise RuntimeError(f"llama.cpp at {root_url}: /slots answered HTTP {status}, not the slots' state")
    if not all(slot.get("speculative") is True for slot in slots):
        what = f"the draft {spec.draft}" if spec.kind == "draft" else "n-gram lookup"
        raise RuntimeError(f"llama.cpp serves without speculative decoding with {what} (its log says why; a draft "
                           f"model must have the target's vocabulary)")


def add_speculative_arguments(parser: argparse.ArgumentParser, *, draft_quant: str) -> None:
    """The CLI's speculative options; an exported draft is written in the type `draft_quant` names."""
    drafts = parser.add_mutually_exclusive_group()
    drafts.add_argument("--draft", type=existing_dir, default=None, metavar="DIR",
                        help=f"a Hugging Face draft model directory (the target's vocabulary), exported with "
                             f"{draft_quant} and used for speculative decoding")
    drafts.add_argument("--draft-gguf", type=existing_file, default=None, metavar="FILE",
                        help="a prebuilt GGUF draft model for speculative decoding")
    parser.add_argument("--speculative", choices=SPECULATIVE_KINDS, default=None,
                        help="speculative decoding: with a draft model, or n-gram lookup in the text so far "
                             "(default: draft when --draft or --draft-gguf is given, else none)")
    parser.add_argument("--draft-max", type=int, default=None, metavar="N",
                        help=f"most tokens drafted a step (default: {Speculative.n_max})")
    parser.add_argument("--draft-min", type=int, default=None, metavar="N",
                        help=f"a draft model's drafts under N tokens are dropped (default: {Speculative.n_min})")
    parser.add_argument("--draft-p-min", type=float, default=None, metavar="P",
                        help=f"a draft model's tokens are drafted while their probability is at least P "
                             f"(default: {Speculative.p_min})")


def check_speculative_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> bool:
    """Usage errors in the speculative options; True when the server is to speculate."""
    drafted = args.draft is not None or args.draft_gguf is not None
    if args.speculative == "draft" and not drafted:
        parser.error("--speculative draft needs --draft DIR or --draft-gguf FILE")
    if args.speculative == "ngram" and drafted:
        parser.error("--speculative ngram takes no draft model (drop --draft / --draft-gguf)")
    speculating = drafted or args.speculative is not None
    tuned = [name for name in ("draft_max", "draft_min", "draft_p_min") if getattr(args, name) is not None]
    if tuned and not speculating:
        parser.error(f"--{tuned[0].replace('_', '-')} needs --speculative, --draft or --draft-gguf")
    return speculating


def speculative_from_arguments(args: argparse.Namespace, draft: Path | None) -> Speculative:
    """The settings the options name, with `draft` the GGUF draft model file (None for n-gram lookup)."""
    tuned = {field: value for field, value in (("n_max", args.draft_max), ("n_min", args.draft_min),
                                               ("p_min", args.draft_p_min)) if value is not None}
    return Speculative(kind=args.speculative or "draft", draft=draft, **tuned)
