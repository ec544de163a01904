"""The served bytes: the files a server loads are hashed into the run's manifest (role `served`), observed when
releasegate's launcher handed them to the server it started, declared (`target.served_files`) for a server
started elsewhere; the attestation says which, an endpoint run with a load phase is attested, and
`verify-attestation` checks those bytes (the real llama.cpp server the tests start)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from releasegate.export.variant_files import ServedFiles
from releasegate.inputs.config import load_config
from releasegate.record.records import RunDir
from releasegate.run.manifest import build_manifest

SUITES = ROOT / "suites" / "demo"


def _endpoint_config(tmp: Path, base_url: str, model: str, served: list[Path], load: str = "") -> Path:
    (tmp / "rubric.yaml").write_text(
        "review: {required_domains: []}\ncriteria:\n  - {metric: error_rate, op: '<=', threshold: 0.0}\n"
        "  - {metric: accuracy, op: '>=', threshold: 0.85}\n")
    files = "".join(f"\n    - {p}" for p in served)
    (tmp / "c.yaml").write_text(
        f"target:\n  backend: openai\n  base_url: {base_url}\n  model: {model}\n  concurrency: 4\n"
        f"  tokenizer: {ROOT / 'models/demo/base'}\n  served_files:{files}\n"
        "generation: {max_new_tokens: 32}\nsuites:\n"
        f"  - {{path: {SUITES / 'tickets_shifted.jsonl'}, answer: {{type: json_fields, fields: [intent, priority]}}}}\n"
        f"rubric: rubric.yaml\n{load}")
    return tmp / "c.yaml"


def test_declared_and_observed_served_files_are_marked_in_the_manifest(tmp_path):
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF weights")
    (tmp_path / "suite.jsonl").write_text('{"id": "a", "messages": [{"role": "user", "content": "q"}], "expected": "a"}\n')
    config = load_config(_endpoint_config(tmp_path, "http://127.0.0.1:9/v1", "m", [gguf]))
    served = [e for e in build_manifest(config, run_id="r")["inputs"] if e["role"].startswith("served")]
    assert [(e["role"], e["name"], e["served"]) for e in served] == [("served:weights", "served/model.gguf", "declared")]
    from releasegate.inputs.variant_plan import VariantSpec
    from releasegate.pipeline.served_variants import _served_target

    lora = tmp_path / "lora.gguf"
    lora.write_bytes(b"lora weights")
    spec = VariantSpec(name="q8", server="llamacpp", base=None, adapter=None, gguf=gguf)
    target = _served_target(config, spec, "http://127.0.0.1:8/v1", "q8", ServedFiles(model=gguf, loras=(lora,)))
    observed = dataclasses.replace(config, target=target)
    rows = [e for e in build_manifest(observed, run_id="r")["inputs"] if e["role"].startswith("served")]
    assert {(e["name"], e["served"]) for e in rows} == {("served/model.gguf", "observed"), ("served/lora.gguf", "observed")}


@pytest.mark.slow
def test_an_endpoint_run_with_a_load_phase_is_attested_and_its_served_gguf_verified(llamacpp_server, cli, tmp_path):
    server = llamacpp_server
    served = [Path(server.model_path), *map(Path, server.lora_paths)]
    config = _endpoint_config(tmp_path, server.base_url, server.model, served,
                              load="load: {concurrency: 2, requests: 6, warmup: 1}\n")
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress", "--json")
    report = json.loads(out)
    assert code == 0, [c for c in report["criteria"] if c["verdict"] != "pass"]
    assert report["load_phase"] and report["metrics"]["ttft_ms_p50"]["n"] == 6  # a load phase in the same run
    run = RunDir(tmp_path / "reports" / "r")
    key = tmp_path / "release.key"
    assert cli("attest", "--generate-key", key)[0] == 0
    envelope = tmp_path / "r.intoto.json"
    code, _, err = cli("attest", run.path, "--key", key, "-o", envelope)
    assert code == 0, err
    import base64

    statement = json.loads(base64.b64decode(json.loads(envelope.read_text())["payload"]))
    assert statement["predicate"]["served_files"]["as"] == "declared"
    names = {s["name"] for s in statement["subject"]}
    assert {f"served/{p.name}" for p in served} <= names
    pub = Path(f"{key}.pub")
    args = [a for p in served for a in ("--artifact", p)]
    code, out, err = cli("verify-attestation", envelope, "--key", pub, *args)
    assert code == 0 and "served files (declared): 2" in out + err, err
    code, _, err = cli("verify-attestation", envelope, "--key", pub, "--artifact", served[0])
    assert code == 1 and served[1].name in err  # the LoRA the server loaded is not among the artifacts
    other = tmp_path / "deploy" / served[0].name
    other.parent.mkdir()
    shutil.copyfile(served[0], other)
    with other.open("r+b") as fh:  # one byte of the GGUF changed before the deploy
        fh.seek(-1, 2)
        last = fh.read(1)
        fh.seek(-1, 2)
        fh.write(bytes([last[0] ^ 1]))
    code, _, err = cli("verify-attestation", envelope, "--key", pub, "--artifact", other, "--artifact", served[1])
    assert code == 1 and "sha256" in err


@pytest.mark.parametrize("served", ["[missing.gguf]", "missing.gguf", "[{a: 1}]", "[" + "x, " * 1001 + "x]"])
def test_a_bad_served_files_list_is_one_line_exit_2_naming_the_field(tmp_path, cli, served):
    config = _endpoint_config(tmp_path, "http://127.0.0.1:9/v1", "m", [])
    config.write_text(config.read_text().replace("  served_files:\n", f"  served_files: {served}\n"))
    code, _, err = cli("validate", "-c", config)
    assert code == 2 and "served_files" in err and "Traceback" not in err, err
