#!/usr/bin/env python
"""Build the demo's DRAFT model for speculative (assisted) decoding: models/demo/draft/.

A ~0.17M-parameter Llama (hidden 64, 2 layers, 2 heads, tied embeddings) that shares the base's
tokenizer (the tokenizer files are copied byte for byte, so the directory loads on its own).
It is distilled from the TARGET = base + good adapter, merged in float32:

  1. fresh synthetic tickets of both tasks are generated with the ticket generator of
     build_demo_models.py (own seeds; deduplicated against the demo suites);
  2. the target answers every ticket greedily (batched, left-padded, as shipped);
  3. the draft is trained from scratch on prompt + the target's answer TOKEN IDS (sequence-level
     distillation: the draft learns to say what the target says, token by token), loss on the
     answer and its <|end|>, plus a small next-token loss on the prompt text.

This script only reads models/demo/base, models/demo/adapters/good and suites/demo, and only
writes models/demo/draft/; it runs after build_demo_models.py (make demo-models runs both) and
uses its own seeds, so the files of the main build are unchanged. Deterministic (fixed seeds and
step counts, one thread, torch.use_deterministic_algorithms(True)); about a minute on one CPU
thread.

Run with:  .venv/bin/python scripts/build_demo_draft.py      (or: make demo-models)
Check with: .venv/bin/python scripts/check_demo_models.py    (assisted generation == plain greedy)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import time  # noqa: E402

# build_demo_models (imported before torch) sets the environment (offline, one thread),
# torch.set_num_threads(1) and torch.use_deterministic_algorithms(True); its main() is not run.
import build_demo_models as bdm  # noqa: E402
import torch  # noqa: E402
from peft import PeftModel  # noqa: E402
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast  # noqa: E402

# Own seeds: none of them is used by build_demo_models.py.
SEED_DRAFT_ORIGINAL = 3456
SEED_DRAFT_SHIFTED = 4567
SEED_DRAFT_INIT = 3
SEED_DRAFT_ORDER = 103

DRAFT_CFG = {
    "hidden_size": 64,
    "intermediate_size": 176,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "n_tickets_original": 2000,
    "n_tickets_shifted": 2000,
    "steps": 600,
    "batch": 32,
    "lr": 3e-3,
    "warmup": 50,
    "text_weight": 0.1,
    "teacher_batch": 64,
    "max_new_tokens": 32,
}

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")


def suite_texts(root: Path) -> set[str]:
    out = set()
    for name in ("tickets.jsonl", "tickets_shifted.jsonl"):
        for line in (root / "suites/demo" / name).read_text(encoding="utf-8").splitlines():
            if line:
                msgs = json.loads(line)["messages"]
                out.update(m["content"] for m in msgs if m["role"] == "user")
    return out


def load_target(root: Path):
    """base + good adapter merged in float32: the model the draft has to imitate."""
    model = LlamaForCausalLM.from_pretrained(str(root / "models/demo/base"), dtype=torch.float32)
    model = PeftModel.from_pretrained(model, str(root / "models/demo/adapters/good"))
    model = model.merge_and_unload()
    model.eval()
    return model


@torch.no_grad()
def teacher_encode(target, tokenizer, samples, batch_size, max_new_tokens):
    """(prompt ids + the target's greedy answer ids up to and including <|end|>, prompt_len)."""
    tokenizer.padding_side = "left"
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    out = []
    for i in range(0, len(samples), batch_size):
        chunk = samples[i: i + batch_size]
        prompts = [tokenizer.apply_chat_template(bdm.messages_for(s["text"]), tokenize=False,
                                                 add_generation_prompt=True) for s in chunk]
        enc = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        gen = target.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False)
        width = enc["input_ids"].shape[1]
        for p_row, m_row, g_row in zip(enc["input_ids"], enc["attention_mask"], gen[:, width:]):
            p_ids = p_row[m_row.bool()].tolist()
            a_ids = g_row.tolist()
            if eos in a_ids:
                a_ids = a_ids[: a_ids.index(eos) + 1]
            else:
                a_ids = [t for t in a_ids if t != pad]
            out.append((p_ids + a_ids, len(p_ids)))
    return out


