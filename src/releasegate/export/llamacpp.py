"""Serve a model with llama.cpp's own server, in-process (the `xllamacpp` wheel), for the endpoint path.

Used by the tests and by `python -m releasegate.export.llamacpp` to serve the demo on 127.0.0.1:

    import xllamacpp as xlc
    p = xlc.CommonParams()
    p.model.path = "demo.gguf"                                   # from releasegate.export.gguf.export_model
    p.lora_adapters = [xlc.CommonAdapterLoraInfo("good.gguf", 1.0)]  # adapter id 0, global scale 1
    p.model_alias = {"demo"}                                     # the name /v1/models reports
    p.hostnames = ["127.0.0.1"]; p.port = 0                      # 0: bind a free port, no race
    p.n_parallel = 4; p.n_ctx = 4 * 256                          # n_ctx is split across the slots
    p.cpuparams.n_threads = p.cpuparams_batch.n_threads = 1
    p.endpoint_metrics = True
    p.n_threads_http = 300                                       # a thread per connection an open loop opens
    p.cache_ram_mib = 0; p.cache_idle_slots = False              # RAM prompt cache ignores per-request LoRA
    p.flash_attn_type = xlc.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED  # CPU FA runs in f16
    p.cache_type_k = p.cache_type_v = xlc.ggml_type.GGML_TYPE_F32
    server = xlc.Server(p)             # blocks until the model is loaded; raises RuntimeError if it fails
    server.listening_address           # "http://127.0.0.1:PORT"
    del server                         # ~Server terminates the loop and joins the thread

Requests choose the adapter strength per request: `"lora": [{"id": 0, "scale": 0.0}]` is the base model.

`start_server(..., speculative=Speculative("draft", draft_gguf))` decodes speculatively (`_llamacpp_spec`).
`launch_server` runs the same server in a child process (`--gguf FILE --port 0`) whose peak memory is its own.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from dataclasses import field
from pathlib import Path
from typing import Any

from ..border.files import read_capped, replace_file
from ..data_classes import dataclass
from ..errors import InputError
from ..extras import require
from ._gguf_llama import OUTTYPES
from ._llamacpp_spec import (
    SPECULATIVE_KINDS,
    Speculative,
    add_speculative_arguments,
    apply_speculative,
    check_speculating,
    check_speculative_arguments,
    speculative_from_arguments,
)
from ._serve import (
    ServerProcess,
    child_environment,
    demo_path,
    die_with_parent,
    existing_dir,
    existing_file,
    health_ok,
    http_get_json,
    run_cli,
    serve_until_interrupted,
    stop_group,
    wait_for_child,
)
from .gguf import NEEDS, export_lora, export_model

__all__ = ["LlamaCppServer", "start_server", "wait_healthy", "export_for_serving", "merge_adapter", "Speculative",
           "SPECULATIVE_KINDS", "ServerProcess", "launch_server"]

XllamacppServer = Any
"""An xllamacpp.Server (the xllamacpp wheel has no type information): it serves while a reference to it lives."""

SLOT_CTX = 256  # the demo model's max_position_embeddings
HTTP_THREADS = 300
"""llama.cpp serves each connection on one HTTP thread (--threads-http, by default max(n_parallel + 2, cores - 1)):
a request on a connection beyond them waits, for seconds, until an idle one times out. An open loop opens up to
load.concurrency connections (256 by default), so the server gets a thread for each."""


def export_for_serving(base: Path, adapters: list[Path], out_dir: Path, outtype: str = "f32", *,
                       merge: bool = False) -> tuple[Path, list[Path]]:
    """A model directory and peft adapters as GGUF files in out_dir (f32: the same arithmetic as HF float32).

    merge: one adapter merged into the base (`merge_adapter`) and exported as one model, no LoRA files.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    if merge:
        if len(adapters) != 1:
            raise ValueError(f"merge takes exactly one adapter, got {len(adapters)}")
        merged = merge_adapter(base, adapters[0], out_dir / f"{base.name}+{adapters[0].name}")
        return export_model(merged, out_dir / f"{merged.name}.gguf", outtype=outtype), []
    model = export_model(base, out_dir / f"{base.name}.gguf", outtype=outtype)
    loras = [export_lora(a, out_dir / f"lora-{a.name}.gguf", base=base, outtype="f32") for a in adapters]
    return model, loras


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json",
                   "tokenizer.model")


