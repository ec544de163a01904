#!/usr/bin/env python
"""Build the embedded releasegate demo: tokenizer, tiny base LM, two LoRA adapters, demo suites.

Everything is generated locally and deterministically (fixed seeds, fixed step counts,
single CPU thread, deterministic torch algorithms). No network access and no model hub
downloads are needed.

Outputs (relative to the repository root):
    models/demo/base/                 tiny Llama causal LM (fp16 safetensors) + tokenizer
    models/demo/adapters/good/        LoRA adapter: learns the shifted task, keeps the original
    models/demo/adapters/regressed/   LoRA adapter: learns the shifted task, forgets the original
    suites/demo/tickets.jsonl         60 held-out cases, original task
    suites/demo/tickets_shifted.jsonl 40 held-out cases, shifted task

Training: the base model is trained from scratch on the ORIGINAL task in chat format, with the
loss on the assistant answer (+ <|end|>) plus a 0.1-weighted next-token loss on the prompt text
(a stand-in for pre-training: it makes every token of the ticket text a trained output, which the
adapters need to spell the new labels, and it speeds up convergence). The adapters are trained
on the fp16 base as shipped, loss on the answer only. Takes about 3-4 minutes on one CPU thread.

Run with:  .venv/bin/python scripts/build_demo_models.py      (or: make demo-models)
Check with: .venv/bin/python scripts/check_demo_models.py
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
import transformers  # noqa: E402
from peft import LoraConfig, PeftModel, get_peft_model  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast  # noqa: E402

torch.set_num_threads(1)
torch.set_num_interop_threads(1)
torch.use_deterministic_algorithms(True)
transformers.logging.set_verbosity_error()
warnings.filterwarnings("ignore", category=FutureWarning)  # peft: is_gradient_checkpointing

ROOT = Path(__file__).resolve().parent.parent
SYSTEM_PROMPT = "Classify the support ticket. Reply with JSON only."
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
SPECIAL_TOKENS = ["<pad>", "<s>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>"]

ORIGINAL_INTENTS = ["billing", "shipping", "account", "technical", "refund"]
SHIFTED_INTENTS = ["cancel_subscription", "security"]

# Seeds. Training data and held-out suites use different generator seeds; suites are also
# deduplicated against every training text.
SEED_TOKENIZER_CORPUS = 11
SEED_TRAIN_ORIGINAL = 1234
SEED_TRAIN_SHIFTED = 2345
SEED_SUITE_ORIGINAL = 9001
SEED_SUITE_SHIFTED = 9002
SEED_MODEL_INIT = 0
SEED_GOOD = 1
SEED_REGRESSED = 2

# ---------------------------------------------------------------------------------------------
# Synthetic support-ticket generator
# ---------------------------------------------------------------------------------------------

FIRST_NAMES = [
    "Maria", "James", "Aisha", "Chen", "Lukas", "Priya", "Olga", "Diego", "Fatima", "Noah",
    "Emma", "Kenji", "Sofia", "Omar", "Hannah", "Ravi", "Elena", "Tom", "Grace", "Mateo",
    "Lena", "Yusuf", "Chloe", "Ivan", "Nadia", "Samuel", "Mei", "Pedro", "Zara", "Felix",
]
LAST_NAMES = [
    "Lopez", "Smith", "Khan", "Wang", "Muller", "Patel", "Ivanova", "Garcia", "Ali", "Brown",
    "Jones", "Tanaka", "Rossi", "Hassan", "Weber", "Sharma", "Novak", "Miller", "Kim", "Silva",
    "Fischer", "Demir", "Martin", "Petrov", "Haddad", "Cohen", "Nguyen", "Costa", "Okafor", "Berg",
]
PRODUCTS = [
    "SmartBlend 3000", "AquaPure filter", "ZenDesk lamp", "TurboCharge cable", "CloudSync app",
    "PixelView monitor", "EchoBuds headphones", "FitTrack watch", "HomeHub router", "NovaPhone X",
    "BrewMaster kettle", "SnapCam mini", "GlidePro mouse", "SoundBar 500", "PowerCell battery",
    "ThermoMug", "StreamBox TV", "KeyFlow keyboard", "AirLite purifier", "RoboVac S2",
]
PLANS = ["Premium plan", "Pro membership", "Family plan", "monthly subscription",
         "annual membership", "Basic plan", "Plus subscription", "Gold membership"]
DEVICES = ["Windows laptop", "Android phone", "iPhone", "tablet", "Linux PC", "Mac"]
PLACES = ["Berlin", "Lagos", "Toronto", "Mumbai", "Sao Paulo", "Sydney", "Seoul", "Madrid"]
ERROR_CODES = ["E-101", "E-204", "E-319", "E-422", "E-500", "E-618", "E-733", "E-907"]
ERROR_NAMES = ["ERR_TIMEOUT", "SYNC_FAILED", "ERR_NO_SIGNAL", "BOOT_LOOP", "LOW_BATTERY",
               "ERR_AUTH_FAILED", "UPDATE_ERROR", "DISK_FULL"]


def _order(rng: random.Random) -> str:
    n = rng.randint(10000, 99999)
    return rng.choice([f"#{n}", f"ORD-{n}", f"order number {n}", f"#{n}"])


def _amount(rng: random.Random) -> str:
    return f"${rng.randint(5, 499)}.{rng.randint(0, 99):02d}"


# Intent phrases. Each template is a function of (rng, slots) -> sentence.
INTENT_TEMPLATES: dict[str, list[str]] = {
    "billing": [
        "I was charged twice for {order}.",
        "My invoice for {order} shows the wrong amount of {amount}.",
        "There is an unexpected charge of {amount} on my credit card.",
        "The payment for my {product} failed but the money left my bank account.",
        "Why was my card billed {amount} this month?",
        "I need to update the billing address on my invoices.",
        "My last invoice has a tax error, the total should not be {amount}.",
        "I see a duplicate payment for {order} on my statement.",
        "The price I was billed for the {product} does not match the checkout price.",
        "Please send me a corrected invoice for {order}.",
        "My statement shows a \"subscription fee\" of {amount} that I do not recognize.",
        "My invoice has a line called \"security deposit\" for {amount}, what is it?",
    ],
    "shipping": [
        "My package with the {product} has not arrived yet.",
        "{order_cap} has been stuck in transit for a week.",
        "The tracking number for {order} is not updating.",
        "The courier delivered my {product} to the wrong address.",
        "When will {order} ship?",
        "The delivery date for my {product} keeps moving.",
        "My parcel was marked as delivered but I never received it.",
        "Can I change the delivery address for {order}?",
        "The box for {order} is lost somewhere in {place}.",
        "Only half of {order} was delivered, the {product} is missing from the box.",
        "The tracking page for {order} says \"cancelled by carrier\" but I still want it shipped.",
    ],
    "account": [
        "I can't log in to my account with my usual password.",
        "Please help me reset my password, the reset link does not work.",
        "I want to change the email address on my account.",
        "My username is wrong and I would like to update my profile.",
        "I am locked out of my account after too many attempts.",
        "How do I merge my two accounts into one?",
        "The verification email for my new account never arrives.",
        "I need to update the phone number linked to my profile.",
        "My account settings page shows someone else's name.",
        "I forgot which email I used to sign up for my account.",
        "How do I change the \"security question\" on my account?",
        "My username {user} is shown as \"inactive\" on my profile.",
        "I want to rename my account from {user} to something new.",
    ],
    "technical": [
        "The {product} crashes every time I open it.",
        "I get error code {code} when I start the {product}.",
        "My {product} will not turn on after the firmware update.",
        "The screen of my {product} freezes after a few minutes.",
        "The {product} does not connect to my {device}.",
        "The app keeps showing {code} on my {device}.",
        "My {product} stopped syncing with my {device}.",
        "The battery of my {product} drains in an hour.",
        "The firmware update for the {product} failed with {code}.",
        "The {product} makes a loud noise and then shuts down.",
        "The {product} shows the error \"{err}\" on startup.",
        "My {device} says \"{err}\" when I pair the {product}.",
    ],
    "refund": [
        "I want a refund for {order}.",
        "Please give me my money back for the {product}.",
        "The {product} arrived broken and I want a full refund.",
        "How do I get a refund for the {product} I returned?",
        "I returned {order} two weeks ago and still have no refund.",
        "I would like to return the {product} and be refunded {amount}.",
        "The refund for {order} was only partial, I am owed {amount}.",
        "Please refund the {product}, it is not what I ordered.",
        "I sent the {product} back, when will I see the refund?",
        "I am requesting a refund of {amount} for {order}.",
        "I clicked \"cancel order\" for {order}, please refund the {amount}.",
        "The app says \"subscription\" items cannot be returned, but I want a refund for the {product}.",
    ],
    "cancel_subscription": [
        "Please cancel my {plan}.",
        "I want to stop my membership before the next renewal.",
        "How do I end my {plan}? I do not want to renew.",
        "Cancel my plan effective today, I no longer need it.",
        "I would like to terminate my {plan} and stop auto-renewal.",
        "Please stop my membership, I am switching to another service.",
        "I want to cancel my subscription to the {plan}.",
        "Do not renew my {plan} next month, please cancel it.",
        "Turn off auto-renewal and close my {plan}.",
        "I no longer want the {plan}, please cancel my membership.",
    ],
    "security": [
        "I got an alert about a suspicious login from {place}.",
        "Someone accessed my account without my permission.",
        "There was a sign-in from an unknown {device} that was not me.",
        "I received a password reset email that I did not request.",
        "I think my account was hacked, my orders list changed.",
        "A stranger logged in to my account from {place}.",
        "I see a login from {place} that I do not recognize.",
        "Someone changed my password and I suspect fraud.",
        "An unknown device is signed in to my account, is it hacked?",
        "I got a suspicious two-factor code I never asked for.",
    ],
}

GREETINGS = ["Hi,", "Hello,", "Hey there,", "Good morning,", "Dear support,", "Hi team,", "", "",
             "Hello support team,"]
INTROS = ["this is {name}.", "my name is {name}.", "{name} here.", "", "", ""]
CONTEXT_SENTENCES = [
    "I have been a customer for {years} years.",
    "I bought the {product} last month.",
    "I am writing from {place}.",
    "My customer id is {cid}.",
    "I already checked the help center.",
    "This is my second message about this.",
    "",
    "",
    "",
]
HIGH_CUES = [
    "This is urgent.", "Please fix this asap.", "I need this solved immediately.",
    "URGENT, please respond right away.", "Please help ASAP.", "Urgent: I need an answer today.",
    "Please handle this immediately.", "This is critical and urgent for me.",
]
LOW_CUES = [
    "No rush.", "Reply when you get a chance.", "No rush at all, thanks.",
    "Whenever you get a chance is fine.", "There is no hurry on this.",
    "Take your time, no rush.", "No hurry, just let me know when you get a chance.",
]
SIGNOFFS = ["Thanks, {first}", "Best regards, {name}", "Thank you.", "Cheers, {first}", "", "",
            "Kind regards, {name}", "Thanks!"]

HIGH_WORDS = ("urgent", "asap", "immediately", "right away", "critical")
LOW_WORDS = ("no rush", "get a chance", "no hurry", "take your time")


def priority_of(text: str) -> str:
    """The priority rule: cue words decide. High cues win over low cues; none -> medium."""
    t = text.lower()
    if any(w in t for w in HIGH_WORDS):
        return "high"
    if any(w in t for w in LOW_WORDS):
        return "low"
    return "medium"


def make_ticket(rng: random.Random, intent: str, priority: str) -> str:
    first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
    name = f"{first} {last}"
    slots = {
        "order": _order(rng),
        "amount": _amount(rng),
        "product": rng.choice(PRODUCTS),
        "plan": rng.choice(PLANS),
        "device": rng.choice(DEVICES),
        "place": rng.choice(PLACES),
        "code": rng.choice(ERROR_CODES),
        "name": name,
        "first": first,
        "years": str(rng.randint(2, 12)),
        "cid": str(rng.randint(100000, 999999)),
        "err": rng.choice(ERROR_NAMES),
        "user": f"{first.lower()}_{last.lower()}{rng.choice(['', '', str(rng.randint(1, 99))])}",
    }
    o = slots["order"]
    slots["order_cap"] = ("Order " + o) if o.startswith("#") or o.startswith("ORD") else o.capitalize()

    parts: list[str] = []
    greet = rng.choice(GREETINGS)
    intro = rng.choice(INTROS).format(**slots)
    if greet and intro:
        parts.append(f"{greet} {intro}")
    elif greet:
        parts.append(greet)
    elif intro:
        parts.append(intro[0].upper() + intro[1:])

    body = rng.choice(INTENT_TEMPLATES[intent]).format(**slots)
    ctx = rng.choice(CONTEXT_SENTENCES).format(**slots)
    cue = ""
    if priority == "high":
        cue = rng.choice(HIGH_CUES)
    elif priority == "low":
        cue = rng.choice(LOW_CUES)

    middle = [body]
    if ctx:
        middle.insert(rng.randint(0, 1), ctx)
    if cue:
        # urgent cues often lead the ticket, polite low cues usually trail it
        if priority == "high" and rng.random() < 0.35:
            middle.insert(0, cue)
        else:
            middle.append(cue)
    parts.extend(middle)
    sign = rng.choice(SIGNOFFS).format(**slots)
    if sign:
        parts.append(sign)
    text = " ".join(p for p in parts if p)
    assert priority_of(text) == priority, (text, priority)
    return text


def answer_of(intent: str, priority: str) -> str:
    return json.dumps({"intent": intent, "priority": priority})


def gen_samples(seed: int, intents: list[str], n: int, exclude: set[str] | None = None,
                balanced: bool = False) -> list[dict]:
    """n unique samples. balanced=True gives equal counts per intent (and cycles priorities)."""
    rng = random.Random(seed)
    exclude = exclude or set()
    seen: set[str] = set()
    out: list[dict] = []
    priorities = ["low", "medium", "high"]
    i = 0
    while len(out) < n:
        if balanced:
            intent = intents[len(out) % len(intents)]
            priority = priorities[(len(out) // len(intents)) % 3]
        else:
            intent = rng.choice(intents)
            priority = rng.choices(priorities, weights=[1, 1, 1])[0]
        text = make_ticket(rng, intent, priority)
        i += 1
        if text in seen or text in exclude:
            continue
        seen.add(text)
        out.append({"text": text, "intent": intent, "priority": priority})
    if balanced:
        rng.shuffle(out)
    return out


def messages_for(text: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": text}]


# ---------------------------------------------------------------------------------------------
# Tokenizer
# ---------------------------------------------------------------------------------------------


def build_tokenizer(corpus: list[str], vocab_size: int) -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer=trainer)
    hf_tok = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="<|end|>",
        pad_token="<pad>",
        extra_special_tokens=["<|system|>", "<|user|>", "<|assistant|>"],
        model_max_length=256,
        padding_side="left",
        clean_up_tokenization_spaces=False,
    )
    hf_tok.chat_template = CHAT_TEMPLATE
    return hf_tok


# ---------------------------------------------------------------------------------------------
# Training helpers
# ---------------------------------------------------------------------------------------------


def encode_examples(tokenizer, samples: list[dict]) -> list[tuple[list[int], int]]:
    """Returns (ids, prompt_len) per sample; loss is on ids[prompt_len:] (answer + <|end|>)."""
    out = []
    for s in samples:
        prompt = tokenizer.apply_chat_template(
            messages_for(s["text"]), tokenize=False, add_generation_prompt=True
        )
        full = prompt + answer_of(s["intent"], s["priority"]) + "<|end|>"
        p_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        f_ids = tokenizer(full, add_special_tokens=False)["input_ids"]
        assert f_ids[: len(p_ids)] == p_ids
        out.append((f_ids, len(p_ids)))
    return out


def make_batch(encoded, idx, pad_id):
    seqs = [encoded[i] for i in idx]
    L = max(len(s[0]) for s in seqs)
    ids = torch.full((len(seqs), L), pad_id, dtype=torch.long)
    att = torch.zeros((len(seqs), L), dtype=torch.long)
    lab = torch.full((len(seqs), L), -100, dtype=torch.long)
    for r, (s, p) in enumerate(seqs):
        ids[r, : len(s)] = torch.tensor(s)
        att[r, : len(s)] = 1
        lab[r, p: len(s)] = torch.tensor(s[p:])
    return ids, att, lab


def train_loop(model, params, encoded, pad_id, *, steps, batch_size, lr, warmup, seed,
               weight_decay=0.0, text_weight=0.0, label="train", log_every=100):
    """AdamW, linear warmup + cosine decay to 10%, grad clip 1.0, fixed batch order.

    Loss = mean CE over the answer tokens (+ text_weight * mean CE over the prompt tokens).
    Returns the final exponential moving averages of the loss terms."""
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.98), weight_decay=weight_decay)

    def lr_at(step):
        if step < warmup:
            return lr * (step + 1) / warmup
        prog = (step - warmup) / max(1, steps - warmup)
        return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * prog)))

    model.train()
    n = len(encoded)
    perm = torch.randperm(n, generator=g).tolist()
    pos = 0
    ema = {}
    for step in range(steps):
        if pos + batch_size > n:
            perm = torch.randperm(n, generator=g).tolist()
            pos = 0
        idx = perm[pos: pos + batch_size]
        pos += batch_size
        ids, att, lab = make_batch(encoded, idx, pad_id)
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        logits = model(input_ids=ids, attention_mask=att).logits[:, :-1].float()
        tgt = lab[:, 1:]
        flat = logits.reshape(-1, logits.shape[-1])
        answer_loss = torch.nn.functional.cross_entropy(flat, tgt.reshape(-1), ignore_index=-100)
        loss = answer_loss
        losses = {"answer": answer_loss.item()}
        if text_weight:
            txt = torch.where((tgt == -100) & (att[:, 1:] == 1), ids[:, 1:], -100)
            text_loss = torch.nn.functional.cross_entropy(flat, txt.reshape(-1), ignore_index=-100)
            loss = loss + text_weight * text_loss
            losses["text"] = text_loss.item()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        for k, v in losses.items():
            ema[k] = v if k not in ema else 0.95 * ema[k] + 0.05 * v
        if (step + 1) % log_every == 0 or step == 0:
            shown = " ".join(f"{k} {v:.4f}" for k, v in ema.items())
            print(f"  [{label}] step {step + 1:4d}/{steps} loss (ema) {shown}", flush=True)
    model.eval()
    return {k: round(v, 4) for k, v in ema.items()}


@torch.no_grad()
def quick_accuracy(model, tokenizer, samples, batch_size=64, max_new_tokens=24):
    """Greedy generation accuracy (both fields) and JSON-valid rate."""
    tokenizer.padding_side = "left"
    ok = valid = 0
    for i in range(0, len(samples), batch_size):
        chunk = samples[i: i + batch_size]
        prompts = [tokenizer.apply_chat_template(messages_for(s["text"]), tokenize=False,
                                                 add_generation_prompt=True) for s in chunk]
        enc = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        gen = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False)
        for s, row in zip(chunk, gen[:, enc["input_ids"].shape[1]:]):
            txt = tokenizer.decode(row, skip_special_tokens=True)
            try:
                obj = json.loads(txt)
            except json.JSONDecodeError:
                continue
            valid += 1
            if isinstance(obj, dict) and obj.get("intent") == s["intent"] and \
                    obj.get("priority") == s["priority"]:
                ok += 1
    return ok / len(samples), valid / len(samples)


def save_fp16_adapter(peft_model, out_dir: Path) -> None:
    if out_dir.exists():
        shutil.rmtree(out_dir)
    peft_model.save_pretrained(str(out_dir))
    st = out_dir / "adapter_model.safetensors"
    tensors = load_file(str(st))
    tensors = {k: v.to(torch.float16).contiguous() for k, v in sorted(tensors.items())}
    save_file(tensors, str(st), metadata={"format": "pt"})
    cfg_path = out_dir / "adapter_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["base_model_name_or_path"] = "../../base"
    cfg["target_modules"] = sorted(cfg["target_modules"])  # peft stores a set: fix the order
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    # peft writes a model card that embeds the absolute base path; models/demo/README.md
    # documents the adapters instead.
    card = out_dir / "README.md"
    if card.exists():
        card.unlink()


def write_suite(path: Path, samples: list[dict], prefix: str, task: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for i, s in enumerate(samples, start=1):
            case = {
                "id": f"{prefix}-{i:03d}",
                "messages": messages_for(s["text"]),
                "expected": {"intent": s["intent"], "priority": s["priority"]},
                # risk mirrors the expected priority so suites can be sliced by it
                "tags": {"domain": "customer_support", "risk": s["priority"], "task": task},
            }
            f.write(json.dumps(case, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------

CFG = {
    "vocab_size": 1024,
    "n_train_original": 6000,
    "n_train_shifted": 3000,
    "base_steps": 450,
    "base_batch": 32,
    "base_lr": 3e-3,
    "base_text_weight": 0.1,
    "good_steps": 150,
    "good_batch": 32,
    "good_lr": 3e-3,
    "good_replay_fraction": 0.5,
    "regressed_steps": 200,
    "regressed_batch": 32,
    "regressed_lr": 6e-3,
    "lora_r": 8,
    "lora_alpha": 16,
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT), help="repository root to write into")
    ap.add_argument("--eval", action="store_true", help="print quick greedy accuracies at the end")
    args = ap.parse_args(argv)
    root = Path(args.out).resolve()
    t0 = time.time()

    base_dir = root / "models/demo/base"
    good_dir = root / "models/demo/adapters/good"
    regr_dir = root / "models/demo/adapters/regressed"

    # ---- data -----------------------------------------------------------------------------
    train_orig = gen_samples(SEED_TRAIN_ORIGINAL, ORIGINAL_INTENTS, CFG["n_train_original"])
    train_shift = gen_samples(SEED_TRAIN_SHIFTED, SHIFTED_INTENTS, CFG["n_train_shifted"])
    train_texts = {s["text"] for s in train_orig} | {s["text"] for s in train_shift}
    suite_orig = gen_samples(SEED_SUITE_ORIGINAL, ORIGINAL_INTENTS, 60, exclude=train_texts,
                             balanced=True)
    suite_shift = gen_samples(SEED_SUITE_SHIFTED, SHIFTED_INTENTS, 40, exclude=train_texts,
                              balanced=True)
    write_suite(root / "suites/demo/tickets.jsonl", suite_orig, "tickets", "original")
    write_suite(root / "suites/demo/tickets_shifted.jsonl", suite_shift, "shifted", "shifted")
    print(f"data: {len(train_orig)} original + {len(train_shift)} shifted training tickets; "
          f"suites {len(suite_orig)} + {len(suite_shift)}", flush=True)

    # ---- tokenizer ---------------------------------------------------------------------
    # Trained on the domain text (ticket texts of both tasks), the system prompt and the
    # ORIGINAL answers only: the new intent labels are never seen as labels by the tokenizer
    # ("cancel_subscription" is spelled cancel + _ + subscription). Byte-level BPE, so any
    # text encodes.
    corpus_rng = random.Random(SEED_TOKENIZER_CORPUS)
    corpus = [s["text"] for s in train_orig] + [s["text"] for s in train_shift]
    corpus += [SYSTEM_PROMPT] * len(train_orig)
    corpus += [answer_of(s["intent"], s["priority"]) for s in train_orig]
    corpus_rng.shuffle(corpus)
    tokenizer = build_tokenizer(corpus, CFG["vocab_size"])
    end_id = tokenizer.convert_tokens_to_ids("<|end|>")
    pad_id = tokenizer.pad_token_id
    bos_id = tokenizer.bos_token_id
    print(f"tokenizer: vocab {len(tokenizer)} pad={pad_id} bos={bos_id} eos(<|end|>)={end_id}",
          flush=True)

    enc_orig = encode_examples(tokenizer, train_orig)
    enc_shift = encode_examples(tokenizer, train_shift)
    lens = [len(e[0]) for e in enc_orig + enc_shift]
    print(f"sequence length: mean {sum(lens) / len(lens):.1f} max {max(lens)}", flush=True)
    assert max(lens) < 256

    # The shifted labels must be spelled with tokens the base model has seen (and been trained
    # to predict) in the original-task text; an adapter cannot learn to emit "dead" tokens whose
    # embeddings were never trained. The quoted terms in the original templates provide them.
    seen_ids = {t for ids, _ in enc_orig for t in ids}
    for intent in SHIFTED_INTENTS:
        ids = tokenizer(answer_of(intent, "low"), add_special_tokens=False)["input_ids"]
        dead = [tokenizer.convert_ids_to_tokens(t) for t in ids if t not in seen_ids]
        assert not dead, f"label {intent!r} uses tokens unseen in the original data: {dead}"

    # ---- base model ------------------------------------------------------------------------
    torch.manual_seed(SEED_MODEL_INIT)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=128,
        intermediate_size=352,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=256,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        bos_token_id=bos_id,
        eos_token_id=end_id,
        pad_token_id=pad_id,
        attention_dropout=0.0,
    )
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        bos_token_id=bos_id, eos_token_id=end_id, pad_token_id=pad_id, do_sample=False,
        max_new_tokens=32,
    )
    n_params = sum(p.numel() for p in model.parameters())
    print(f"base model: {n_params:,} parameters", flush=True)
    t_base = time.time()
    base_loss = train_loop(
        model, list(model.parameters()), enc_orig, pad_id, steps=CFG["base_steps"],
        batch_size=CFG["base_batch"], lr=CFG["base_lr"], warmup=50, seed=100,
        weight_decay=0.01, text_weight=CFG["base_text_weight"], label="base", log_every=50,
    )
    print(f"base trained in {time.time() - t_base:.1f}s", flush=True)

    if base_dir.exists():
        shutil.rmtree(base_dir)
    model.to(torch.float16).save_pretrained(str(base_dir))
    tokenizer.padding_side = "left"
    tokenizer.save_pretrained(str(base_dir))
    del model

    def load_base():
        m = LlamaForCausalLM.from_pretrained(str(base_dir), dtype=torch.float32)
        m.eval()
        return m

    # ---- LoRA adapters (trained on top of the fp16-rounded base, as shipped) -----------------
    lora_kwargs = dict(
        r=CFG["lora_r"], lora_alpha=CFG["lora_alpha"], lora_dropout=0.0, bias="none",
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                        "down_proj"],
        task_type="CAUSAL_LM",
    )

    # good: shifted data mixed with replay of original data
    n_replay = int(len(enc_shift) * CFG["good_replay_fraction"] / (1 - CFG["good_replay_fraction"]))
    good_data = enc_shift + enc_orig[:n_replay]
    torch.manual_seed(SEED_GOOD)
    pm = get_peft_model(load_base(), LoraConfig(**lora_kwargs))
    params = [p for p in pm.parameters() if p.requires_grad]
    n_lora = sum(p.numel() for p in params)
    t_good = time.time()
    good_loss = train_loop(pm, params, good_data, pad_id, steps=CFG["good_steps"],
                           batch_size=CFG["good_batch"], lr=CFG["good_lr"], warmup=20, seed=101,
                           label="good", log_every=50)
    print(f"good adapter trained in {time.time() - t_good:.1f}s ({n_lora:,} LoRA params)",
          flush=True)
    save_fp16_adapter(pm, good_dir)
    del pm

    # regressed: shifted data only, higher LR
    torch.manual_seed(SEED_REGRESSED)
    pm = get_peft_model(load_base(), LoraConfig(**lora_kwargs))
    params = [p for p in pm.parameters() if p.requires_grad]
    t_reg = time.time()
    regr_loss = train_loop(pm, params, enc_shift, pad_id, steps=CFG["regressed_steps"],
                           batch_size=CFG["regressed_batch"], lr=CFG["regressed_lr"], warmup=20,
                           seed=102, label="regressed", log_every=50)
    print(f"regressed adapter trained in {time.time() - t_reg:.1f}s", flush=True)
    save_fp16_adapter(pm, regr_dir)
    del pm

    for f in (root / "models/demo").rglob("*"):
        if f.is_file():
            f.chmod(0o644)  # safetensors writes 0600

    elapsed = time.time() - t0
    summary = {
        "base_params": n_params,
        "lora_params": n_lora,
        "vocab_size": len(tokenizer),
        "final_loss_ema": {"base": base_loss, "good": good_loss, "regressed": regr_loss},
        "elapsed_s": round(elapsed, 1),
    }

    if args.eval:
        tok = PreTrainedTokenizerFast.from_pretrained(str(base_dir))
        res = {}
        for name in ("base", "good", "regressed"):
            m = load_base()
            if name != "base":
                m = PeftModel.from_pretrained(m, str(root / "models/demo/adapters" / name))
                m.eval()
            res[name] = {
                "original": quick_accuracy(m, tok, suite_orig),
                "shifted": quick_accuracy(m, tok, suite_shift),
            }
            print(f"  eval {name}: original acc/valid {res[name]['original']}, "
                  f"shifted acc/valid {res[name]['shifted']}", flush=True)
        summary["eval_s"] = round(time.time() - t0 - elapsed, 1)

    print("SUMMARY " + json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
