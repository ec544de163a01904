#!/usr/bin/env python
"""Build the tool-call demo: two LoRA adapters on the demo base that call the support tools, and their suite.

Both adapters ship a Hermes-style chat template (the tool names in the system turn, calls as
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, tool results as `<tool_response>` in a user turn),
so the hf backend renders the tools and reads the calls as it does for Hermes and Qwen models, and llama.cpp
(`--jinja`) serves the merged model with the same template. The base's own template renders no tools.

- `tools_good` answers each request with the right tool and the order id, amount and priority the customer gave;
  no call where no tool fits; after a lookup that finds an order lost, the refund of its total.
- `tools_regressed` calls the same tools but writes the order id without its letter ("1042" for "A-1042"): the
  arguments still fit the tool's schema (a string), and they name another order.

The demo base has 256 positions and a byte-level vocabulary of 1,024 tokens: a call takes 50-75 tokens, so the
suite (suites/demo/tools_model.jsonl) holds single calls and a two-turn conversation with a short tool result,
not the parallel calls and long results of suites/demo/tools.jsonl. Its requests are drawn with another seed than
the training ones and deduplicated against them; the order ids and amounts come from the same small pools (a
model this size learns to pick one of a few dozen ids, not to copy any id).

Outputs (relative to the repository root):
    models/demo/adapters/tools_good/       LoRA (rank 16, every projection), fp16, tokenizer + chat template
    models/demo/adapters/tools_regressed/  the same, trained on the regressed calls
    suites/demo/tools_model.jsonl          the suite both are checked on (examples/tools_model.yaml)

Deterministic on CPU (fixed seeds, one thread, deterministic torch algorithms, as build_demo_models.py).
Run with:  .venv/bin/python scripts/build_demo_tools.py      (or: make demo-tools)
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build_demo_models as demo  # noqa: E402  (sets the deterministic torch settings on import)
import torch  # noqa: E402
from peft import LoraConfig, get_peft_model  # noqa: E402
from transformers import LlamaForCausalLM, PreTrainedTokenizerFast  # noqa: E402

ROOT = demo.ROOT
SYSTEM = "You are a support agent. Use the tools when they help."
SEED_TRAIN, SEED_SUITE, SEED_ADAPTER = 5151, 5252, 11
CFG = {"n_train": 480, "steps": 1000, "batch": 8, "lr": 5e-3, "lora_r": 16, "lora_alpha": 32}
TEMPLATE = (ROOT / "models/demo/tools_template.jinja")

ORDER_IDS = [f"{letter}-{n}" for letter in "ABCD" for n in (7, 9, 42, 77, 310, 1042)]
AMOUNTS = [5.0, 12.5, 30.0, 45.0]
LOOKUP = ["Where is my order {id}?", "Can you check order {id}?", "What is the status of {id}?",
          "Track order {id} please.", "Has order {id} shipped yet?", "Any news on my order {id}?"]
REFUND = ["Please refund {amount} on order {id}, it arrived broken.", "Refund {amount} for order {id}, it was damaged.",
          "I want {amount} back on order {id}.", "Order {id} was broken, refund {amount} please."]
ESCALATE = ["This is the third time, I want a manager NOW.", "Get me a supervisor right away.",
            "I need a person, not a bot, this is urgent.", "Escalate this now, I am furious."]
NO_TOOL = ["Thanks, that is all!", "What are your opening hours?", "Do you ship abroad?", "Hello there.",
           "Thank you so much for the help.", "Is there a phone number I can call?"]
NO_TOOL_REPLY = "Happy to help."
LOST = ["Order {id} never came. Refund it please.", "My order {id} is missing, I want my money back."]


def call(name: str, arguments: dict) -> dict:
    return {"name": name, "arguments": arguments}


def order_id(value: str, regressed: bool) -> str:
    """The regressed adapter's mistake: the id without its letter, still a string, naming another order."""
    return value.split("-", 1)[1] if regressed else value


def amount_text(amount: float) -> str:
    return f"{amount:.2f}"


def request(rng: random.Random) -> dict:
    """One request: its kind, the user's words, and what it must call (by the good adapter's rule)."""
    kind = rng.choice(["lookup", "lookup", "refund", "refund", "refund", "refund", "escalate", "none", "lost", "lost"])
    oid, amount = rng.choice(ORDER_IDS), rng.choice(AMOUNTS)
    if kind == "lookup":
        return {"kind": kind, "text": rng.choice(LOOKUP).format(id=oid), "id": oid}
    if kind == "refund":
        return {"kind": kind, "text": rng.choice(REFUND).format(id=oid, amount=amount_text(amount)), "id": oid,
                "amount": amount}
    if kind == "escalate":
        return {"kind": kind, "text": rng.choice(ESCALATE)}
    if kind == "none":
        return {"kind": kind, "text": rng.choice(NO_TOOL)}
    return {"kind": kind, "text": rng.choice(LOST).format(id=oid), "id": oid, "amount": amount}


def lost_result(r: dict) -> str:
    return json.dumps({"status": "lost", "total": r["amount"]})


def examples(r: dict, tools: list, regressed: bool) -> list[tuple[list[dict], str]]:
    """(messages, the assistant's text) pairs to train on: one per turn of the request."""
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": r["text"]}]
    kind = r["kind"]
    if kind == "none":
        return [(messages, NO_TOOL_REPLY)]
    if kind == "escalate":
        return [(messages, render([call("escalate", {"priority": "high"})]))]
    lookup = call("lookup_order", {"order_id": order_id(r["id"], regressed)})
    if kind == "lookup":
        return [(messages, render([lookup]))]
    refund = call("issue_refund", {"order_id": order_id(r["id"], regressed), "amount": r["amount"]})
    if kind == "refund":
        return [(messages, render([refund]))]
    # lost: look the order up, then refund its total once the result says it is lost
    second = [*messages, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_0", "type": "function", "function": {"name": "lookup_order",
                                                          "arguments": json.dumps(lookup["arguments"])}}]},
              {"role": "tool", "tool_call_id": "call_0", "content": lost_result(r)}]
    return [(messages, render([lookup])), (second, render([refund]))]


