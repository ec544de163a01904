"""Hugging Face backend: transformers base model, optional peft LoRA adapter, optional in-memory merge.

Batched greedy generation with left padding. A LogitsProcessor stamps the clock at every decoding step,
which splits latency the way inference works: the first stamp closes the prefill (TTFT), the later ones
are decode steps (TPOT). In a batch the prefill covers the whole batch, as in a batching server; every
timing records its batch size. On CUDA every clock read waits for the device first (see `_StepClock`).
Output tokens include the end-of-sequence token when generation stopped on one, as servers' `usage` does
(llama.cpp, vLLM): its step is the last token of TPOT and E2E.

The backend's own lateness, the time its generating thread waited for a CPU within each request's timed window
(`_starvation`), is kept as a client summary (`client_stats`, run.json `client`), as the endpoint clients keep
theirs: a starved machine widens the latency bounds instead of failing them.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ErrorKind, TargetError
from ..inputs.backend_facts import BackendSpec, Capabilities
from ..record.records import Timing, Tokens
from ._base import Backend, Generation, Request
from ._registry import BackendEntry, register
from ._starvation import GenerationLateness, StarvedSteps, Waits, cpu_waits
from .tool_parsers import read_calls, rendered_prompt

if TYPE_CHECKING:
    import torch

    from ..inputs.target import TargetConfig

Model = Any
"""A transformers model, a peft model over one, or either quantized: loaded and called by name (transformers' own
types do not follow `.to()`, peft's wrapping or dynamic quantization)."""
Tokenizer = Any
"""A transformers tokenizer (`AutoTokenizer`), called as the model's chat template and padding need."""

SPEC = BackendSpec(
    "hf", summary="transformers + peft, in-process",
    fields=("base", "adapter", "merge", "dtype", "threads", "batch_size", "bucket_by_length", "device", "quantize",
            "draft"),
    required=("base",),
    describe=(("hf {base}", ()), (" + adapter {adapter}", ("adapter",)), (" (merged)", ("adapter", "merge")),
              (", {quantize}", ("quantize",)), (", speculative with draft {draft}", ("draft",))),
    capabilities=Capabilities(
        scale="cases", tokens="the model's tokenizer", in_flight="batch", reorders_cases=True, variants=True,
        model_dirs=(("model", "base"), ("adapter", "adapter"), ("draft", "draft")),
        fingerprint=("merge", "dtype", "device", "quantize"),
        requires=(("torch", ""), ("transformers", ""), ("peft", "adapter")), versions=("torch", "transformers", "peft"),
    ),
)

_NS_PER_MS = 1e6


class HFBackend(Backend):
    def __init__(self, target: TargetConfig, generation: dict[str, Any] | None = None) -> None:
        self.target = target
        self.batch_size = target.batch_size
        # transformers' objects, set by load(); typed Any: torch and transformers are not imported to check this
        self.model: Any = None
        self.tokenizer: Any = None
        self.sync: Any = None
        self.waits: Waits | None = None
        """What reads the generating thread's CPU wait (`_starvation.cpu_waits`); None: not measured."""
        self.lateness: GenerationLateness | None = None
        self.client_stats: dict[str, Any] | None = None
        """The lateness over every `generate` call so far, as a client summary (`_starvation`); None before."""

    auto_model = "AutoModelForCausalLM"
    """The transformers Auto class the base model is loaded with."""

    def load(self) -> None:
        self._start_torch()
        self.tokenizer = self._load_tokenizer()
        self.model = self._load_model()
        self.eos_ids = self._eos_ids()
        self.draft = self._load_draft() if self.target.draft else None
        self.sync = self._device_sync()
        found = cpu_waits(self.target.threads, self.torch.device(self.target.device).type)
        if found is not None:
            self.watch_cpu(*found)

    def watch_cpu(self, waits: Waits, source: str) -> None:
        """Measure the generating thread's CPU wait with `waits` from now on (`source` names it in the summary)."""
        self.waits, self.lateness, self.client_stats = waits, GenerationLateness(source), None

    def _start_torch(self) -> None:
        """Import torch and transformers quietly, on the target's threads."""
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import torch
        import transformers

        transformers.utils.logging.set_verbosity_error()  # type: ignore[no-untyped-call,unused-ignore]  # unannotated (strict only)
        transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call,unused-ignore]
        # library deprecation notices are not the user's problem and would bury the verdict
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"(transformers|peft)\.")
        torch.set_num_threads(self.target.threads)
        self.torch = torch

    def _device_sync(self) -> Callable[[], None] | None:
        """What the clock calls before each read: wait for the GPU's queued work on CUDA, nothing on CPU."""
        device = self.torch.device(self.target.device)
        if device.type != "cuda":
            return None
        torch = self.torch
        return lambda: torch.cuda.synchronize(device)

    @property
    def _base(self) -> str:
        """`target.base`, the backend's required field."""
        assert self.target.base is not None
        return self.target.base

    def _tokenizer_source(self) -> str:
        """An adapter that ships its own tokenizer (added tokens) wins over the base's."""
        adapter = self.target.adapter
        if adapter is not None and any((adapter / f).exists() for f in ("tokenizer.json", "tokenizer_config.json")):
            return str(adapter)
        return self._base

    def _hub_hint(self) -> str:
        if Path(self._base).exists():
            return ""
        return " (a hub id: download the model where the hub is reachable and set target.base to its directory)"

    def _load_tokenizer(self) -> Tokenizer:
        from transformers import AutoTokenizer

        try:
            tok = AutoTokenizer.from_pretrained(self._tokenizer_source())
        except (OSError, ValueError) as exc:
            raise TargetError(f"cannot load tokenizer of {self.target.base}: {_first_line(exc)}{self._hub_hint()}") from None
        tok.padding_side = "left"
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token
        return tok

    def _load_model(self) -> Model:
        import transformers

        t = self.target
        try:
            model = self._from_pretrained(getattr(transformers, self.auto_model))
        except (OSError, ValueError) as exc:
            raise TargetError(f"cannot load base model {t.base}: {_first_line(exc)}{self._hub_hint()}") from None
        embeddings: Any = model.get_input_embeddings()
        if len(self.tokenizer) > embeddings.weight.shape[0]:
            model.resize_token_embeddings(len(self.tokenizer))  # the adapter's tokenizer added tokens
        if t.adapter is not None:
            model = self._apply_adapter(model)
        if t.quantize == "int8":
            model = self._int8(model)
        return model.to(t.device).eval()

    def _from_pretrained(self, auto: Any) -> Model:  # auto: a transformers Auto class
        return auto.from_pretrained(self.target.base, dtype=getattr(self.torch, self.target.dtype))

    def _apply_adapter(self, model: Model) -> Model:
        # transformers' own adapter loading refuses older peft; PeftModel.from_pretrained does not
        from peft import PeftModel

        try:
            model = PeftModel.from_pretrained(model, str(self.target.adapter))
        except (OSError, ValueError, RuntimeError, KeyError) as exc:
            raise TargetError(f"cannot apply adapter {self.target.adapter}: {_first_line(exc)}") from None
        self._check_adapter_applied(model)
        return model.merge_and_unload() if self.target.merge else model

    def _check_adapter_applied(self, model: Model) -> None:
        """Canary: if base and base+adapter give the same logits, the adapter did nothing: stop, don't score."""
        torch = self.torch
        canary = [{"role": "user", "content": "My order has not arrived and I was charged twice, please help."}]
        ids = self.prompt_ids(Request("canary", canary)) if self.tokenizer.chat_template else self.tokenizer("Hello")["input_ids"]
        batch = torch.tensor([ids])
        with torch.inference_mode():
            with model.disable_adapter():
                base_logits = model(input_ids=batch).logits
            adapted = model(input_ids=batch).logits
        if torch.equal(base_logits, adapted):
            raise TargetError(
                f"adapter {self.target.adapter} changes nothing: base and base+adapter give identical logits "
                "(untrained adapter, or its target modules are not in this model)"
            )

    def _int8(self, model: Model) -> Model:
        """Dynamic int8 quantization of the Linear layers (CPU), as a deployment variant."""
        torch = self.torch
        if self.target.device != "cpu":
            raise TargetError("quantize: int8 is dynamic CPU quantization; on CUDA load an 8-bit model instead")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.ao.quantization announces its move to torchao
            return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)

    def _load_draft(self) -> Model:
        """The draft model for assisted (speculative) generation: must share the tokenizer."""
        from transformers import AutoModelForCausalLM

        if self.batch_size != 1:
            raise TargetError("speculative decoding (draft) generates one request at a time: set batch_size: 1")
        try:
            draft: Model = AutoModelForCausalLM.from_pretrained(str(self.target.draft), dtype=getattr(self.torch, self.target.dtype))
        except (OSError, ValueError) as exc:
            raise TargetError(f"cannot load draft model {self.target.draft}: {_first_line(exc)}") from None
        return draft.to(self.target.device).eval()

    def _eos_ids(self) -> set[int]:
        eos = self.model.generation_config.eos_token_id
        ids = set(eos if isinstance(eos, list) else [eos]) if eos is not None else set()
        if self.tokenizer.eos_token_id is not None:
            ids.add(self.tokenizer.eos_token_id)
        return ids

    def prompt_ids(self, request: Request) -> list[int]:
        """Token ids sent for a request: the chat template for messages, the raw prompt otherwise."""
        tok = self.tokenizer
        if request.messages is not None:
            ids: list[int] = tok(rendered_prompt(tok, request), add_special_tokens=False)["input_ids"]
            return ids
        ids = tok(request.prompt)["input_ids"]
        return ids

    def generate(self, requests: list[Request], *, max_new_tokens: int) -> list[Generation]:
        prompts = [self.prompt_ids(r) for r in requests]
        out: list[Generation | None] = [self._past_context(len(p), max_new_tokens) for p in prompts]
        fits = [i for i, g in enumerate(out) if g is None]
        if fits:
            try:
                made = self._generate([prompts[i] for i in fits], max_new_tokens)
            except (RuntimeError, ValueError, IndexError) as exc:  # one bad batch must not end the run
                made = [Generation(None, error=ErrorKind.GENERATION_ERROR, error_message=_first_line(exc)) for _ in fits]
            for i, generation in zip(fits, made):
                read_calls(self.tokenizer, requests[i], generation)  # a tool case: the calls in the text
                out[i] = generation
        return [g for g in out if g is not None]

    def _past_context(self, n_prompt: int, max_new_tokens: int) -> Generation | None:
        """An error for a prompt that, with the tokens it may generate, runs past the positions the model was built
        for (`max_position_embeddings`): past them a model reads positions it never saw, and answers anything (a
        guard reading a long reply calls it safe), so the request is refused, as a server refuses it."""
        limit = getattr(getattr(self.model, "config", None), "max_position_embeddings", None)
        if not isinstance(limit, int) or n_prompt + max_new_tokens <= limit:
            return None
        return Generation(None, error=ErrorKind.CONTEXT_EXCEEDED, error_message=(
            f"the prompt's {n_prompt} tokens and max_new_tokens {max_new_tokens} run past the model's "
            f"{limit} positions (max_position_embeddings)"))

    def _generate(self, prompts: list[list[int]], max_new_tokens: int) -> list[Generation]:
        from transformers import LogitsProcessorList

        torch = self.torch
        input_ids, attention = self._left_pad(prompts)
        clock = _StepClock(self.sync)
        cpu = (time.thread_time(), time.process_time())
        with torch.inference_mode():
            start = clock.now()  # on CUDA, after the input copies queued by _left_pad
            # the CPU wait is read right after each clock read: the first just after `start`, then after every step
            starved = StarvedSteps(self.waits) if self.waits is not None else None
            out = self.model.generate(
                input_ids=input_ids, attention_mask=attention, max_new_tokens=max_new_tokens, do_sample=False,
                num_beams=1, pad_token_id=self.tokenizer.pad_token_id, eos_token_id=sorted(self.eos_ids),
                logits_processor=LogitsProcessorList([clock, *([starved] if starved else [])]), **self._assist(),
            )
            end = clock.now()
        new = out[:, input_ids.shape[1]:].tolist()
        if self.draft is not None:
            # assisted decoding verifies several tokens per step: step stamps are not per token
            gens = [self._one_assisted(new[0], len(prompts[0]), clock.stamps[0], start, end)]
            ends: list[int | None] = [None]  # its E2E runs to `end`
        else:
            gens = [self._one(row, len(p), clock.stamps, start, len(prompts)) for row, p in zip(new, prompts)]
            ends = [_last_step(self._split(row)[1], len(clock.stamps)) for row in new]
        if starved is not None:
            self._keep_lateness(starved, gens, ends, (end - start) / 1e9, cpu)
        return gens

    def _keep_lateness(self, starved: StarvedSteps, gens: list[Generation], ends: list[int | None], window_s: float,
                       cpu: tuple[float, float]) -> None:
        """Each request's CPU wait within its timed windows (`_starvation.request_waits`), into `client_stats`."""
        assert self.lateness is not None  # set with `waits` (`watch_cpu`)
        self.lateness.add([starved.request(g.tokens.output or 0, step) for g, step in zip(gens, ends)],
                          window_s=window_s, thread_cpu_s=time.thread_time() - cpu[0],
                          process_cpu_s=time.process_time() - cpu[1])
        self.client_stats = self.lateness.summary()

    def _assist(self) -> dict[str, Any]:
        return {"assistant_model": self.draft} if self.draft is not None else {}

    def _one_assisted(self, row: list[int], n_in: int, first: int, start: int, end: int) -> Generation:
        n_text, n_out = self._split(row)
        # `end` follows the last verification step, the one that produced the EOS: the span covers n_out - 1 tokens
        tpot = (end - first) / _NS_PER_MS / (n_out - 1) if n_out >= 2 else None
        return Generation(
            self.tokenizer.decode(row[:n_text], skip_special_tokens=True),
            tokens=Tokens(input=n_in, output=n_out, source="tokenizer"),
            timing=Timing(ttft_ms=(first - start) / _NS_PER_MS, tpot_ms=tpot, e2e_ms=(end - start) / _NS_PER_MS, batch_size=1,
                          in_flight_at_send=1, in_flight_most=1),
            output_ids=row[:n_out],
        )

    def _split(self, row: list[int]) -> tuple[int, int]:
        """(text tokens, output tokens) of one generated row. Output tokens are the tokens the model generated,
        the end-of-sequence token included when it stopped on one: it cost a decode step, and servers (llama.cpp,
        vLLM) count it in `usage.completion_tokens`. What follows it in a batch is padding."""
        eos_at = next((i for i, t in enumerate(row) if t in self.eos_ids), None)
        return (eos_at, eos_at + 1) if eos_at is not None else (len(row), len(row))

    def _left_pad(self, prompts: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        torch = self.torch
        width = max(len(p) for p in prompts)
        pad = self.tokenizer.pad_token_id
        ids = [[pad] * (width - len(p)) + p for p in prompts]
        mask = [[0] * (width - len(p)) + [1] * len(p) for p in prompts]
        device = self.target.device
        return torch.tensor(ids, device=device), torch.tensor(mask, device=device)

    def _one(self, row: list[int], n_in: int, stamps: list[int], start: int, batch: int) -> Generation:
        n_text, n_out = self._split(row)
        text = self.tokenizer.decode(row[:n_text], skip_special_tokens=True)
        last = stamps[_last_step(n_out, len(stamps))]
        ttft = (stamps[0] - start) / _NS_PER_MS
        tpot = (last - stamps[0]) / _NS_PER_MS / (n_out - 1) if n_out >= 2 else None
        e2e = (last - start) / _NS_PER_MS
        return Generation(
            text,
            tokens=Tokens(input=n_in, output=n_out, source="tokenizer"),
            timing=Timing(ttft_ms=ttft, tpot_ms=tpot, e2e_ms=e2e, batch_size=batch, in_flight_at_send=batch,
                          in_flight_most=batch),  # a batch shares its forward passes
            output_ids=row[:n_out],
        )

    def close(self) -> None:
        self.model = None


class _StepClock:
    """A LogitsProcessor that only reads the clock: called once per step, after that step's forward pass.

    On CUDA the host only queues kernels: when this runs, the step's forward may still be executing, so a bare
    host clock read would stamp the queueing, not the finish. TTFT would then miss most of the prefill's GPU
    time, which would land in the first decode step instead. `sync` (torch.cuda.synchronize for the model's
    device) waits for the queued work before every read, including the start and end stamps around generate.
    On CPU the forward has already finished when this runs: `sync` is None and no call is made.
    """

    def __init__(self, sync: Callable[[], None] | None = None) -> None:
        self.sync = sync
        self.stamps: list[int] = []

    def now(self) -> int:
        if self.sync is not None:
            self.sync()
        return time.perf_counter_ns()

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        self.stamps.append(self.now())
        return scores


def _last_step(n_out: int, n_steps: int) -> int:
    """The step whose stamp ends a request's E2E: stamps[i] closes the step that produced token i, and the last
    token is the EOS when there is one."""
    return min(n_out - 1, n_steps - 1)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


register(BackendEntry(SPEC, "releasegate.backends.hf:HFBackend", scaled="releasegate.scale.hf:RayHFBackend"))
