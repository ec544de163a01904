"""Config composition: `extends:` chains, `--set KEY=VALUE` overrides on check / matrix / validate, what a run
records of them (manifest, config snapshot, comparability key), a resume that applies them, and
`init --endpoint`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from releasegate.errors import InputError
from releasegate.gate.comparability import saved_settings_key
from releasegate.inputs.config import load_config
from releasegate.record.records import RunDir
from releasegate.testing import StubBehaviour, StubServer
from test_resume import interrupt_after, make_project


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err  # one line, no traceback
    return lines[0]


@pytest.fixture
def variant(project: Path) -> Path:
    """project/releasegate.yaml (the scaffolded replay config) extended by variant.yaml."""
    return write(project / "variant.yaml", "extends: releasegate.yaml\ngeneration:\n  temperature: 0.5\n")


# -- extends -----------------------------------------------------------------------------------------------

def test_extends_merges_mappings_key_by_key_replaces_lists_and_null_removes(project, variant):
    write(variant, "extends: releasegate.yaml\n"
                   "target: {batch_size: 2}\n"           # a mapping: merged into the base's target
                   "generation: {temperature: 0.5}\n"
                   "suites: [{path: suites/example.jsonl}]\n"  # a list: replaced whole
                   "cost: null\n")                        # removed: no cost section
    config = load_config(variant)
    base = load_config(project / "releasegate.yaml")
    assert config.raw["target"] == {**base.raw["target"], "batch_size": 2}
    assert config.raw["generation"] == {"max_new_tokens": 64, "temperature": 0.5}
    assert config.raw["suites"] == [{"path": "suites/example.jsonl"}] and config.suites[0].answer is None
    assert "cost" not in config.raw and config.cost is None
    assert "extends" not in config.raw
    assert config.extends == (project / "releasegate.yaml",)
    assert config.rubric == base.rubric  # paths resolve next to the config that is run


def test_a_chain_is_merged_from_the_first_base_and_errors_name_the_file_that_wrote_the_field(project, variant):
    third = write(project / "sub" / "third.yaml", "extends: ../variant.yaml\ngeneration: {max_new_tokens: 9}\n")
    config = load_config(third, base_dir=project)
    assert config.raw["generation"] == {"max_new_tokens": 9, "temperature": 0.5}
    assert config.extends == (project / "variant.yaml", project / "releasegate.yaml")

    write(variant, "extends: releasegate.yaml\n\ngeneration:\n  temperature: -1\n")
    with pytest.raises(InputError) as exc:
        load_config(third)
    assert (exc.value.file, exc.value.line, exc.value.field) == (str(variant), 4, "generation.temperature")


def test_a_cycle_is_refused(project, cli):
    write(project / "a.yaml", "extends: b.yaml\n")
    write(project / "b.yaml", "extends: a.yaml\n")
    write(project / "self.yaml", "extends: self.yaml\n")
    code, _, err = cli("validate", "-c", project / "a.yaml")
    assert code == 2 and "cycle: a.yaml -> b.yaml -> a.yaml" in one_line_error(err)
    code, _, err = cli("validate", "-c", project / "self.yaml")
    assert code == 2 and "cycle: self.yaml -> self.yaml" in one_line_error(err)


def test_a_missing_base_is_exit_2_naming_it(project, cli):
    write(project / "variant.yaml", "\nextends: bases/gone.yaml\n")
    code, _, err = cli("validate", "-c", project / "variant.yaml")
    line = one_line_error(err)
    assert code == 2 and str(project / "bases" / "gone.yaml") in line and "variant.yaml:2" in line


def test_extends_must_name_a_file(project, cli):
    write(project / "variant.yaml", "extends: [releasegate.yaml]\n")
    code, _, err = cli("validate", "-c", project / "variant.yaml")
    assert code == 2 and "field 'extends'" in one_line_error(err)


# -- --set ---------------------------------------------------------------------------------------------------

def test_set_overrides_values_read_as_yaml_and_validate_reports_them(project, variant, cli):
    code, out, err = cli("validate", "-c", variant, "--json", "--set", "generation.max_new_tokens=12",
                         "--set", "target.batch_size=3", "--set", "suites[0].name=renamed", "--set", "seed=")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["suites"] == {"renamed": 2}
    assert summary["extends"] == [str(project / "releasegate.yaml")]
    assert [o["key"] for o in summary["set"]] == ["generation.max_new_tokens", "target.batch_size",
                                                   "suites[0].name", "seed"]
    config = load_config(variant, overrides=("generation.max_new_tokens=12", "target.dtype=float16",
                                             "generation.stop=[END, STOP]", "target.adapter=null"))
    assert config.max_new_tokens == 12 and config.target.dtype == "float16"
    assert config.generation["stop"] == ["END", "STOP"]
    assert "adapter" not in config.raw["target"]


def test_later_overrides_win_and_a_set_creates_a_missing_section(project):
    config = load_config(project / "releasegate.yaml",
                         overrides=("generation.seed=1", "generation.seed=2", "output.run_id=named"))
    assert config.generation["seed"] == 2 and config.run_id == "named"


@pytest.mark.parametrize("command", [["validate"], ["check", "--no-progress"], ["matrix", "--no-progress"]])
def test_an_unknown_set_key_is_exit_2_with_did_you_mean(project, cli, command):
    code, _, err = cli(*command, "-c", project / "releasegate.yaml", "--set", "generation.max_new_token=8")
    line = one_line_error(err)
    assert code == 2 and "--set generation.max_new_token" in line
    assert "did you mean generation.max_new_tokens?" in line
    assert not (project / "reports").exists()  # refused before anything ran


@pytest.mark.parametrize("setting, expected", [
    ("generation.max_new_tokens=many", "--set generation.max_new_tokens: field 'generation.max_new_tokens': expected integer"),
    ("target.dtype=float8", "--set target.dtype: field 'target.dtype'"),
    ("suites[0].answer.type=nope", "--set suites[0].answer.type"),
    ("suites[5].path=x.jsonl", "suites has 1 item(s), there is no [5]"),
    ("suites.path=x.jsonl", "suites is a list"),
    ("generation=8", "--set generation: field 'generation': expected object"),
    ("target.model=a: b", "reads as a YAML mapping"),
    ("no_equals_sign", "expected KEY=VALUE"),
])
def test_a_wrong_set_value_is_exit_2_naming_the_key(project, cli, setting, expected):
    code, _, err = cli("validate", "-c", project / "releasegate.yaml", "--set", setting)
    assert code == 2 and expected in one_line_error(err)


def test_a_set_under_a_free_form_mapping_is_accepted(tmp_path):
    config = make_project(tmp_path, "http://127.0.0.1:9/v1")
    loaded = load_config(config, overrides=("target.extra_body.lora=[{id: 0, scale: 0.5}]",))
    assert loaded.target.extra_body == {"lora": [{"id": 0, "scale": 0.5}]}


def test_a_credential_given_by_set_is_never_written(tmp_path):
    config = make_project(tmp_path, "http://127.0.0.1:9/v1")
    loaded = load_config(config, overrides=("target.headers.Authorization=Bearer s3cret-token-value",))
    assert loaded.target.headers["Authorization"] == "Bearer s3cret-token-value"  # sent as given
    assert "s3cret" not in loaded.snapshot_text() and "s3cret" not in json.dumps(loaded.recorded_overrides())


# -- what a run records ------------------------------------------------------------------------------------

def test_a_run_records_the_composition_in_its_manifest_and_snapshot(project, variant, cli):
    code, _, err = cli("check", "-c", variant, "--run-id", "r", "--no-progress", "--set", "generation.max_new_tokens=12")
    run = project / "reports" / "r"
    assert code in (0, 1, 3), err
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["composition"] == {
        "extends": [str((project / "releasegate.yaml").resolve())],
        "set": [{"key": "generation.max_new_tokens", "value": 12}],
        # the base names the rubric: what the variant writes over it, and the --set, are overrides of it
        "over_official": [{"key": "generation.temperature", "by": str(variant.resolve())},
                          {"key": "generation.max_new_tokens", "by": "--set"}]}
    roles = {e["role"]: e["path"] for e in manifest["inputs"]}
    assert roles["config"] == str(variant.resolve()) and roles["config:extends"] == str((project / "releasegate.yaml").resolve())
    snapshot_text = (run / "config.yaml").read_text()
    snapshot = yaml.safe_load(snapshot_text)
    assert "extends" not in snapshot and snapshot["generation"] == {"max_new_tokens": 12, "temperature": 0.5}
    assert "--set generation.max_new_tokens=12" in snapshot_text and '"' + str(project / "releasegate.yaml") in snapshot_text

    # the comparability key is that of the composed config: the same as a plain file that writes those values
    plain = write(project / "plain.yaml", (project / "releasegate.yaml").read_text().replace(
        "max_new_tokens: 64", "max_new_tokens: 12\n  temperature: 0.5"))
    cli("check", "-c", plain, "--run-id", "p", "--no-progress")
    cli("check", "-c", variant, "--run-id", "v", "--no-progress")
    key = {name: saved_settings_key(project / "reports" / name, RunDir(project / "reports" / name).read_info())
           for name in ("r", "p", "v")}
    assert key["r"] == key["p"] and key["r"]["generation"] != key["v"]["generation"]
    assert saved_settings_key(run, None) == key["r"]  # derived from the snapshot, it agrees with the stored key


def test_verify_sees_an_extended_file_change(project, variant, cli):
    cli("check", "-c", variant, "--run-id", "r", "--no-progress", "--set", "seed=3")
    run = project / "reports" / "r"
    code, out, _ = cli("verify", run, "--json")
    assert json.loads(out)["changes"] == []
    write(project / "releasegate.yaml", (project / "releasegate.yaml").read_text() + "seed: 1\n")
    code, out, _ = cli("verify", run, "--json")
    changes = json.loads(out)["changes"]
    assert code == 1 and [(c["role"], c["change"]) for c in changes] == [("config:extends", "changed")]


def test_resume_applies_the_overrides_and_restores_credentials_of_the_composed_original(tmp_path, cli):
    with StubServer(StubBehaviour(tokens=3)) as stub:
        config = make_project(tmp_path, stub.base_url, cases=6, concurrency=1,
                              extra="  extra_body: {api_key: s3cret-value-42}\n")
        variant = write(tmp_path / "variant.yaml", "extends: releasegate.yaml\ntarget: {model: stub-b}\n")
        code, _, err = cli("check", "-c", variant, "--run-id", "r", "--no-progress",
                           "--set", "generation.max_new_tokens=5", "--set", "target.timeout_s=30")
        assert code == 0, err
        run = RunDir(tmp_path / "reports" / "r")
        interrupt_after(run, keep=2)
        sent = len(stub.bodies)
        code, _, err = cli("check", "--resume", run.path, "--no-progress")
        assert code == 0, err
        resumed = stub.bodies[sent:]
    assert len(resumed) == 4
    assert {b["model"] for b in stub.bodies} == {"stub-b"}
    assert {b.get("max_tokens", b.get("max_completion_tokens")) for b in stub.bodies} == {5}
    assert {b["api_key"] for b in resumed} == {"s3cret-value-42"}  # restored, not the snapshot's mask
    assert "s3cret" not in (run.path / "config.yaml").read_text() and config.is_file()


# -- init --endpoint -----------------------------------------------------------------------------------------

def test_init_endpoint_writes_a_config_validate_accepts(tmp_path, cli):
    code, _, err = cli("init", tmp_path, "--endpoint", "http://127.0.0.1:8000/v1", "--model", "demo")
    assert code == 0, err
    text = (tmp_path / "releasegate.yaml").read_text()
    target = yaml.safe_load(text)["target"]
    assert target["backend"] == "openai" and target["base_url"] == "http://127.0.0.1:8000/v1"
    assert target["model"] == "demo" and target["api_key_env"] == "OPENAI_API_KEY"
    assert "# load:" in text and "load" not in yaml.safe_load(text)  # a load phase, commented out
    code, out, err = cli("validate", "-c", tmp_path / "releasegate.yaml", "--json")
    assert code == 0, err
    assert json.loads(out)["target"] == "demo at http://127.0.0.1:8000/v1 (chat)"
    uncommented = text.replace("# load:", "load:").replace("#   ", "  ")
    write(tmp_path / "releasegate.yaml", uncommented)
    code, _, err = cli("validate", "-c", tmp_path / "releasegate.yaml")
    assert code == 0, err  # the commented load phase is valid as written


@pytest.mark.parametrize("args, message", [
    (["--endpoint", "ftp://host/v1"], "not an http(s) URL"),
    (["--endpoint", "http://user:pw@host/v1"], "carries credentials"),
    (["--endpoint", "http://host/v1?key=abc"], "carries credentials"),
    (["--model", "demo"], "give --endpoint URL too"),
    (["--endpoint", "http://host/v1", "--model", "a #b"], "cannot be written"),
])
def test_init_endpoint_refuses_what_it_cannot_write(tmp_path, cli, args, message):
    code, _, err = cli("init", tmp_path, *args)
    assert code == 2 and message in one_line_error(err)
    assert not (tmp_path / "releasegate.yaml").exists()


def test_a_run_given_a_credential_by_set_cannot_be_resumed_without_it(tmp_path, cli):
    with StubServer(StubBehaviour(tokens=3)) as stub:
        config = make_project(tmp_path, stub.base_url, cases=3, concurrency=1)
        code, _, err = cli("check", "-c", config, "--run-id", "r", "--no-progress",
                           "--set", "target.headers.Authorization=Bearer s3cret-token-value")
        assert code == 0, err
        run = RunDir(tmp_path / "reports" / "r")
        manifest = json.loads((run.path / "manifest.json").read_text())
        assert manifest["composition"]["set"][0]["masked"] is True
        assert "s3cret" not in (run.path / "manifest.json").read_text() + (run.path / "config.yaml").read_text()
        interrupt_after(run, keep=1)
        sent = stub.requests
        code, _, err = cli("check", "--resume", run.path, "--no-progress")
        assert code == 2 and "--set target.headers.Authorization" in one_line_error(err)
        assert stub.requests == sent  # nothing sent with a masked credential


@pytest.mark.parametrize("setting, expected", [
    ("extends=other.yaml", "the chain is read from the files"),
    ("target.headers.a\nrubric: x=1", "control character"),
    ("target.headers.a b=1", "not a key path"),
    ("target.headers.a\x1b=1", "control character"),
])
def test_a_set_key_cannot_rewrite_the_chain_or_break_the_snapshot(project, cli, setting, expected):
    code, _, err = cli("validate", "-c", project / "releasegate.yaml", "--set", setting)
    assert code == 2 and expected in one_line_error(err)


def test_resume_refuses_a_new_set(project, cli):
    cli("check", "-c", project / "releasegate.yaml", "--run-id", "r", "--no-progress")
    code, _, err = cli("check", "--resume", project / "reports" / "r", "--set", "seed=2")
    assert code == 2 and "drop --set" in one_line_error(err)
