"""Length-bucketed batching on the HF backend: output tokens/s with `target.bucket_by_length` on vs off (file order).

The demo evaluation (models/demo base + the good adapter, suites/demo, batch size 16, 1 torch thread) runs through
`run_check`, the code `releasegate check` runs, on two suites:

- `demo`: suites/demo as shipped. Its prompts are much alike (27-81 tokens with the chat template), so there is
  little padding to save.
- `mixed`: the same 100 cases where a seeded 40% of the tickets carry a quoted earlier thread (other tickets'
  text) up to 120-215 prompt tokens (the demo model has 256 positions; 32 new tokens must fit), so file-order
  batches mix 30- and 200-token prompts: the case length bucketing is for.

Each suite runs bucketed and in file order, alternating which goes first, over several rounds; the median is
reported. tokens/s = total output tokens / the run's generation seconds (`run.json` generation_seconds: model load
and judging excluded), the report's `output_tokens_per_s`. Padding = pad tokens / all prefill tokens, from the
records' batches (a batch's records share one TTFT: the batch's prefill). `differ`: cases whose output differs
between the two orders (greedy decoding with left padding and an attention mask: must be 0). `--rounds N`,
`--batch-size N`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import tempfile
from pathlib import Path

from rich.console import Console

from releasegate.inputs.validation import load_inputs
from releasegate.pipeline.check import run_check
from releasegate.pipeline.check_options import CheckOptions

ROOT = Path(__file__).resolve().parents[1]
SEED = 7


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rg-bucketing-") as tmp:
        tmp = Path(tmp)
        configs = {"demo": _config(tmp, ROOT / "suites" / "demo", "demo"), "mixed": _config(tmp, _mixed_suites(tmp), "mixed")}
        print(f"demo model + good adapter, batch size {args.batch_size}, {args.rounds} rounds (median), 1 torch thread")
        print(f"{'suite':6} {'prompt tokens':>14} {'order':9} {'tok/s':>8} {'padding':>8} {'gen s':>7} {'ratio':>6} {'differ':>6}")
        for name, path in configs.items():
            _bench(name, path, tmp, args)


def _bench(name: str, config_path: Path, tmp: Path, args) -> None:
    runs: dict[str, list[dict]] = {"bucketed": [], "file": []}
    for round_ in range(args.rounds):
        for order in (("bucketed", "file") if round_ % 2 == 0 else ("file", "bucketed")):
            runs[order].append(_run(config_path, tmp / f"{name}-{order}-{round_}", order == "bucketed", args.batch_size))
    out = {order: {k: statistics.median(r[k] for r in rs) for k in ("tps", "padding", "seconds")} for order, rs in runs.items()}
    texts = {order: rs[0]["outputs"] for order, rs in runs.items()}
    differ = sum(texts["bucketed"][i] != texts["file"][i] for i in texts["file"])
    unstable = sum(r["outputs"] != rs[0]["outputs"] for rs in runs.values() for r in rs)
    lengths = runs["file"][0]["lengths"]
    ratio = out["bucketed"]["tps"] / out["file"]["tps"]
    span = f"{min(lengths)}-{max(lengths)}"
    for order in ("file", "bucketed"):
        s = out[order]
        last = f"{ratio:6.2f} {differ:6d}" if order == "bucketed" else ""
        print(f"{name:6} {span:>14} {order:9} {s['tps']:8.0f} {s['padding']:8.1%} {s['seconds']:7.2f} {last}")
    if unstable:
        print(f"  ({unstable} runs gave other outputs than the first run of their order)")


def _run(config_path: Path, out_dir: Path, bucketed: bool, batch_size: int) -> dict:
    config, rubric, cases = load_inputs(config_path)
    target = dataclasses.replace(config.target, bucket_by_length=bucketed, batch_size=batch_size)
    config = dataclasses.replace(config, target=target, output_dir=out_dir)
    run, report = run_check(config, rubric, cases, CheckOptions(
        Console(quiet=True), progress=False, run_id="run", allow_pending=True, use_cache=False))
    records = run.read_records()
    assert [r.case_id for r in records] == [c.id for c in cases], "records.jsonl is not in case order"
    info = json.loads((run.path / "run.json").read_text())
    batches: dict[float, list[int]] = {}
    for r in records:
        batches.setdefault(r.timing.ttft_ms, []).append(r.tokens.input)
    padded = sum(max(b) * len(b) for b in batches.values())
    tokens = sum(r.tokens.output for r in records)
    return {
        "tps": tokens / info["generation_seconds"],
        "seconds": info["generation_seconds"],
        "padding": 1 - sum(r.tokens.input for r in records) / padded,
        "outputs": {r.case_id: r.output for r in records},
        "lengths": [r.tokens.input for r in records],
    }


def _config(tmp: Path, suites: Path, name: str) -> Path:
    text = (ROOT / "releasegate.yaml").read_text()
    text = (text.replace("models/demo/", f"{ROOT / 'models/demo'}/").replace("suites/demo/", f"{suites}/")
            .replace("rubric: rubrics/demo.yaml", f"rubric: {ROOT / 'rubrics/demo.yaml'}"))
    text = text.replace(f"{suites}/ticket.schema.json", f"{ROOT / 'suites/demo/ticket.schema.json'}")
    path = tmp / f"{name}.yaml"
    path.write_text(text)
    return path


def _mixed_suites(tmp: Path) -> Path:
    """suites/demo with a seeded 40% of tickets carrying a quoted earlier thread: 120-215 prompt tokens."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(ROOT / "models" / "demo" / "base")
    rng = random.Random(SEED)
    out = tmp / "mixed-suites"
    out.mkdir()
    rows = {f: [json.loads(line) for line in (ROOT / "suites/demo" / f).read_text().splitlines() if line.strip()]
            for f in ("tickets.jsonl", "tickets_shifted.jsonl")}
    pool = [row["messages"][-1]["content"] for f in rows.values() for row in f]
    for name, cases in rows.items():
        for case in cases:
            if rng.random() < 0.4:
                user = case["messages"][-1]
                goal, thread = rng.randint(120, 215), []
                while True:
                    candidate = user["content"] + "\n\nEarlier in this thread:\n> " + "\n> ".join(thread + [rng.choice(pool)])
                    if _prompt_tokens(tok, case["messages"][:-1] + [{**user, "content": candidate}]) > goal:
                        break
                    thread.append(candidate.rsplit("\n> ", 1)[1])
                if thread:
                    user["content"] += "\n\nEarlier in this thread:\n> " + "\n> ".join(thread)
        (out / name).write_text("".join(json.dumps(c) + "\n" for c in cases))
    return out


def _prompt_tokens(tok, messages: list[dict]) -> int:
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return len(tok(text, add_special_tokens=False)["input_ids"])


if __name__ == "__main__":
    main()
