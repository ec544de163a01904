"""The `good` adapter on llama.cpp two ways: served per request as a LoRA (the session's `llamacpp_server`) and
merged into the base as one GGUF (`export_for_serving(merge=True)`), compared with `releasegate compare`."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT
from releasegate.export.llamacpp import export_for_serving, start_server
from test_llamacpp_check import config, run

pytestmark = pytest.mark.slow

DEMO = ROOT / "models" / "demo"


@pytest.fixture(scope="module")
def merged_server(tmp_path_factory):
    pytest.importorskip("xllamacpp", reason="llama.cpp bindings (pip install xllamacpp) not installed")
    model, loras = export_for_serving(DEMO / "base", [DEMO / "adapters" / "good"], tmp_path_factory.mktemp("merged"),
                                      merge=True)
    assert loras == []
    server = start_server(model, loras)
    try:
        yield server
    finally:
        server.stop()


def test_merged_gguf_gives_the_dynamic_loras_answers(llamacpp_server, merged_server, cli, tmp_path):
    merged_target = (f"  backend: openai\n  base_url: {merged_server.base_url}\n  model: {merged_server.model}\n"
                     f"  concurrency: 4\n  tokenizer: {DEMO / 'base'}\n")
    (tmp_path / "dynamic").mkdir()
    (tmp_path / "merged").mkdir()
    code_d, _, dynamic = run(cli, config(tmp_path / "dynamic", llamacpp_server), "dynamic")
    code_m, merged_report, merged = run(cli, config(tmp_path / "merged", merged_server, backend_lines=merged_target),
                                        "merged")
    assert (code_d, code_m) == (0, 0), [c for c in merged_report["criteria"] if c["verdict"] != "pass"]
    _, out, _ = cli("compare", dynamic.path, merged.path, "--json")
    result = json.loads(out)
    assert result["shared_cases"] == 100
    assert result["identical_outputs"] == 100, result
    rows = {r["metric"]: r for r in result["rows"]}
    assert rows["accuracy"]["delta"] == 0 and rows["accuracy"]["verdict"] == "pass"
    # the latency delta is reported (merged saves the adapter's matmuls); its size is a benchmark's business
    assert {"ttft_ms", "tpot_ms", "e2e_ms"} <= rows.keys()
    assert all(rows[m]["n"] == 100 for m in ("ttft_ms", "tpot_ms", "e2e_ms"))