def merge_adapter(base: Path, adapter: Path, out_dir: Path) -> Path:
    """base + peft adapter merged in float32 (`merge_and_unload`), saved as a float32 model directory.

    The tokenizer files are copied byte for byte (a tokenizer's save_pretrained may rewrite them), so the
    merged model tokenizes exactly as the base does; an adapter that ships its own (a chat template that renders
    tools) gives its files, as the hf backend reads them. Serves as the merged checkpoint for vLLM too.
    """
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
    merged = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
    merged.save_pretrained(str(out_dir))
    source = Path(adapter) if any((Path(adapter) / f).is_file() for f in TOKENIZER_FILES[:2]) else Path(base)
    for name in TOKENIZER_FILES:
        if (source / name).is_file():  # read as a regular file: a link to /dev/zero is refused, not copied
            replace_file(out_dir / name, read_capped(source / name, what=f"tokenizer file {name}"),
                         what=f"tokenizer file {name}")
    return out_dir


@dataclass
class LlamaCppServer:
    """A running in-process llama.cpp server. `base_url` is the OpenAI-compatible root (ends in /v1)."""

    base_url: str
    root_url: str
    model: str
    port: int
    model_path: Path
    lora_paths: list[Path]
    start_seconds: float
    _server: XllamacppServer = field(default=None, repr=False)

    def stop(self) -> None:
        """Stop serving: dropping the last reference runs ~Server, which ends the loop and joins its thread."""
        self._server = None


def start_server(
    model_path: Path,
    lora_paths: list[Path] | tuple[Path, ...] = (),
    *,
    alias: str = "demo",
    port: int = 0,
    n_parallel: int = 4,
    slot_ctx: int = SLOT_CTX,
    threads: int = 1,
    http_threads: int = HTTP_THREADS,
    verbosity: int = 2,
    exact_attention: bool = True,
    embeddings: bool = False,
    speculative: Speculative | None = None,
) -> LlamaCppServer:
    """Start llama.cpp's server on 127.0.0.1 and a free port; returns once /health answers ok.

    verbosity: llama.cpp log threshold (1 errors, 2 + warnings, 3 + per-request info), written to stderr.
    embeddings: also serve /v1/embeddings (llama.cpp's --embeddings), mean-pooled; completions still answer.
    speculative: decode with a draft model or n-gram lookup (`Speculative`); /metrics then counts the drafted
    and accepted tokens (llamacpp:spec_decode_*) and each answer's "timings" has draft_n, draft_n_accepted.
    A draft llama.cpp will not use (another vocabulary) is a RuntimeError, not a server that does not speculate.
    """
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = str(model_path)
    params.lora_adapters = [xlc.CommonAdapterLoraInfo(str(p), 1.0) for p in lora_paths]
    params.model_alias = {alias}
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_parallel = n_parallel
    params.n_ctx = n_parallel * slot_ctx
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.endpoint_metrics = True
    params.n_threads_http = http_threads
    # The host-RAM prompt cache (llama.cpp's --cache-ram, on by default) restores KV computed under one
    # per-request LoRA scale for a request with another (ggml-org/llama.cpp#26207, #27148): the wrong
    # adapter leaks into answers. Off; the per-slot prefix cache stays on and does check the LoRA.
    params.cache_ram_mib = 0
    params.cache_idle_slots = False
    if exact_attention:
        # CPU flash attention (on by default, "auto") computes in f16: logprobs drift ~2e-3 from HF float32
        # and near-tie greedy picks flip. Without it, and with an f32 K/V cache, the drift is ~1e-5.
        params.flash_attn_type = xlc.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED
        params.cache_type_k = xlc.ggml_type.GGML_TYPE_F32
        params.cache_type_v = xlc.ggml_type.GGML_TYPE_F32
    if embeddings:
        params.embedding = True
        params.pooling_type = xlc.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
    if speculative is not None:
        apply_speculative(params, speculative, threads=threads, exact_attention=exact_attention)
    params.verbosity = verbosity
    start = time.perf_counter()
    server = xlc.Server(params)
    root = server.listening_address.rstrip("/")
    try:
        wait_healthy(root)
        if speculative is not None:
            check_speculating(root, speculative)
    except BaseException:
        del server
        raise
    elapsed = time.perf_counter() - start
    return LlamaCppServer(
        base_url=root + "/v1", root_url=root, model=alias, port=int(root.rsplit(":", 1)[1]),
        model_path=Path(model_path), lora_paths=[Path(p) for p in lora_paths], start_seconds=elapsed, _server=server,
    )


