"""What `python -m releasegate.export.llamacpp` and `... .vllm` share: the demo's defaults, one-line errors,
serving once their server is up, and a server run as a child process in a process group of its own."""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any, Protocol

from ..border.http import HttpError, Limits, fetch
from ..border.json_reader import NotJson, read_json
from ..data_classes import dataclass

__all__ = ["serve_until_interrupted", "demo_path", "existing_dir", "existing_file", "run_cli", "ServerProcess",
           "stop_group", "log_tail", "wait_for_child", "health_ok", "http_get", "http_get_json",
           "child_environment"]

DEMO = Path(__file__).resolve().parents[3] / "models" / "demo"
"""The demo model of a checkout (an editable install: the package lives in its src/); a wheel does not hold it."""


def demo_path(part: str) -> Path | None:
    """`models/demo/<part>` of the checkout the package was installed from, whatever the working directory;
    None when the installation has no demo model."""
    path = DEMO / part
    return path if path.is_dir() else None


def existing_dir(text: str) -> Path:
    """An argparse type: a directory that exists (a missing one is a usage error, one line, exit 2)."""
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: no such directory")
    return path


def existing_file(text: str) -> Path:
    """An argparse type: a file that exists (a missing one is a usage error, one line, exit 2)."""
    path = Path(text)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{text}: no such file")
    return path


def run_cli(prog: str, main: Callable[[list[str] | None], None], argv: list[str] | None = None, *,
            extra: str = "llamacpp") -> None:
    """Run a serving CLI: a missing package, a bad path, a port in use or a server that will not start is one
    line on stderr and exit 2 (usage or input) or 4 (the server could not run), never a traceback; Ctrl-C 130."""
    try:
        main(argv)
    except KeyboardInterrupt:
        sys.exit(130)
    except ImportError as exc:
        print(f"{prog}: error: {exc.name or exc} is not installed (pip install 'releasegate[{extra}]')",
              file=sys.stderr)
        sys.exit(2)
    except (FileNotFoundError, NotADirectoryError, ValueError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except (OSError, RuntimeError, TimeoutError) as exc:
        print(f"{prog}: error: the server could not start: {exc}", file=sys.stderr)
        sys.exit(4)


class _Server(Protocol):
    """A server `serve_until_interrupted` keeps up: anything with `stop()`."""

    def stop(self) -> None: ...


def serve_until_interrupted(server: _Server, line: str) -> None:
    """Say where the server listens, then keep it up until Ctrl-C or SIGTERM, either of which stops it. Started
    under nohup or as a background job, the process has SIGINT ignored and `kill` (SIGTERM) is how it is stopped;
    without stopping the server then, a vLLM server (in a process group of its own) would outlive this process."""
    print(line, flush=True)
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)  # a KeyboardInterrupt, as Ctrl-C
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
    finally:
        signal.signal(signal.SIGTERM, previous)


@dataclass
class ServerProcess:
    """A server running as a child process (its own process group). `base_url` ends in /v1; `root_url` has
    /health and /metrics. Stops on `stop()` or at the end of a `with` block."""

    base_url: str
    root_url: str
    model: str
    pid: int
    log_path: Path
    start_seconds: float
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def peak_memory_bytes(self) -> int | None:
        """The child's peak resident memory so far (VmHWM in /proc/PID/status); None once it has exited or
        where /proc cannot be read (not Linux)."""
        return peak_memory_bytes(self.pid) if self._process is not None else None

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM to the child's process group, SIGKILL after `grace` seconds; a second call does nothing."""
        process, self._process = self._process, None
        if process is not None:
            stop_group(process, grace)

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def peak_memory_bytes(pid: int) -> int | None:
    """VmHWM (peak resident set) of a process, in bytes; None when its status cannot be read."""
    try:
        text = Path(f"/proc/{pid}/status").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("VmHWM:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                return int(parts[1]) * (1024 if parts[2:] == ["kB"] else 1)
    return None


def die_with_parent() -> None:
    """In a child before exec (Popen's preexec_fn): SIGTERM it when the process that started it dies, however
    that ends (SIGKILL, SIGTERM without cleanup), so no server is left serving. Linux only; elsewhere nothing."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def tree_peak_memory_bytes(pid: int) -> int | None:
    """The sum of VmHWM over a process and its descendants (vLLM's engine runs in a child of the server): an
    upper bound of their peak together, as each one's peak may fall at another moment. None when the process's
    own status cannot be read."""
    own = peak_memory_bytes(pid)
    if own is None:
        return None
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text(encoding="ascii", errors="replace").rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    total, todo = own, list(children.get(pid, []))
    while todo:
        child = todo.pop()
        total += peak_memory_bytes(child) or 0
        todo.extend(children.get(child, []))
    return total


def wait_for_child(ready: Callable[[], bool], process: subprocess.Popen[bytes], log_path: Path, *, timeout: float,
                   what: str, interval: float = 0.1) -> None:
    """Poll `ready()` until it is true; RuntimeError with the end of the child's log if the child exits first or
    `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode} before serving: {log_tail(log_path)}")
        if ready():
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not serving after {timeout:.0f}s: {log_tail(log_path)}")
        time.sleep(interval)


def health_ok(root_url: str) -> bool:
    """Whether GET {root_url}/health answers 200 (within 5 s, read through the border's HTTP reader)."""
    try:
        return fetch(root_url + "/health", limits=_loopback(5)).status == 200
    except HttpError:
        return False


def log_tail(log_path: Path, lines: int = 15) -> str:
    """The log's path and its last lines, for an error that says why a server did not come up."""
    text = log_path.read_text(encoding="utf-8", errors="replace") if log_path.is_file() else ""
    return f"{log_path}:\n" + "\n".join(text.splitlines()[-lines:])


def stop_group(process: subprocess.Popen[bytes], grace: float = 30.0) -> None:
    """SIGTERM to the server's own process group (it started one), SIGKILL if it lingers past `grace` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            process.poll()  # reap it if it is gone already
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def http_get(url: str, timeout: float = 5) -> tuple[int, str]:
    """GET a loopback URL through the border's HTTP reader (`timeout` seconds in all, at most 1 MiB, no
    redirect): the status and the body, an HTTP error's too; ConnectionError when no reply could be read."""
    try:
        reply = fetch(url, limits=_loopback(timeout))
    except HttpError as exc:
        raise ConnectionError(str(exc)) from None
    return reply.status, reply.body.decode("utf-8", "replace")


def http_get_json(url: str, timeout: float = 5) -> tuple[int, Any]:
    """`http_get`, the body read as JSON within the border's size and depth limits: (status, value), the value
    None when the body is no such JSON."""
    status, text = http_get(url, timeout)
    try:
        return status, read_json(text, max_bytes=1024 * 1024)
    except NotJson:
        return status, None


def _loopback(seconds: float) -> Limits:
    """A loopback GET's limits: a server's /health or /slots answer is a few KB."""
    return Limits(deadline_s=seconds, read_timeout_s=seconds, max_bytes=1024 * 1024)


def child_environment() -> dict[str, str]:
    """This environment, with this releasegate first on the child's path: the child serves with the code that
    launched it, not another installation the interpreter would find first."""
    package_root = str(Path(__file__).resolve().parents[2])  # the directory holding releasegate/
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": package_root + (os.pathsep + path if path else "")}
