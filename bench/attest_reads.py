"""`releasegate attest` on a real run of the demo model (hf backend, base + good adapter) whose base directory also
holds a large file (`--mb`, default 512 MiB of random bytes: a model's weights, as far as reading goes): attest
verifies every input unchanged and then gives each model directory its model-signing digest. Printed: the bytes
attest reads and its wall time (median of `--repeats`), with `border.files.hash_once` as attest uses it against
a baseline measured in the same run with it turned off (each file read twice, as before), and their ratio.

    .venv/bin/python bench/attest_reads.py [--mb 512] [--repeats 5]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

import releasegate.border.files as files  # noqa: E402
import releasegate.pipeline.attest as attest  # noqa: E402
from releasegate.cli import main  # noqa: E402

DEMO = ROOT / "models" / "demo"
CASES = [{"id": f"case-{i}", "messages": [{"role": "user", "content": text}],
          "expected": {"intent": "billing", "priority": "low"}, "tags": {"domain": "billing"}}
         for i, text in enumerate(["charged twice", "refund please", "where is my invoice"])]


def _project(root: Path, mb: int) -> Path:
    shutil.copytree(DEMO / "base", root / "models" / "base")
    shutil.copytree(DEMO / "adapters" / "good", root / "models" / "adapter")
    with (root / "models" / "base" / "extra.bin").open("wb") as fh:
        for _ in range(mb):
            fh.write(os.urandom(1 << 20))
    (root / "suite.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
    (root / "rubric.yaml").write_text("criteria:\n  - {metric: error_rate, op: '<=', threshold: 1.0}\n")
    (root / "releasegate.yaml").write_text(
        "target: {backend: hf, base: models/base, adapter: models/adapter, dtype: float32, threads: 1}\n"
        "generation: {max_new_tokens: 8}\nsuites:\n  - {path: suite.jsonl, answer: {type: json_fields, "
        "fields: [intent, priority]}}\nrubric: rubric.yaml\noutput: {dir: reports}\n")
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["check", "-c", str(root / "releasegate.yaml"), "--run-id", "ok", "--no-progress"]) == 0
        assert main(["attest", "--generate-key", str(root / "key")]) == 0
    return root / "reports" / "ok"


def _counting_reads(read: list[int]) -> None:
    """border.files' hashlib with file_digest counting the bytes of each file it reads."""
    def file_digest(fh, name):  # type: ignore[no-untyped-def]
        read.append(os.fstat(fh.raw._fh.fileno()).st_size)
        return hashlib.file_digest(fh, name)

    shim = types.SimpleNamespace(**{k: getattr(hashlib, k) for k in dir(hashlib) if not k.startswith("__")})
    shim.file_digest = file_digest
    files.hashlib = shim  # type: ignore[assignment]


def main_(mb: int, repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run = _project(Path(tmp) / "p", mb)
        read: list[int] = []
        _counting_reads(read)
        once = attest.hash_once
        seen: dict[str, dict[str, list[float]]] = {"hash_once": {"s": [], "bytes": []},
                                                   "baseline": {"s": [], "bytes": []}}
        for mode in ["baseline", "hash_once"] * repeats:
            attest.hash_once = once if mode == "hash_once" else contextlib.nullcontext  # type: ignore[assignment]
            read.clear()
            started = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                assert main(["attest", str(run), "--key", str(Path(tmp) / "p" / "key"), "-o",
                             str(Path(tmp) / "a.intoto.json"), "--force"]) == 0
            seen[mode]["s"].append(time.perf_counter() - started)
            seen[mode]["bytes"].append(sum(read))
        attest.hash_once = once  # type: ignore[assignment]
    for mode, got in seen.items():
        print(f"attest, {mode:9}: {statistics.median(got['s']):6.2f} s, {got['bytes'][-1] / 2**20:8.1f} MiB read")
    ratio = statistics.median(seen["hash_once"]["s"]) / statistics.median(seen["baseline"]["s"])
    read_ratio = seen["hash_once"]["bytes"][-1] / seen["baseline"]["bytes"][-1]
    print(f"hash_once / baseline: time x{ratio:.2f}, bytes read x{read_ratio:.2f} (0.50: each file read once)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    main_(args.mb, args.repeats)