def launch_server(
    model_path: Path,
    lora_paths: list[Path] | tuple[Path, ...] = (),
    *,
    speculative: Speculative | None = None,
    n_parallel: int = 4,
    threads: int = 1,
    slot_ctx: int = SLOT_CTX,
    alias: str = "demo",
    embeddings: bool = False,
    log_path: Path,
    timeout: float = 120,
) -> ServerProcess:
    """`start_server` in a child process of its own (`python -m releasegate.export.llamacpp --gguf ...`), so that
    its memory is its own to measure (`peak_memory_bytes()`) and stopping it frees everything; returns once it
    has printed its address and /health answers. Its output goes to log_path. Raises RuntimeError with the end
    of that log when the child exits first or is not serving within `timeout` seconds."""
    command = [sys.executable, "-m", MODULE, *_child_arguments(model_path, lora_paths, speculative),
               "--port", "0", "--parallel", str(n_parallel), "--threads", str(threads), "--slot-ctx", str(slot_ctx),
               "--alias", alias] + (["--embeddings"] if embeddings else [])
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=child_environment(), start_new_session=True, preexec_fn=die_with_parent)
    found: list[str] = []
    try:
        wait_for_child(lambda: _serving(log_path, found), process, log_path, timeout=timeout,
                       what=f"llama.cpp server (pid {process.pid})")
    except BaseException:
        stop_group(process, 10.0)
        raise
    return ServerProcess(base_url=found[0] + "/v1", root_url=found[0], model=alias, pid=process.pid,
                         log_path=log_path, start_seconds=time.perf_counter() - start, _process=process)


_SERVING = re.compile(r"^serving .* at (http://127\.0\.0\.1:\d+)/v1\s", re.MULTILINE)


def _serving(log_path: Path, found: list[str]) -> bool:
    """Whether the child has printed its address (kept in `found`) and that address answers /health."""
    if not found:
        match = _SERVING.search(log_path.read_text(encoding="utf-8", errors="replace"))
        if match is None:
            return False
        found.append(match.group(1))
    return health_ok(found[0])


def _child_arguments(model_path: Path, lora_paths: list[Path] | tuple[Path, ...],
                     speculative: Speculative | None) -> list[str]:
    """The CLI arguments that serve these files, as `start_server` would."""
    args = ["--gguf", str(Path(model_path).resolve())]
    for lora in lora_paths:
        args += ["--lora-gguf", str(Path(lora).resolve())]
    return args + (speculative.cli_arguments() if speculative is not None else [])


