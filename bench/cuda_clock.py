"""The HF backend's step clock on CUDA, with and without device synchronisation, against a synchronised reference.

On CUDA the host only queues kernels: a clock read right after the forward call stamps the queueing, not the
finish, so TTFT misses the prefill's GPU time and the first decode step absorbs it. The backend therefore
synchronises before every read on CUDA. This bench measures what that is worth on a random ~1B-parameter Llama
(no download: random weights in bf16 on the GPU), 2048-token prompts at batch 1 and 8, 32 new tokens.

Three clocks on the same model and prompts, interleaved over several rounds (median reported):
- unsynced: the backend's own generate path (`HFBackend._generate`, `_StepClock`) with `sync` set to None;
- synced: the same path with the backend's CUDA sync (`HFBackend._device_sync`), as it runs on `device: cuda`;
- reference: a manual prefill forward and greedy decode loop with torch.cuda.synchronize after every step.
Printed: TTFT and TPOT (ms) of each, and the ratios unsynced/reference and synced/reference.
The reference loop carries less host overhead per step than `generate`, so synced TPOT sits a little above it.

Without a CUDA device it prints one line and exits 0. `--smoke` runs a tiny model on CPU, to check the code.
"""

from __future__ import annotations

import statistics
import sys
import time
from functools import partial
from types import SimpleNamespace

PROMPT_TOKENS = 2048
NEW_TOKENS = 32
BATCHES = (1, 8)
ROUNDS = 5


class _FixedTokenizer:
    """Just what `HFBackend._generate` asks of a tokenizer: the prompts are token ids already."""

    pad_token_id = 0

    def __init__(self, prompts: dict[str, list[int]]) -> None:
        self.prompts = prompts

    def __call__(self, text):
        return {"input_ids": self.prompts[text]}

    def decode(self, ids, skip_special_tokens=True):
        return ""


def _model(torch, device: str, smoke: bool):
    from transformers import LlamaConfig, LlamaForCausalLM

    size = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, vocab_size=512)
    if not smoke:  # ~1.1B parameters
        size = dict(hidden_size=2048, intermediate_size=5504, num_hidden_layers=16, num_attention_heads=16, vocab_size=32000)
    config = LlamaConfig(**size, num_key_value_heads=size["num_attention_heads"], max_position_embeddings=4096)
    dtype = torch.float32 if smoke else torch.bfloat16
    torch.manual_seed(0)
    default = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):  # random init directly on the device
            model = LlamaForCausalLM(config).eval()
    finally:
        torch.set_default_dtype(default)
    gc = model.generation_config
    gc.eos_token_id, gc.min_new_tokens = None, NEW_TOKENS  # exactly NEW_TOKENS per row, whatever the weights say
    return model


def _backend(torch, model, device: str, batch: int, prompt_len: int, vocab: int):
    from releasegate.backends import Request
    from releasegate.backends.hf import HFBackend

    gen = torch.Generator().manual_seed(batch)
    prompts = {f"p{i}": torch.randint(1, vocab, (prompt_len,), generator=gen).tolist() for i in range(batch)}
    backend = HFBackend(SimpleNamespace(device=device, batch_size=batch, draft=None))
    backend.torch, backend.model, backend.draft = torch, model, None
    backend.tokenizer = _FixedTokenizer(prompts)
    backend.eos_ids = {vocab - 1}  # never emitted before NEW_TOKENS: min_new_tokens masks it
    requests = [Request(name, None, name) for name in prompts]
    return backend, requests, prompts


def _backend_clock(backend, requests, sync):
    backend.sync = sync
    gens = backend.generate(requests, max_new_tokens=NEW_TOKENS)
    g = gens[0]
    if g.error is not None or g.tokens.output != NEW_TOKENS:
        raise SystemExit(f"generate failed: {g.error} {g.error_message} ({g.tokens and g.tokens.output} tokens)")
    return g.timing.ttft_ms, g.timing.tpot_ms


def _reference(torch, model, prompts, device: str, sync):
    """Prefill, then greedy decode with the KV cache, synchronising before every clock read."""
    ids = torch.tensor(list(prompts.values()), device=device)
    mask = torch.ones_like(ids)
    stamps = []
    with torch.inference_mode():
        sync()
        start = time.perf_counter_ns()
        out = model(input_ids=ids, attention_mask=mask, use_cache=True, logits_to_keep=1)
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        sync()
        stamps.append(time.perf_counter_ns())
        past = out.past_key_values
        for _ in range(NEW_TOKENS - 1):
            mask = torch.cat([mask, torch.ones_like(nxt)], dim=1)
            out = model(input_ids=nxt, attention_mask=mask, past_key_values=past, use_cache=True)
            nxt = out.logits[:, -1].argmax(-1, keepdim=True)
            past = out.past_key_values
            sync()
            stamps.append(time.perf_counter_ns())
    return (stamps[0] - start) / 1e6, (stamps[-1] - stamps[0]) / 1e6 / (len(stamps) - 1)


def main(argv: list[str]) -> None:
    import torch

    smoke = "--smoke" in argv
    if not smoke and not torch.cuda.is_available():
        print("bench/cuda_clock.py needs a CUDA GPU: skipped")
        return
    device = "cpu" if smoke else "cuda"
    prompt_len, rounds = (64, 2) if smoke else (PROMPT_TOKENS, ROUNDS)
    t0 = time.perf_counter()
    model = _model(torch, device, smoke)
    vocab = model.config.vocab_size
    n_params = sum(p.numel() for p in model.parameters()) / 1e9
    print(f"random Llama {n_params:.2f}B params, {next(model.parameters()).dtype}, {device}"
          f"{' ' + torch.cuda.get_device_name() if device == 'cuda' else ''}; {prompt_len}-token prompts, "
          f"{NEW_TOKENS} new tokens, median of {rounds} rounds (model built in {time.perf_counter() - t0:.1f}s)")
    print(f"{'batch':>5} {'clock':10} {'TTFT ms':>9} {'TPOT ms':>9} {'TTFT x ref':>11} {'TPOT x ref':>11}")
    for batch in BATCHES:
        backend, requests, prompts = _backend(torch, model, device, batch, prompt_len, vocab)
        synced = backend._device_sync() or (lambda: None)  # smoke (CPU): nothing to wait for
        clocks = {
            "unsynced": partial(_backend_clock, backend, requests, None),
            "synced": partial(_backend_clock, backend, requests, synced),
            "reference": partial(_reference, torch, model, prompts, device, synced),
        }
        for run in clocks.values():  # warm-up: kernels, cuBLAS handles, allocator
            run()
        results = {name: [] for name in clocks}
        for _ in range(rounds):
            for name, run in clocks.items():
                results[name].append(run())
        med = {name: (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs)) for name, rs in results.items()}
        ref_ttft, ref_tpot = med["reference"]
        for name, (ttft, tpot) in med.items():
            print(f"{batch:5d} {name:10} {ttft:9.2f} {tpot:9.3f} {ttft / ref_ttft:11.2f} {tpot / ref_tpot:11.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