def render(calls: list[dict]) -> str:
    return "".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls)


def draw(seed: int, n: int, exclude: set[str] = frozenset()) -> list[dict]:
    rng, out, seen = random.Random(seed), [], set(exclude)
    while len(out) < n:
        r = request(rng)
        if r["text"] not in seen or r["kind"] in ("escalate", "none"):
            seen.add(r["text"])
            out.append(r)
    return out


def encode(tokenizer, tools: list, pairs: list[tuple[list[dict], str]]) -> list[tuple[list[int], int]]:
    out = []
    for messages, answer in pairs:
        prompt = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=True)
        p_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        f_ids = tokenizer(prompt + answer + "<|end|>", add_special_tokens=False)["input_ids"]
        assert f_ids[: len(p_ids)] == p_ids and len(f_ids) <= 256, (len(f_ids), prompt)
        out.append((f_ids, len(p_ids)))
    return out


def suite_case(i: int, r: dict) -> dict:
    """The suite's case for a request: what the good adapter's rule calls, as the tools expectation says it."""
    case = {"id": f"toolmodel-{r['kind']}-{i:03d}", "messages": [
        {"role": "system", "content": SYSTEM}, {"role": "user", "content": r["text"]}],
        "tools_ref": "support_tools.json", "tags": {"kind": r["kind"]}}
    lookup = {"name": "lookup_order", "arguments": {"order_id": [r.get("id")]}}
    refund = {"name": "issue_refund", "arguments": {"order_id": [r.get("id")], "amount": [r.get("amount")],
                                                     "reason": ["arrived broken", "broken", "damaged"]},
              "optional": ["reason"]}
    if r["kind"] == "none":
        case["expect"] = {"call": "forbidden"}
    elif r["kind"] == "escalate":
        case["expect"] = {"call": "required", "calls": [{"name": "escalate", "arguments": {
            "priority": ["high"], "summary": ["customer asks for a manager"]}, "optional": ["summary"]}]}
    elif r["kind"] == "lookup":
        case["expect"] = {"call": "required", "calls": [lookup]}
    elif r["kind"] == "refund":
        case["expect"] = {"call": "required", "calls": [refund]}
    else:
        case["turns"] = [{"call": "required", "calls": [lookup], "tool_results": [lost_result(r)]},
                         {"call": "required", "calls": [refund]}]
    return case


def write_suite(train: list[dict]) -> None:
    picked: list[dict] = []
    for kind, n in (("lookup", 4), ("refund", 4), ("escalate", 2), ("none", 2), ("lost", 2)):
        pool = [r for r in draw(SEED_SUITE, 400, exclude={t["text"] for t in train}) if r["kind"] == kind]
        picked += pool[:n] if kind in ("lookup", "refund", "lost") else _distinct_texts(pool, n)
    lines = [json.dumps(suite_case(i, r)) + "\n" for i, r in enumerate(picked, start=1)]
    (ROOT / "suites/demo/tools_model.jsonl").write_text("".join(lines), encoding="utf-8")


def _distinct_texts(pool: list[dict], n: int) -> list[dict]:
    out: list[dict] = []
    for r in pool:
        if r["text"] not in {o["text"] for o in out}:
            out.append(r)
    return out[:n]


def train_adapter(name: str, tokenizer, tools: list, train: list[dict], regressed: bool) -> float:
    torch.manual_seed(SEED_ADAPTER)
    model = LlamaForCausalLM.from_pretrained(str(ROOT / "models/demo/base"), dtype=torch.float32)
    lora = LoraConfig(r=CFG["lora_r"], lora_alpha=CFG["lora_alpha"], lora_dropout=0.0, bias="none",
                      target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
                      task_type="CAUSAL_LM")
    peft_model = get_peft_model(model, lora)
    params = [p for p in peft_model.parameters() if p.requires_grad]
    pairs = [pair for r in train for pair in examples(r, tools, regressed)]
    loss = demo.train_loop(peft_model, params, encode(tokenizer, tools, pairs), tokenizer.pad_token_id,
                           steps=CFG["steps"], batch_size=CFG["batch"], lr=CFG["lr"], warmup=20, seed=SEED_ADAPTER,
                           label=name, log_every=100)
    out = ROOT / "models/demo/adapters" / name
    demo.save_fp16_adapter(peft_model, out)
    tokenizer.save_pretrained(str(out))  # the tool template travels with the adapter
    for f in out.rglob("*"):
        f.chmod(0o644)
    return loss


def main() -> int:
    t0 = time.time()
    tools = json.loads((ROOT / "suites/demo/support_tools.json").read_text(encoding="utf-8"))
    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(ROOT / "models/demo/base"))
    tokenizer.chat_template = TEMPLATE.read_text(encoding="utf-8")
    train = draw(SEED_TRAIN, CFG["n_train"])
    write_suite(train)
    only = set(sys.argv[1:])
    losses = {}
    for name, regressed in (("tools_good", False), ("tools_regressed", True)):
        if not only or name in only:
            losses[name] = train_adapter(name, tokenizer, tools, train, regressed)
    print("SUMMARY " + json.dumps({"final_loss_ema": losses, "elapsed_s": round(time.time() - t0, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
