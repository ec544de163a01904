"""pytest plugin (registered in conftest.py): `llamacpp_server`, a real llama.cpp server for the session, and
`llamacpp_guard`, the demo guard model served the same way.

The demo base model and its `good` adapter are exported to GGUF in a session temp dir and served in-process
by xllamacpp on 127.0.0.1 (free port), 4 parallel slots, 1 thread, Prometheus /metrics on. The fixture yields
a `llamacpp.LlamaCppServer`: `.base_url` ("http://127.0.0.1:PORT/v1"), `.model` ("demo"), `.port`,
`.root_url` (no /v1: /health, /metrics, /tokenize), `.lora_paths` (adapter id = index; per request
`"lora": [{"id": 0, "scale": 0.0}]` is the base model, scale 1.0 the `good` adapter, which is also the default).
"""

from __future__ import annotations

import os

import pytest

import llamacpp


@pytest.fixture(scope="session")
def llamacpp_server(tmp_path_factory):
    if os.environ.get("CI"):  # in CI a missing piece is a failure, never a silent skip
        import gguf  # noqa: F401
        import xllamacpp  # noqa: F401

        assert llamacpp.demo_available(), f"demo model not built: {llamacpp.DEMO}"
    pytest.importorskip("xllamacpp", reason="llama.cpp bindings (pip install xllamacpp) not installed")
    pytest.importorskip("gguf", reason="gguf (pip install gguf) not installed")
    if not llamacpp.demo_available():
        pytest.skip(f"demo model not built: {llamacpp.DEMO}")
    model, loras = llamacpp.export_demo(tmp_path_factory.mktemp("llamacpp"))
    server = llamacpp.start_server(model, loras)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def llamacpp_guard(tmp_path_factory):
    """The demo guard (models/demo/guard) exported to GGUF (f32) and served like `llamacpp_server`, alias "guard":
    a config's guard takes its `.base_url` and `.model`; it answers `safe` or `unsafe` and a code on the next line."""
    guard = llamacpp.DEMO / "guard"
    if os.environ.get("CI"):
        import gguf  # noqa: F401
        import xllamacpp  # noqa: F401
    pytest.importorskip("xllamacpp", reason="llama.cpp bindings (pip install xllamacpp) not installed")
    pytest.importorskip("gguf", reason="gguf (pip install gguf) not installed")
    assert (guard / "config.json").is_file(), f"demo guard not built: {guard} (scripts/build_demo_guard.py)"
    from releasegate.export.llamacpp import export_for_serving

    model, _ = export_for_serving(guard, [], tmp_path_factory.mktemp("llamacpp-guard"))
    server = llamacpp.start_server(model, [], alias="guard")
    try:
        yield server
    finally:
        server.stop()
