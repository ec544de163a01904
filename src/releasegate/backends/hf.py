"""Hugging Face backend: transformers base model, optional peft LoRA adapter, optional in-memory merge.

Batched greedy generation with left padding. A LogitsProcessor stamps the clock at every decoding step,
which splits latency the way inference works: the first stamp closes the prefill (TTFT), the later ones
are decode steps (TPOT). In a batch the prefill covers the whole batch, as in a batching server; every
timing records its batch size.
"""

from __future__ import annotations

import os
import time
import warnings

from ..errors import TargetError
from ..record import Timing, Tokens
from ._base import Backend, Generation, Request

_NS_PER_MS = 1e6


class HFBackend(Backend):
    def __init__(self, target, generation: dict | None = None) -> None:
        self.target = target
        self.batch_size = target.batch_size
        self.model = None
        self.tokenizer = None

    def load(self) -> None:
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import torch
        import transformers

        transformers.utils.logging.set_verbosity_error()
        transformers.utils.logging.disable_progress_bar()
        # library deprecation notices are not the user's problem and would bury the verdict
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"(transformers|peft)\.")
        torch.set_num_threads(self.target.threads)
        self.torch = torch
        self.tokenizer = self._load_tokenizer()
        self.model = self._load_model()
        self.eos_ids = self._eos_ids()

    def _load_tokenizer(self):
        from transformers import AutoTokenizer

        try:
            tok = AutoTokenizer.from_pretrained(self.target.base)
        except (OSError, ValueError) as exc:
            raise TargetError(f"cannot load tokenizer of {self.target.base}: {_first_line(exc)}") from None
        tok.padding_side = "left"
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token
        return tok

    def _load_model(self):
        from transformers import AutoModelForCausalLM

        t = self.target
        try:
            model = AutoModelForCausalLM.from_pretrained(t.base, dtype=getattr(self.torch, t.dtype))
        except (OSError, ValueError) as exc:
            raise TargetError(f"cannot load base model {t.base}: {_first_line(exc)}") from None
        if t.adapter is not None:
            model = self._apply_adapter(model)
        return model.to(t.device).eval()

    def _apply_adapter(self, model):
        # transformers' own adapter loading refuses older peft; PeftModel.from_pretrained does not
        from peft import PeftModel

        try:
            model = PeftModel.from_pretrained(model, str(self.target.adapter))
        except (OSError, ValueError, RuntimeError, KeyError) as exc:
            raise TargetError(f"cannot apply adapter {self.target.adapter}: {_first_line(exc)}") from None
        return model.merge_and_unload() if self.target.merge else model

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
            text = tok.apply_chat_template(request.messages, tokenize=False, add_generation_prompt=True)
            return tok(text, add_special_tokens=False)["input_ids"]
        return tok(request.prompt)["input_ids"]

    def generate(self, requests: list[Request], *, max_new_tokens: int) -> list[Generation]:
        try:
            return self._generate(requests, max_new_tokens)
        except (RuntimeError, ValueError, IndexError) as exc:  # one bad batch must not end the run
            return [Generation(None, error="generation_error", error_message=_first_line(exc)) for _ in requests]

    def _generate(self, requests: list[Request], max_new_tokens: int) -> list[Generation]:
        from transformers import LogitsProcessorList

        torch = self.torch
        prompts = [self.prompt_ids(r) for r in requests]
        input_ids, attention = self._left_pad(prompts)
        clock = _StepClock()
        with torch.inference_mode():
            start = time.perf_counter_ns()
            out = self.model.generate(
                input_ids=input_ids, attention_mask=attention, max_new_tokens=max_new_tokens, do_sample=False,
                num_beams=1, pad_token_id=self.tokenizer.pad_token_id, eos_token_id=sorted(self.eos_ids),
                logits_processor=LogitsProcessorList([clock]),
            )
        new = out[:, input_ids.shape[1]:].tolist()
        return [self._one(row, len(p), clock.stamps, start, len(requests)) for row, p in zip(new, prompts)]

    def _left_pad(self, prompts: list[list[int]]):
        torch = self.torch
        width = max(len(p) for p in prompts)
        pad = self.tokenizer.pad_token_id
        ids = [[pad] * (width - len(p)) + p for p in prompts]
        mask = [[0] * (width - len(p)) + [1] * len(p) for p in prompts]
        device = self.target.device
        return torch.tensor(ids, device=device), torch.tensor(mask, device=device)

    def _one(self, row: list[int], n_in: int, stamps: list[int], start: int, batch: int) -> Generation:
        end = next((i for i, t in enumerate(row) if t in self.eos_ids), None)
        n_out = end if end is not None else len(row)
        last_step = end if end is not None else len(row) - 1  # the stream ends with the EOS step
        text = self.tokenizer.decode(row[:n_out], skip_special_tokens=True)
        ttft = (stamps[0] - start) / _NS_PER_MS
        tpot = (stamps[n_out - 1] - stamps[0]) / _NS_PER_MS / (n_out - 1) if n_out >= 2 else None
        e2e = (stamps[min(last_step, len(stamps) - 1)] - start) / _NS_PER_MS
        return Generation(
            text,
            tokens=Tokens(input=n_in, output=n_out, source="tokenizer"),
            timing=Timing(ttft_ms=ttft, tpot_ms=tpot, e2e_ms=e2e, batch_size=batch),
            output_ids=row[:n_out],
        )

    def close(self) -> None:
        self.model = None


class _StepClock:
    """A LogitsProcessor that only reads the clock: called once per step, after that step's forward pass."""

    def __init__(self) -> None:
        self.stamps: list[int] = []

    def __call__(self, input_ids, scores):
        self.stamps.append(time.perf_counter_ns())
        return scores


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
