#!/usr/bin/env python
"""Quick check of the embedded demo models against the demo suites.

Loads models/demo/base, base+good and base+regressed (peft.PeftModel.from_pretrained, float32,
one CPU thread), runs batched greedy generation with left padding over
suites/demo/tickets.jsonl and suites/demo/tickets_shifted.jsonl and prints, per model and suite,
the JSON-valid rate and the accuracy (intent and priority both equal to the expected ones).

Also checks that
  * merging the good adapter (merge_and_unload() in float32) gives token-identical greedy outputs,
  * batched left-padded generation gives the same tokens as one-by-one generation,
  * no config under models/demo holds an absolute path,
and exits 1 if any of the demo targets is missed.

Run with:  .venv/bin/python scripts/check_demo_models.py
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

torch.set_num_threads(1)

import transformers  # noqa: E402
from peft import PeftModel  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()
warnings.filterwarnings("ignore", category=FutureWarning)

ROOT = Path(__file__).resolve().parent.parent
MAX_NEW_TOKENS = 32

TARGETS = {  # (model, suite, metric) -> (op, threshold)
    ("base", "original", "accuracy"): (">=", 0.95),
    ("base", "shifted", "accuracy"): ("<=", 0.30),
    ("good", "original", "accuracy"): (">=", 0.95),
    ("good", "shifted", "accuracy"): (">=", 0.90),
    ("regressed", "shifted", "accuracy"): (">=", 0.90),
    ("regressed", "original", "accuracy"): ("<=", 0.60),
    ("regressed", "original", "json_valid"): (">=", 0.90),
    ("regressed", "shifted", "json_valid"): (">=", 0.90),
}


def load_suite(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def load_model(base_dir: Path, adapter_dir: Path | None = None, merge: bool = False):
    model = AutoModelForCausalLM.from_pretrained(str(base_dir), dtype=torch.float32)
    if adapter_dir is not None:
        model = PeftModel.from_pretrained(model, str(adapter_dir))
        if merge:
            model = model.merge_and_unload()
    model.eval()
    return model


@torch.no_grad()
def generate(model, tokenizer, cases: list[dict], batch_size: int = 64):
    """Greedy, left-padded, batched. Returns (completion token ids, decoded texts, min margin)."""
    tokenizer.padding_side = "left"
    all_ids, texts, min_margin = [], [], float("inf")
    for i in range(0, len(cases), batch_size):
        chunk = cases[i: i + batch_size]
        prompts = [
            tokenizer.apply_chat_template(c["messages"], tokenize=False, add_generation_prompt=True)
            for c in chunk
        ]
        enc = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        out = model.generate(
            **enc, max_new_tokens=MAX_NEW_TOKENS, do_sample=False,
            output_scores=True, return_dict_in_generate=True,
        )
        new = out.sequences[:, enc["input_ids"].shape[1]:]
        # top-1 minus top-2 logit gap at every step that was still generating
        alive = torch.ones(new.shape[0], dtype=torch.bool)
        for step, sc in enumerate(out.scores):
            top2 = sc.float().topk(2, dim=-1).values
            gap = (top2[:, 0] - top2[:, 1])[alive]
            if gap.numel():
                min_margin = min(min_margin, gap.min().item())
            alive &= new[:, step] != tokenizer.eos_token_id
        for row in new:
            ids = [t for t in row.tolist() if t != tokenizer.pad_token_id]
            if tokenizer.eos_token_id in ids:
                ids = ids[: ids.index(tokenizer.eos_token_id) + 1]
            all_ids.append(ids)
            texts.append(tokenizer.decode(ids, skip_special_tokens=True))
    return all_ids, texts, min_margin


def score(cases: list[dict], texts: list[str]) -> dict:
    valid = correct = 0
    for case, text in zip(cases, texts):
        try:
            obj = json.loads(text)
        except json.JSONDecodeError:
            continue
        if not isinstance(obj, dict):
            continue
        valid += 1
        exp = case["expected"]
        if obj.get("intent") == exp["intent"] and obj.get("priority") == exp["priority"]:
            correct += 1
    n = len(cases)
    return {"json_valid": valid / n, "accuracy": correct / n, "n": n}


def absolute_paths(models_dir: Path) -> list[str]:
    """String values in the JSON configs under models/demo that are absolute paths."""

    def strings(obj):
        if isinstance(obj, str):
            yield obj
        elif isinstance(obj, dict):
            for k, v in obj.items():
                yield from strings(k)
                yield from strings(v)
        elif isinstance(obj, list):
            for v in obj:
                yield from strings(v)

    bad = []
    for p in sorted(models_dir.rglob("*.json")):
        if p.name == "tokenizer.json":  # vocabulary entries such as "/" are not paths
            text = p.read_text(encoding="utf-8")
            hits = [s for s in (str(ROOT), "/work/", "/home/", "/tmp/") if s in text]
        else:
            hits = [s for s in strings(json.loads(p.read_text(encoding="utf-8")))
                    if len(s) > 1 and (s.startswith("/") or s[1:3] == ":\\")]
        bad += [f"{p.relative_to(models_dir)}: {h!r}" for h in hits]
    return bad


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="check the embedded demo models")
    ap.add_argument("--root", default=str(ROOT), help="repository root holding models/ and suites/")
    ap.add_argument("--show", type=int, default=0, help="print the first N outputs per model/suite")
    args = ap.parse_args(argv)
    root = Path(args.root).resolve()
    t0 = time.time()

    base_dir = root / "models/demo/base"
    adapters = root / "models/demo/adapters"
    suites = {
        "original": load_suite(root / "suites/demo/tickets.jsonl"),
        "shifted": load_suite(root / "suites/demo/tickets_shifted.jsonl"),
    }
    tokenizer = AutoTokenizer.from_pretrained(str(base_dir))
    tokenizer.padding_side = "left"

    results: dict[str, dict[str, dict]] = {}
    outputs: dict[str, dict[str, list]] = {}
    for name in ("base", "good", "regressed"):
        model = load_model(base_dir, None if name == "base" else adapters / name)
        results[name], outputs[name] = {}, {}
        for suite, cases in suites.items():
            ids, texts, margin = generate(model, tokenizer, cases)
            results[name][suite] = {**score(cases, texts), "min_margin": margin}
            outputs[name][suite] = ids
            for case, text in list(zip(cases, texts))[: args.show]:
                print(f"    {name}/{suite} {case['id']}: {text}  (expected {case['expected']})")
        del model

    print()
    print(f"{'model':<10} {'suite':<9} {'n':>3} {'json_valid':>10} {'accuracy':>9} {'min_margin':>10}")
    for name, per_suite in results.items():
        for suite, r in per_suite.items():
            print(f"{name:<10} {suite:<9} {r['n']:>3} {r['json_valid']:>10.3f} {r['accuracy']:>9.3f} "
                  f"{r['min_margin']:>10.3f}")
    print()

    failures = []
    for (name, suite, metric), (op, thr) in TARGETS.items():
        v = results[name][suite][metric]
        ok = v >= thr if op == ">=" else v <= thr
        if not ok:
            failures.append(f"{name}/{suite} {metric} = {v:.3f}, target {op} {thr}")

    # merged vs unmerged good adapter
    merged = load_model(base_dir, adapters / "good", merge=True)
    same = True
    for suite, cases in suites.items():
        ids, _, _ = generate(merged, tokenizer, cases)
        diff = sum(a != b for a, b in zip(ids, outputs["good"][suite]))
        print(f"merged vs unmerged good adapter, {suite}: {len(cases) - diff}/{len(cases)} "
              f"token-identical")
        same &= diff == 0
    del merged
    if not same:
        failures.append("merged good adapter differs from the unmerged one")

    # batched left padding vs one-by-one generation (good adapter, first cases of each suite)
    model = load_model(base_dir, adapters / "good")
    single_ok = True
    for suite, cases in suites.items():
        for k, case in enumerate(cases[:8]):
            ids, _, _ = generate(model, tokenizer, [case])
            single_ok &= ids[0] == outputs["good"][suite][k]
    print(f"batched (left-padded) vs unbatched generation identical: {single_ok}")
    if not single_ok:
        failures.append("left-padded batched generation differs from unbatched")
    del model

    bad_paths = absolute_paths(root / "models/demo")
    print(f"absolute paths in models/demo configs: {bad_paths or 'none'}")
    if bad_paths:
        failures.append("absolute paths in configs")

    print(f"elapsed {time.time() - t0:.1f}s")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("all demo targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
