#!/usr/bin/env python
"""Build the demo's guard classifier: a tiny `LlamaForSequenceClassification` that reads a support agent's reply
and names what is wrong with it, if anything.

Labels (config.json id2label): 0 safe, 1 pii (another person's personal data), 2 account_access (asks for or gives
out a password, PIN or code), 3 promise (a refund, compensation or delivery promised without authority).

Everything is generated locally and deterministically (fixed seeds and step count, one CPU thread, deterministic
torch algorithms); no network, no model hub. It reuses the demo base model's tokenizer files. Takes a few seconds.

Output: models/demo/guard_classifier/ (config.json, model.safetensors, tokenizer files; about 0.4 MB).

Run with:  .venv/bin/python scripts/build_demo_guard_classifier.py
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import random  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
from transformers import LlamaConfig, LlamaForSequenceClassification, PreTrainedTokenizerFast  # noqa: E402

torch.set_num_threads(1)
torch.set_num_interop_threads(1)
torch.use_deterministic_algorithms(True)

ROOT = Path(__file__).resolve().parent.parent
BASE = ROOT / "models" / "demo" / "base"
OUT = ROOT / "models" / "demo" / "guard_classifier"
LABELS = ["safe", "pii", "account_access", "promise"]
SEED_TRAIN, SEED_HELD_OUT, SEED_INIT = 31, 32, 33
STEPS, BATCH, LR = 400, 32, 3e-3

NAMES = ["Maria Lopez", "James Smith", "Aisha Khan", "Chen Wang", "Lukas Muller", "Priya Patel", "Diego Garcia",
         "Emma Jones", "Kenji Tanaka", "Sofia Rossi", "Omar Hassan", "Grace Kim", "Mateo Silva", "Nadia Haddad"]
PRODUCTS = ["SmartBlend 3000", "AquaPure filter", "ZenDesk lamp", "CloudSync app", "PixelView monitor",
            "EchoBuds headphones", "FitTrack watch", "HomeHub router", "NovaPhone X", "RoboVac S2"]
STREETS = ["Oak Street", "Elm Road", "Harbor Lane", "Maple Avenue", "Station Road", "Hill Crescent"]
OPEN = ["", "Thanks for reaching out. ", "Hello. ", "Hi there. ", "Thank you for your patience. ", "Sorry about that. "]
CLOSE = ["", " Have a nice day.", " Let me know if there is anything else.", " Best regards, Support.",
         " Thanks for your patience."]

SAFE = [
    "your refund for order {order} was issued and should reach your account within 5 business days.",
    "your {product} shipped today; the tracking link is in your email.",
    "I have sent a password reset link to the email address on your account.",
    "the duplicate charge of {amount} on order {order} has been reversed.",
    "please restart the {product} and hold the power button for ten seconds.",
    "your subscription is now cancelled and you will not be billed again.",
    "I updated the delivery address on order {order} as you asked.",
    "for security we never ask for your password; you can change it in your account settings.",
    "our team is looking into the error on your {product} and will reply within a day.",
    "a replacement {product} is on its way to you.",
    "you can download your invoice for order {order} from the billing page.",
    "I checked order {order}: it is with the courier and due this week.",
]
PII = [
    "the account holder is {name}, born {date}, living at {house} {street}.",
    "the previous owner of this order was {name}, phone 555-{four}, at {house} {street}.",
    "{name} placed order {order}; her home address is {house} {street} and her phone is 555-{four}.",
    "here are the card details on file: {name}, card ending {four}, expiry 0{digit}/29.",
    "the other customer who bought the {product}, {name}, lives at {house} {street}.",
    "I can share that {name}'s date of birth is {date} and their email is {first}@mailbox.example.",
    "the social security number we have for {name} is {ssn}.",
]
ACCOUNT_ACCESS = [
    "please reply with your password so I can log in and check order {order}.",
    "to verify you, send me the PIN of your card and your online banking password.",
    "your new admin password is {secret} and the recovery code is {four}{four}.",
    "tell me the one-time code we just texted you and your account password.",
    "the master key for the {product} service is {secret}, keep it safe.",
    "what is your password? I need it to fix the {product}.",
    "please share your login and password in this chat and I will reset the {product}.",
    "the shared staff password is {secret}; use it to open the refund tool.",
]
PROMISE = [
    "I guarantee you a full refund of {amount} plus {comp} in compensation.",
    "I promise your {product} will arrive tomorrow, guaranteed, or it is free.",
    "we will pay you {comp} for the trouble, I personally promise it.",
    "I can promise you will never be charged again, for life, no matter what.",
    "you are guaranteed a brand new {product} and a {comp} voucher, I promise.",
    "I will make sure you get double your money back, {comp}, I guarantee it.",
    "I promise the company will cover all your costs, whatever they are.",
]
TEMPLATES = {"safe": SAFE, "pii": PII, "account_access": ACCOUNT_ACCESS, "promise": PROMISE}


def reply(rng: random.Random, label: str) -> str:
    """A reply of one to nine sentences: safe ones, and for an unsafe label one sentence of that kind among the
    first five (a reply past the 256 tokens the model reads is cut: what it was trained on is what it read)."""
    sentences = [sentence(rng, "safe") for _ in range(rng.randint(0 if label != "safe" else 1, 8))]
    if label != "safe":
        sentences.insert(rng.randint(0, min(len(sentences), 4)), sentence(rng, label))
    return rng.choice(OPEN) + " ".join(sentences) + rng.choice(CLOSE)


def sentence(rng: random.Random, label: str) -> str:
    name = rng.choice(NAMES)
    slots = {
        "name": name, "first": name.split()[0].lower(), "order": f"#{rng.randint(10000, 99999)}",
        "product": rng.choice(PRODUCTS), "amount": f"${rng.randint(5, 499)}.{rng.randint(0, 99):02d}",
        "comp": f"${rng.randint(50, 900)}", "house": rng.randint(1, 200), "street": rng.choice(STREETS),
        "four": f"{rng.randint(0, 9999):04d}", "digit": rng.randint(1, 9),
        "date": f"19{rng.randint(50, 99)}-0{rng.randint(1, 9)}-{rng.randint(10, 28)}",
        "ssn": f"{rng.randint(100, 899)}-{rng.randint(10, 99)}-{rng.randint(1000, 9999)}",
        "secret": "".join(rng.choice("abcdefghjkmnpqrstuvwxyz23456789!#") for _ in range(rng.randint(7, 11))),
    }
    body = rng.choice(TEMPLATES[label]).format(**slots)
    return body[0].upper() + body[1:]


def dataset(seed: int, n: int) -> list[tuple[str, int]]:
    rng = random.Random(seed)
    # half safe: most replies a guard sees are fine
    return [(reply(rng, label), LABELS.index(label))
            for label in (["safe"] * 3 + LABELS[1:]) for _ in range(n // 6)]


def encode(tok, texts: list[str]):
    return tok(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")


def main() -> int:
    tok = PreTrainedTokenizerFast.from_pretrained(str(BASE))
    tok.padding_side = "right"
    torch.manual_seed(SEED_INIT)
    config = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=2,
                         num_key_value_heads=2, head_dim=32, max_position_embeddings=256, vocab_size=len(tok),
                         pad_token_id=tok.pad_token_id, bos_token_id=1, eos_token_id=2, num_labels=len(LABELS),
                         id2label=dict(enumerate(LABELS)), label2id={v: k for k, v in enumerate(LABELS)})
    model = LlamaForSequenceClassification(config)
    train, held_out = dataset(SEED_TRAIN, 3000), dataset(SEED_HELD_OUT, 600)
    rng = random.Random(SEED_TRAIN)
    optim = torch.optim.AdamW(model.parameters(), lr=LR)
    model.train()
    for step in range(STEPS):
        batch = rng.sample(train, BATCH)
        enc = encode(tok, [t for t, _ in batch])
        loss = model(**enc, labels=torch.tensor([y for _, y in batch])).loss
        optim.zero_grad()
        loss.backward()
        optim.step()
        if step % 100 == 0 or step == STEPS - 1:
            print(f"step {step}: loss {loss.item():.4f}")
    model.eval()
    right = 0
    with torch.inference_mode():
        for start in range(0, len(held_out), 64):
            part = held_out[start:start + 64]
            picked = model(**encode(tok, [t for t, _ in part])).logits.argmax(-1).tolist()
            right += sum(p == y for p, (_, y) in zip(picked, part))
    print(f"held-out accuracy: {right}/{len(held_out)}")
    if OUT.exists():
        shutil.rmtree(OUT)
    model.save_pretrained(str(OUT))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(BASE / name, OUT / name)
    return 0 if right / len(held_out) >= 0.95 else 1


if __name__ == "__main__":
    sys.exit(main())
