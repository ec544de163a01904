"""The run manifest (hashes of every input, versions, seeds, host), `releasegate verify`, and secret redaction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import write_jsonl
from releasegate.inputs.config import load_config
from releasegate.record.records import CaseRecord, RunDir, RunInfo
from releasegate.redaction import REDACTED, add_secret, redact_error
from releasegate.run.manifest import build_manifest, compare_manifest, target_fingerprint


def run_project(project: Path, cli, run_id: str = "r") -> RunDir:
    code, _, err = cli("check", "-c", project / "releasegate.yaml", "--run-id", run_id, "--no-progress")
    assert code in (0, 1, 3), err
    return RunDir(project / "reports" / run_id)


def test_manifest_hashes_every_input(project, cli):
    schema = project / "suites" / "ticket.schema.json"
    schema.write_text('{"type": "object"}')
    suite = project / "suites" / "example.jsonl"
    rows = [json.loads(line) for line in suite.read_text().splitlines()]
    rows[0]["format"] = [{"type": "json_schema", "schema": "ticket.schema.json"}]
    write_jsonl(suite, rows)
    run = run_project(project, cli)
    manifest = json.loads((run.path / "manifest.json").read_text())
    roles = {e["role"]: e for e in manifest["inputs"]}
    assert set(roles) == {"config", "suite", "schema", "rubric", "forbidden", "responses"}
    assert roles["schema"]["path"] == str(schema.resolve())
    assert all(len(e["sha256"]) == 64 for e in manifest["inputs"])
    assert manifest["packages"]["releasegate"] and manifest["packages"]["jsonschema"]
    assert manifest["seeds"]["seed"] == 0 and manifest["host"]["cpus"]
    assert manifest["target"]["fingerprint"]


def test_verify_says_what_changed(project, cli):
    run = run_project(project, cli)
    code, out, _ = cli("verify", run.path)
    assert code == 0 and "nothing changed" in out
    (project / "suites" / "example.jsonl").write_text((project / "suites" / "example.jsonl").read_text() + "\n")
    (project / "rubrics" / "forbidden.yaml").unlink()
    code, out, _ = cli("verify", run.path)
    assert code == 1
    assert "example.jsonl" in out and "changed" in out and "forbidden.yaml" in out and "missing" in out
    code, out, _ = cli("verify", run.path, "--json")
    changes = {(c["role"], c["change"]) for c in json.loads(out)["changes"]}
    assert changes == {("suite", "changed"), ("forbidden", "missing")}


def test_verify_reports_package_versions(project, cli):
    run = run_project(project, cli)
    manifest = json.loads((run.path / "manifest.json").read_text())
    manifest["packages"]["jsonschema"] = "0.0.1"
    (run.path / "manifest.json").write_text(json.dumps(manifest))
    code, out, _ = cli("verify", run.path, "--json")
    assert code == 1
    assert json.loads(out)["changes"] == [
        {"role": "package", "path": "jsonschema", "change": "version", "before": "0.0.1", "after": manifest_now("jsonschema")}
    ]


def manifest_now(name: str) -> str:
    from importlib.metadata import version

    return version(name)


@pytest.mark.parametrize("setup", ["nothing", "no_manifest", "garbage"])
def test_verify_rejects_what_is_not_a_run(tmp_path, cli, setup):
    if setup == "no_manifest":
        (tmp_path / "run.json").write_text("{}")
    if setup == "garbage":
        (tmp_path / "manifest.json").write_text("[1, 2")
    code, _, err = cli("verify", tmp_path)
    assert code == 2 and str(tmp_path) in err and len(err.strip().splitlines()) == 1


def fake_model(root: Path) -> Path:
    """A model directory as from save_pretrained, no real weights needed: only hashing is under test."""
    root.mkdir(parents=True)
    (root / "config.json").write_text('{"model_type": "llama"}')
    (root / "model.safetensors").write_bytes(b"\x00weights" * 1000)
    (root / "tokenizer.json").write_text('{"model": {}}')
    (root / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ messages }}", "eos_token": "</s>"}))
    (root / ".cache").mkdir()
    (root / ".cache" / "junk").write_text("ignored")
    return root


def hf_config(tmp_path: Path, extra: str = "") -> Path:
    base = tmp_path / "base"
    if not base.exists():
        fake_model(base)
        adapter = tmp_path / "adapter"
        adapter.mkdir()
        (adapter / "adapter_config.json").write_text('{"r": 8}')
        (adapter / "adapter_model.safetensors").write_bytes(b"lora" * 100)
        write_jsonl(tmp_path / "suite.jsonl", [{"id": "a", "prompt": "p", "expected": "x"}])
        (tmp_path / "rubric.yaml").write_text("criteria: [{metric: accuracy, op: '>=', threshold: 0.5}]\n")
    path = tmp_path / "releasegate.yaml"
    path.write_text(f"target: {{backend: hf, base: base, adapter: adapter{extra}}}\nsuites: [{{path: suite.jsonl}}]\n"
                    "rubric: rubric.yaml\n")
    return path


def test_hf_model_adapter_tokenizer_and_chat_template_are_hashed(tmp_path):
    manifest = build_manifest(load_config(hf_config(tmp_path)), run_id="x")
    roles = sorted(e["role"] for e in manifest["inputs"] if e["role"].startswith(("model", "adapter")))
    assert roles == ["adapter:config", "adapter:weights", "model:chat_template", "model:config", "model:tokenizer",
                     "model:tokenizer", "model:weights"]
    assert not any(".cache" in e["path"] for e in manifest["inputs"])
    assert compare_manifest(manifest) == []

    config = json.loads((tmp_path / "base" / "tokenizer_config.json").read_text())
    config["chat_template"] = "{{ messages | tojson }}"
    (tmp_path / "base" / "tokenizer_config.json").write_text(json.dumps(config))
    (tmp_path / "adapter" / "adapter_model.safetensors").write_bytes(b"other" * 100)
    (tmp_path / "base" / "generation_config.json").write_text("{}")
    changes = {(c["role"], c["change"], Path(c["path"]).name) for c in compare_manifest(manifest, packages=False)}
    assert changes == {
        ("model:chat_template", "changed", "tokenizer_config.json#chat_template"),
        ("model:tokenizer", "changed", "tokenizer_config.json"),
        ("adapter:weights", "changed", "adapter_model.safetensors"),
        ("model:config", "added", "generation_config.json"),
    }


def test_relative_config_path_hashes_the_same_files(tmp_path, monkeypatch):
    absolute = build_manifest(load_config(hf_config(tmp_path)), run_id="x")
    monkeypatch.chdir(tmp_path)
    relative = build_manifest(load_config(Path("releasegate.yaml")), run_id="x")
    assert relative["inputs"] == absolute["inputs"] and relative["target"] == absolute["target"]


def test_target_fingerprint_follows_outputs_not_performance_knobs(tmp_path):
    def fingerprint(extra: str = "") -> str:
        config = load_config(hf_config(tmp_path, extra))
        return target_fingerprint(config.target, build_manifest(config, run_id="x")["inputs"])

    plain = fingerprint()
    assert fingerprint(", batch_size: 2, threads: 2") == plain
    assert fingerprint(", merge: true") != plain
    assert fingerprint(", dtype: bfloat16") != plain
    (tmp_path / "base" / "model.safetensors").write_bytes(b"retrained")
    assert fingerprint() != plain


def test_hub_id_without_local_copy_is_not_fingerprinted(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    path = hf_config(tmp_path)
    path.write_text(path.read_text().replace("base: base, adapter: adapter", "base: nobody/no-such-model"))
    manifest = build_manifest(load_config(path), run_id="x")
    hub = [e for e in manifest["inputs"] if e["path"].startswith("hub:")]
    assert hub and hub[0]["sha256"] is None and manifest["target"]["fingerprint"] is None


# -- secrets ----------------------------------------------------------------------------------------------

def test_redact_error_masks_credentials():
    add_secret("sk-live-registered-0123456789")
    text = ("HTTP 401 for sk-live-registered-0123456789: Authorization: Bearer abcdefghijklmnop "
            "https://user:hunter2@host/v1?api_key=XYZ123456 password=pw12345")
    out = redact_error(text)
    for secret in ("sk-live-registered-0123456789", "abcdefghijklmnop", "hunter2", "XYZ123456", "pw12345"):
        assert secret not in out
    assert out.count(REDACTED) >= 5 and "HTTP 401" in out and "host/v1" in out
    assert redact_error("no secrets in a token count of 12") == "no secrets in a token count of 12"


def test_secrets_never_reach_the_run_directory(tmp_path):
    secret = "sk-SENTINEL-9d2e7c5a1b-dont-write"
    add_secret(secret)
    run = RunDir(tmp_path / "r")
    run.create()
    run.append([CaseRecord(case_id="a", suite="s", input={"prompt": "p"}, error="http_401",
                           error_message=f"server said: invalid key {secret}")])
    run.write_info(RunInfo(run_id="r", created_at="t", backend="openai",
                           target=f"m at https://admin:{secret[3:]}@example.invalid/v1 (chat)"))
    run.write_text("report.md", f"echo {secret}")
    for path in run.path.iterdir():
        assert secret.encode() not in path.read_bytes() and secret[3:].encode() not in path.read_bytes(), path
    assert run.read_records()[0].error_message == f"server said: invalid key {REDACTED}"
    assert "admin:" not in run.read_info().target


def test_the_cli_error_line_is_redacted(tmp_path, cli, monkeypatch):
    monkeypatch.setenv("RG_KEY_FOR_REDACTION_TEST", "sk-redact-me-please-123456")
    add_secret("sk-redact-me-please-123456")
    code, _, err = cli("validate", "-c", tmp_path / "sk-redact-me-please-123456.yaml")
    assert code == 2 and "sk-redact-me-please-123456" not in err and REDACTED in err


def test_verify_says_unverified_when_inputs_could_not_be_hashed(tmp_path, cli):
    """A hub id that was not on disk, or the model behind an endpoint, cannot be checked: not 'nothing changed'."""
    from releasegate.run.manifest import FORMAT, package_versions

    for backend, inputs in (("hf", [{"role": "model", "path": "hub:org/model", "sha256": None}]), ("openai", [])):
        run = tmp_path / backend
        run.mkdir()
        (run / "manifest.json").write_text(json.dumps({
            "format": FORMAT, "inputs": inputs, "packages": package_versions(), "target": {"backend": backend}}))
        code, out, _ = cli("verify", run, "--json")
        result = json.loads(out)
        assert code == 3 and result["outcome"] == "unverified" and result["changes"] == [], backend
        assert result["not_hashed"]
