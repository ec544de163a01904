"""The demo's tool adapters on a real model (transformers + peft, models/demo/adapters/tools_*): examples/tools_model.yaml
passes `tools_good` and fails `tools_regressed`, whose calls name the right tools with another order id, on
argument match while its arguments still fit the tools' schemas; the same merged into the base, exported to
GGUF and served by llama.cpp with the adapter's tool template (`--jinja`), through the served tool path."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import ROOT
from releasegate.record.records import RunDir

pytestmark = pytest.mark.slow

DEMO = ROOT / "models" / "demo"
EXAMPLE = ROOT / "examples" / "tools_model.yaml"


def _decided(cli, config: Path, run_id: str, out_dir: Path, *extra: str) -> tuple[int, dict]:
    code, out, err = cli("check", "-c", config, "--no-progress", "--json", "--run-id", run_id,
                         "--set", f"output.dir={out_dir}", *extra)
    assert "Traceback" not in err, err
    return code, json.loads(out)


def _verdicts(report: dict) -> dict[str, str]:
    return {c["metric"]: c["verdict"] for c in report["criteria"]}


def _assert_good_passes_and_regressed_fails(good: tuple[int, dict], regressed: tuple[int, dict]) -> None:
    (code_g, report_g), (code_r, report_r) = good, regressed
    assert code_g == 0, [c for c in report_g["criteria"] if c["verdict"] != "pass"]
    assert code_r == 1, report_r["criteria"]
    verdicts = _verdicts(report_r)
    # the regression is in the arguments' values: the right tools are called, with schema-valid arguments
    assert verdicts["tool_call_accuracy"] == verdicts["tool_match_rate"] == "fail"
    assert verdicts["tool_args_schema_rate"] == verdicts["tool_miss_rate"] == verdicts["tool_unwanted_rate"] == "pass"
    good_rows, bad_rows = report_g["tools"], report_r["tools"]
    assert good_rows["tool_call_accuracy"]["value"] > bad_rows["tool_call_accuracy"]["value"]


def _calls(run: RunDir) -> dict[str, list]:
    return {r.case_id: r.tool_calls for r in run.read_records()}


def test_the_good_tool_adapter_passes_and_the_regressed_one_fails_in_process(cli, tmp_path):
    good = _decided(cli, EXAMPLE, "good", tmp_path)
    regressed = _decided(cli, EXAMPLE, "regressed", tmp_path,
                         "--set", "target.adapter=../models/demo/adapters/tools_regressed")
    _assert_good_passes_and_regressed_fails(good, regressed)
    # the regressed adapter's lookups name the order without its letter ("1042" for "A-1042")
    calls = _calls(RunDir(tmp_path / "regressed"))
    lookups = [json.loads(turns[0][0]["arguments"]) for case, turns in calls.items() if "lookup" in case]
    assert lookups and all("-" not in a["order_id"] for a in lookups), lookups


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """tools_good and tools_regressed, each merged into the base, exported to GGUF and served by llama.cpp; the
    merged model carries the adapter's tool template, which llama.cpp renders with --jinja (its default)."""
    if os.environ.get("CI"):
        import gguf  # noqa: F401
        import xllamacpp  # noqa: F401
    pytest.importorskip("xllamacpp", reason="llama.cpp bindings (pip install xllamacpp) not installed")
    pytest.importorskip("gguf", reason="gguf (pip install gguf) not installed")
    from releasegate.export.llamacpp import export_for_serving, start_server

    servers = {}
    try:
        for name in ("tools_good", "tools_regressed"):
            model, _ = export_for_serving(DEMO / "base", [DEMO / "adapters" / name], tmp_path_factory.mktemp(name),
                                          merge=True)
            # the merged model's template is the adapter's (the base's renders no tools: llama.cpp would drop them)
            template = (model.parent / f"base+{name}" / "chat_template.jinja").read_text()
            assert template == (DEMO / "adapters" / name / "chat_template.jinja").read_text() and "<tool_call>" in template
            servers[name] = start_server(model, alias=name, n_parallel=2)
        yield servers
    finally:
        for server in servers.values():
            server.stop()


def _served_config(tmp_path: Path, server) -> Path:
    config = tmp_path / f"{server.model}.yaml"
    config.write_text(
        f"target: {{backend: openai, base_url: {server.base_url}, model: {server.model}, mode: chat, "
        f"concurrency: 2, timeout_s: 120}}\n"
        "generation: {max_new_tokens: 80, temperature: 0}\n"
        f"suites: [{{path: {ROOT / 'suites/demo/tools_model.jsonl'}}}]\n"
        f"rubric: {ROOT / 'rubrics/tools_model.yaml'}\n")
    return config


def test_the_good_tool_adapter_passes_and_the_regressed_one_fails_served(cli, tmp_path, served):
    good = _decided(cli, _served_config(tmp_path, served["tools_good"]), "good", tmp_path)
    regressed = _decided(cli, _served_config(tmp_path, served["tools_regressed"]), "regressed", tmp_path)
    _assert_good_passes_and_regressed_fails(good, regressed)


def test_an_adapter_without_the_tool_template_stops_the_run_in_process(cli, tmp_path):
    """The `good` ticket adapter ships no template: the base's renders no tools, so the model would never see them;
    the run stops (exit 4) rather than gating a model that could not call."""
    code, out, err = cli("check", "-c", EXAMPLE, "--no-progress", "--run-id", "untooled", "--set",
                         f"output.dir={tmp_path}", "--set", "target.adapter=../models/demo/adapters/good")
    assert code == 4 and "renders no tools" in err and "Traceback" not in err, err
