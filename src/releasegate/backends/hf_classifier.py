"""A local sequence-classification model (transformers `AutoModelForSequenceClassification`): a guard that is a
classifier (toxicity, PII, prompt injection: a fine-tuned BERT, DeBERTa, RoBERTa or Llama with a classification
head), loaded the way the `hf` backend loads a model (base, optional peft adapter, dtype, threads, device).

Each request's last user message is classified, in batches of `batch_size`. The reply is the predicted label's
name (`config.id2label[argmax]`), read by a guard of format `classifier`. A text longer than the model reads
(the smaller of the tokenizer's `model_max_length` and the model's `max_position_embeddings`) is cut to that
length, and its Generation says so (`truncated_to`): the guard then knows the model saw only the start.
"""

from __future__ import annotations

import time
from typing import Any

from ..errors import ErrorKind, TargetError
from ..inputs.backend_facts import BackendSpec, Capabilities
from ..record.records import Timing, Tokens
from ._base import Generation, Request
from ._registry import BackendEntry, register
from .hf import HFBackend, Model, _first_line

SPEC = BackendSpec(
    "hf_classifier", summary="a transformers sequence-classification model, in-process (a guard's classifier)",
    fields=("base", "adapter", "dtype", "threads", "batch_size", "device"),
    required=("base",),
    describe=(("hf_classifier {base}", ()), (" + adapter {adapter}", ("adapter",))),
    capabilities=Capabilities(
        tokens="the model's tokenizer", in_flight="batch", judge=False,
        model_dirs=(("model", "base"), ("adapter", "adapter")), fingerprint=("dtype", "device"),
        requires=(("torch", ""), ("transformers", ""), ("peft", "adapter")), versions=("torch", "transformers", "peft"),
        labels_from="base",
    ),
)

_NS_PER_MS = 1e6
_UNBOUNDED = 1_000_000
"""A tokenizer's `model_max_length` at or past this is transformers' 'no limit set' placeholder."""