@torch.no_grad()
def agreement(draft, encoded, batch_size=64):
    """Teacher-forced agreement: share of target answer tokens that are the draft's argmax, and
    the share of answers the draft gets entirely right (its greedy answer equals the target's)."""
    tok_ok = tok_n = seq_ok = 0
    for i in range(0, len(encoded), batch_size):
        idx = list(range(i, min(i + batch_size, len(encoded))))
        ids, att, lab = bdm.make_batch(encoded, idx, 0)
        pred = draft(input_ids=ids, attention_mask=att).logits[:, :-1].argmax(-1)
        tgt = lab[:, 1:]
        mask = tgt != -100
        hit = (pred == tgt) & mask
        tok_ok += hit.sum().item()
        tok_n += mask.sum().item()
        seq_ok += ((hit | ~mask).all(dim=1)).sum().item()
    return tok_ok / tok_n, seq_ok / len(encoded)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(bdm.ROOT),
                    help="repository root holding models/demo (read) and receiving models/demo/draft")
    args = ap.parse_args(argv)
    root = Path(args.out).resolve()
    t0 = time.time()
    base_dir = root / "models/demo/base"
    draft_dir = root / "models/demo/draft"

    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(base_dir))
    pad_id, bos_id = tokenizer.pad_token_id, tokenizer.bos_token_id
    end_id = tokenizer.eos_token_id

    # ---- distillation data: fresh tickets of both tasks, answered by the target ---------------
    exclude = suite_texts(root)
    tickets = bdm.gen_samples(SEED_DRAFT_ORIGINAL, bdm.ORIGINAL_INTENTS,
                              DRAFT_CFG["n_tickets_original"], exclude=exclude)
    tickets += bdm.gen_samples(SEED_DRAFT_SHIFTED, bdm.SHIFTED_INTENTS,
                               DRAFT_CFG["n_tickets_shifted"], exclude=exclude)
    target = load_target(root)
    t_teacher = time.time()
    encoded = teacher_encode(target, tokenizer, tickets, DRAFT_CFG["teacher_batch"],
                             DRAFT_CFG["max_new_tokens"])
    del target
    label_ok = sum(
        tokenizer.decode(ids[p:], skip_special_tokens=True) == bdm.answer_of(s["intent"], s["priority"])
        for (ids, p), s in zip(encoded, tickets)
    )
    print(f"teacher: {len(encoded)} tickets answered in {time.time() - t_teacher:.1f}s "
          f"(target agrees with the generator's label on {label_ok}/{len(encoded)})", flush=True)
    # hold out the last 200 of each task for the agreement figure printed at the end
    n_o, n_s = DRAFT_CFG["n_tickets_original"], DRAFT_CFG["n_tickets_shifted"]
    held = encoded[n_o - 200: n_o] + encoded[n_o + n_s - 200:]
    train = encoded[: n_o - 200] + encoded[n_o: n_o + n_s - 200]

    # ---- draft model ------------------------------------------------------------------------
    base_cfg = LlamaConfig.from_pretrained(str(base_dir))
    torch.manual_seed(SEED_DRAFT_INIT)
    config = LlamaConfig(
        vocab_size=base_cfg.vocab_size,
        hidden_size=DRAFT_CFG["hidden_size"],
        intermediate_size=DRAFT_CFG["intermediate_size"],
        num_hidden_layers=DRAFT_CFG["num_hidden_layers"],
        num_attention_heads=DRAFT_CFG["num_attention_heads"],
        num_key_value_heads=DRAFT_CFG["num_attention_heads"],
        max_position_embeddings=base_cfg.max_position_embeddings,
        rms_norm_eps=base_cfg.rms_norm_eps,
        tie_word_embeddings=True,
        bos_token_id=bos_id,
        eos_token_id=end_id,
        pad_token_id=pad_id,
        attention_dropout=0.0,
    )
    assert config.vocab_size == len(tokenizer) == 1024
    draft = LlamaForCausalLM(config)
    draft.generation_config = GenerationConfig(
        bos_token_id=bos_id, eos_token_id=end_id, pad_token_id=pad_id, do_sample=False,
        max_new_tokens=32,
    )
    n_params = sum(p.numel() for p in draft.parameters())
    print(f"draft model: {n_params:,} parameters", flush=True)
    t_train = time.time()
    loss = bdm.train_loop(
        draft, list(draft.parameters()), train, pad_id, steps=DRAFT_CFG["steps"],
        batch_size=DRAFT_CFG["batch"], lr=DRAFT_CFG["lr"], warmup=DRAFT_CFG["warmup"],
        seed=SEED_DRAFT_ORDER, weight_decay=0.01, text_weight=DRAFT_CFG["text_weight"],
        label="draft", log_every=100,
    )
    print(f"draft trained in {time.time() - t_train:.1f}s", flush=True)

    if draft_dir.exists():
        shutil.rmtree(draft_dir)
    draft.to(torch.float16).save_pretrained(str(draft_dir))
    for name in TOKENIZER_FILES:
        shutil.copyfile(base_dir / name, draft_dir / name)
    for f in draft_dir.iterdir():
        f.chmod(0o644)  # safetensors writes 0600

    # ---- agreement of the shipped (fp16 -> float32) draft with the target, held-out tickets ---
    shipped = LlamaForCausalLM.from_pretrained(str(draft_dir), dtype=torch.float32).eval()
    tok_agree, seq_agree = agreement(shipped, held)
    summary = {
        "draft_params": n_params,
        "final_loss_ema": loss,
        "heldout_token_agreement": round(tok_agree, 4),
        "heldout_answer_agreement": round(seq_agree, 4),
        "elapsed_s": round(time.time() - t0, 1),
    }
    print("SUMMARY " + json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