def wait_healthy(root_url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            status, body = http_get_json(root_url + "/health", timeout=5)
            if status == 200 and isinstance(body, dict) and body.get("status") == "ok":
                return
        except (OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"llama.cpp server at {root_url} not healthy after {timeout:.0f}s")
        time.sleep(0.05)




def main(argv: list[str] | None = None) -> None:
    """Export a model and its peft adapters to GGUF, then serve them with llama.cpp on 127.0.0.1 until Ctrl-C
    (default: the demo model with its good adapter), or serve prebuilt GGUF files (--gguf). Requests pick an
    adapter's strength per request with "lora": [{"id": 0, "scale": 1.0}] (ids in --adapter order)."""
    parser = _parser()
    args = parser.parse_args(argv)
    _check_args(parser, args)
    speculating = check_speculative_arguments(parser, args)
    exporting = args.gguf is None or args.draft is not None
    try:
        require("serving with llama.cpp", "xllamacpp", *(NEEDS if exporting else ()),
                *(("transformers", "peft") if args.merge else ()))
    except InputError as exc:  # a missing extra: one line, exit 2, as the releasegate command says it
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    model, loras = _model_files(args)
    speculative = _speculative(args) if speculating else None
    server = start_server(model, loras, alias=args.alias, port=args.port, n_parallel=args.parallel,
                          slot_ctx=args.slot_ctx, threads=args.threads, http_threads=args.http_threads,
                          embeddings=args.embeddings, speculative=speculative)
    spec = f"  speculative={speculative.kind}" if speculative else ""
    spec += "  +/v1/embeddings" if args.embeddings else ""
    serve_until_interrupted(server, f"serving {model.name} (+{len(loras)} LoRA) at {server.base_url}  "
                                    f"model={server.model}{spec}  Ctrl-C stops")


def _parser() -> argparse.ArgumentParser:
    base = demo_path("base")
    parser = argparse.ArgumentParser(prog=PROG, description=main.__doc__)
    parser.add_argument("--base", type=existing_dir, default=None, metavar="DIR",
                        help=f"the Hugging Face model directory to export (default: the demo model of the checkout "
                             f"releasegate was installed from, {base}; required where there is none)")
    parser.add_argument("--adapter", type=existing_dir, action="append", default=None, metavar="DIR",
                        help="a peft adapter directory, served as LoRA; repeatable, the first is id 0 (default: "
                             "the demo's good adapter, with the demo base)")
    parser.add_argument("--merge", action="store_true", help="serve the one adapter merged into the base, no LoRA")
    parser.add_argument("--gguf", type=existing_file, default=None, metavar="FILE",
                        help="serve this prebuilt GGUF model file (nothing is exported; not with --base, --adapter "
                             "or --merge)")
    parser.add_argument("--lora-gguf", type=existing_file, action="append", default=[], metavar="FILE",
                        help="a prebuilt GGUF LoRA file for --gguf; repeatable, the first is id 0")
    parser.add_argument("--quant", choices=OUTTYPES, default="f32",
                        help="the type exported weights are written in (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=Path("build/gguf"), metavar="DIR",
                        help="where the GGUF files are written (default: %(default)s in the working directory)")
    add_speculative_arguments(parser, draft_quant="--quant")
    _server_arguments(parser)
    return parser


def _server_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--alias", default="demo", metavar="NAME",
                        help="the model name /v1/models reports and requests send (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8080, help="port on 127.0.0.1, 0 for any free one "
                                                               "(default: %(default)s)")
    parser.add_argument("--parallel", type=int, default=4, metavar="N",
                        help="requests decoded at once, llama.cpp's slots (default: %(default)s)")
    parser.add_argument("--slot-ctx", type=int, default=SLOT_CTX, metavar="N",
                        help="tokens of context each slot holds (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=1, metavar="N",
                        help="CPU threads for decoding (default: %(default)s)")
    parser.add_argument("--http-threads", type=int, default=HTTP_THREADS, metavar="N",
                        help="HTTP threads, one per client connection (default: %(default)s)")
    parser.add_argument("--embeddings", action="store_true",
                        help="also serve /v1/embeddings (mean-pooled), for the response-cache probe's "
                             "embeddings: {base_url: ..., model: ALIAS}; completions still answer")


def _check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Usage errors before anything is exported."""
    if args.gguf is not None and (args.base is not None or args.adapter is not None or args.merge):
        parser.error("--gguf serves a prebuilt file: --base, --adapter and --merge export one")
    if args.gguf is None and args.lora_gguf:
        parser.error("--lora-gguf goes with --gguf (with --base, --adapter exports the LoRA)")
    if args.gguf is None and args.base is None and demo_path("base") is None:
        parser.error("--base or --gguf is required: this installation has no demo model")


def _model_files(args: argparse.Namespace) -> tuple[Path, list[Path]]:
    """The model and LoRA files to serve: prebuilt (--gguf), else exported to --out."""
    if args.gguf is not None:
        return args.gguf, list(args.lora_gguf)
    base = args.base or demo_path("base")
    assert base is not None  # _check_args asks for --base or --gguf where there is no demo model
    adapters = args.adapter
    if adapters is None:
        good = demo_path("adapters/good")
        adapters = [good] if good is not None and args.base is None else []
    return export_for_serving(base, adapters, args.out, outtype=args.quant, merge=args.merge)


def _speculative(args: argparse.Namespace) -> Speculative:
    """The speculative settings the arguments name; an HF draft directory is exported to --out first."""
    draft = args.draft_gguf
    if args.draft is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        draft = export_model(args.draft, args.out / f"draft-{args.draft.name}.gguf", outtype=args.quant)
    return speculative_from_arguments(args, draft)


MODULE = "releasegate.export.llamacpp"
PROG = f"python -m {MODULE}"

if __name__ == "__main__":
    run_cli(PROG, main)