class HFClassifierBackend(HFBackend):
    """Classifies each request's last user message; the reply is the predicted label's name."""

    auto_model = "AutoModelForSequenceClassification"

    def load(self) -> None:
        self._start_torch()
        self.tokenizer = self._load_tokenizer()
        self.tokenizer.padding_side = "right"  # position ids count from the first token: pad after the text
        if self.tokenizer.pad_token_id is None:  # every batch would fail to pad: no reply would get a label
            raise TargetError(f"classifier {self.target.base}: its tokenizer has neither a pad token nor an eos token "
                              "to pad a batch with (set pad_token in tokenizer_config.json)")
        self.model = self._load_model()
        if self.model.config.pad_token_id is None:  # a batch needs it to find each row's last token
            self.model.config.pad_token_id = self.tokenizer.pad_token_id
        self.labels = self._labels()
        self.max_length = self._max_length()
        self.sync = self._device_sync()

    def _from_pretrained(self, auto: Any) -> Model:  # auto: a transformers Auto class
        try:
            model, info = auto.from_pretrained(self.target.base, dtype=getattr(self.torch, self.target.dtype),
                                               output_loading_info=True)
        except RuntimeError as exc:  # weights that do not fit the config (a head of another num_labels)
            raise TargetError(f"cannot load classifier {self.target.base}: its weights do not fit its config.json "
                              f"(num_labels?): {_first_line(exc)}") from None
        missing = list(info.get("missing_keys") or ())
        if missing and self.target.adapter is None:  # transformers fills them at random: its labels would be chance
            raise TargetError(f"classifier {self.target.base} has no trained weights for {missing[0]} (a model "
                              "without a classification head?)")
        self.untrained = missing  # the adapter must bring each of them (checked once it is applied)
        return model

    def _check_adapter_applied(self, model: Model) -> None:
        super()._check_adapter_applied(model)
        # peft keeps a trained copy of each module it saved whole (`modules_to_save`); a weight the base lacks and
        # no such copy brings is still transformers' random fill
        saved = [name for name, _ in model.named_parameters() if ".modules_to_save." in name]
        for key in self.untrained:
            module, _, leaf = key.rpartition(".")
            if not any(f"{module}.modules_to_save." in name and name.endswith(f".{leaf}") for name in saved):
                raise TargetError(f"adapter {self.target.adapter} brings no trained weights for {key}, which "
                                  f"classifier {self.target.base} lacks (an adapter saved without "
                                  "modules_to_save for the classification head?)")

    def _labels(self) -> list[str]:
        id2label = self.model.config.id2label or {}
        labels = [id2label.get(i, id2label.get(str(i))) for i in range(self.model.config.num_labels)]
        if any(label is None for label in labels):
            raise TargetError(f"classifier {self.target.base}: config.json id2label does not name all "
                              f"{self.model.config.num_labels} labels")
        return [str(label) for label in labels]

    def _max_length(self) -> int:
        limits = [n for n in (self.tokenizer.model_max_length, getattr(self.model.config, "max_position_embeddings", None))
                  if isinstance(n, int) and 0 < n < _UNBOUNDED]
        if not limits:
            raise TargetError(f"classifier {self.target.base}: neither its tokenizer (model_max_length) nor its config "
                              "(max_position_embeddings) says how many tokens it reads")
        return min(limits)

    def generate(self, requests: list[Request], *, max_new_tokens: int) -> list[Generation]:
        try:
            return self._classify(requests)
        except (RuntimeError, ValueError, IndexError) as exc:  # one bad batch must not end the run
            return [Generation(None, error=ErrorKind.GENERATION_ERROR, error_message=_first_line(exc)) for _ in requests]

    def _classify(self, requests: list[Request]) -> list[Generation]:
        texts = [_last_user_text(r) for r in requests]
        # a tokenizer may add a start token to every text: an empty one would be labelled on that token alone
        said = [len(ids) for ids in self.tokenizer(texts, add_special_tokens=False)["input_ids"]]
        whole = [n + self.tokenizer.num_special_tokens_to_add() for n in said]  # what the model is given
        readable = [i for i, n in enumerate(said) if n > 0]
        out = [Generation(None, error=ErrorKind.GENERATION_ERROR, error_message="nothing to classify: the text has "
                          "no tokens") for _ in requests]
        for start in range(0, len(readable), self.batch_size):  # a grader's caller may send more than a batch
            part = readable[start:start + self.batch_size]
            for i, gen in zip(part, self._run([texts[i] for i in part], [whole[i] for i in part])):
                out[i] = gen
        return out

    def _run(self, texts: list[str], whole: list[int]) -> list[Generation]:
        torch = self.torch
        batch = self.tokenizer(texts, truncation=True, max_length=self.max_length, padding=True, return_tensors="pt")
        ids, mask = batch["input_ids"].to(self.target.device), batch["attention_mask"].to(self.target.device)
        clock = self.sync or (lambda: None)
        with torch.inference_mode():
            clock()
            start = time.perf_counter_ns()
            logits = self.model(input_ids=ids, attention_mask=mask).logits.float()
            clock()
            e2e = (time.perf_counter_ns() - start) / _NS_PER_MS
        picked = logits.argmax(dim=-1).tolist()
        read = mask.sum(dim=-1).tolist()
        return [Generation(self.labels[k], tokens=Tokens(input=n, output=0, source="tokenizer"),
                           timing=Timing(e2e_ms=e2e, batch_size=len(texts)), truncated_to=n if full > n else None)
                for k, n, full in zip(picked, read, whole)]


def _last_user_text(request: Request) -> str:
    """What is classified: the last user message of a chat request, or the prompt."""
    if request.messages is not None:
        said = [m.get("content") for m in request.messages if m.get("role") == "user"]
        return str(said[-1]) if said and said[-1] is not None else ""
    return request.prompt or ""


register(BackendEntry(SPEC, "releasegate.backends.hf_classifier:HFClassifierBackend"))
