"""The border's corpus for what is not HTTP: files and directories (FIFOs, links to /dev/zero, link loops), the job
summary file, environment variables, deep `--set` paths and YAML, stored run files edited since, the vLLM
interpreter and optional components. Each bad input is exit 2 (or a warning for a courtesy such as the job
summary) on one line naming it, never an internal error (exit 70), a traceback or a hang."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from conftest import GOOD, replay_scaffold
from releasegate.border import env as border_env
from releasegate.border.files import (
    MAX_DIR_DEPTH,
    append_regular,
    read_text,
    regular_entries,
    sha256_file,
    walk_files,
)
from releasegate.cli import main
from releasegate.errors import InputError

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are a POSIX thing")


def one_line_error(result, *expected: str) -> str:
    code, _, err = result
    assert code == 2, err
    assert "Traceback" not in err and "internal error" not in err
    assert len(err.strip().splitlines()) == 1, err
    for text in expected:
        assert text in err, (text, err)
    return err


def hostile(folder: Path, kind: str) -> Path:
    """One hostile entry in `folder`: a FIFO, a link to /dev/zero, a link loop or a dangling link."""
    path = folder / {"fifo": "extra.json", "zero": "weights.bin", "loop": "loop.json", "dangling": "gone.json"}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        path.symlink_to("/dev/zero")
    elif kind == "loop":
        path.symlink_to(path.name)
    else:
        path.symlink_to(folder / "nowhere")
    return path


def model_dir(root: Path) -> Path:
    folder = root / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    (folder / "model.safetensors").write_bytes(b"\0" * 16)
    return folder


KINDS = ["fifo", "zero", "loop", "dangling"]


# ---------------------------------------------------------------- files and directories

@pytest.mark.parametrize("kind", KINDS)
def test_a_directory_walk_refuses_what_is_not_a_regular_file_naming_it(tmp_path, kind):
    folder = model_dir(tmp_path)
    (folder / "sub").mkdir()
    bad = hostile(folder / "sub", kind)
    with pytest.raises(InputError) as raised:
        walk_files(folder, what="model directory")
    assert str(bad) in str(raised.value) and "not a regular file" in str(raised.value)
    with pytest.raises(InputError, match="not a regular file"):
        regular_entries(folder / "sub", what="model directory")


def test_a_walk_lists_regular_files_and_never_follows_a_link_into_a_directory(tmp_path):
    folder = model_dir(tmp_path)
    (folder / "back").symlink_to(folder)  # a loop through a directory link
    (folder / ".hidden").write_text("x")
    assert [p.name for p in walk_files(folder, what="model")] == ["config.json", "model.safetensors"]
    assert ".hidden" in [p.name for p in walk_files(folder, what="model", hidden=True)]


def test_a_walk_stops_at_its_depth(tmp_path):
    deep = tmp_path
    for _ in range(MAX_DIR_DEPTH + 2):
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "f").write_text("x")
    with pytest.raises(InputError, match="folders deep"):
        walk_files(tmp_path, what="source directory")


@pytest.mark.parametrize("kind", ["fifo", "zero", "loop"])
def test_hashing_and_reading_refuse_a_fifo_a_device_and_a_loop(tmp_path, kind):
    bad = hostile(tmp_path, kind)
    with pytest.raises(InputError, match=r"not a regular file|loops"):
        sha256_file(bad)
    with pytest.raises(InputError, match=r"not a regular file|loops"):
        read_text(bad, what="suite")


@pytest.mark.parametrize("kind", KINDS)
def test_the_manifest_and_variant_digests_refuse_a_hostile_model_directory(tmp_path, kind):
    from releasegate.export.variant_files import tree_digest
    from releasegate.run.manifest_inputs import directory_files

    folder = model_dir(tmp_path)
    bad = hostile(folder, kind)
    with pytest.raises(InputError) as raised:
        directory_files(folder, "base")
    assert str(bad) in str(raised.value)
    with pytest.raises(InputError):
        tree_digest(folder)


@pytest.mark.parametrize("kind", KINDS)
def test_the_embedding_models_fingerprint_refuses_a_hostile_file(tmp_path, kind):
    from releasegate.backends.embeddings import source_fingerprint
    from releasegate.inputs.cache_config import EmbeddingSource

    folder = model_dir(tmp_path)
    hostile(folder, kind)
    with pytest.raises(InputError):
        source_fingerprint(EmbeddingSource(local=folder))


def with_local_embeddings(project: Path, folder: Path) -> Path:
    config = project / "releasegate.yaml"
    config.write_text(config.read_text() + f"response_cache_probe:\n  threshold: 0.9\n  embeddings: {{local: {folder}}}\n")
    return config


@pytest.mark.parametrize("kind", KINDS)
def test_validate_and_check_refuse_a_hostile_embedding_model_before_any_generation(project, cli, kind):
    pytest.importorskip("torch")
    folder = model_dir(project)
    bad = hostile(folder, kind)
    config = with_local_embeddings(project, folder)
    one_line_error(cli("validate", "-c", config), str(bad), "response_cache_probe.embeddings.local")
    one_line_error(cli("check", "-c", config, "--run-id", "r", "--no-progress"), str(bad))
    assert not (project / "reports" / "r").exists()  # refused before the run started


def test_a_local_embedding_model_needs_the_hf_extra_before_any_generation(project, cli, monkeypatch):
    import releasegate.extras as extras

    real = extras._found
    monkeypatch.setattr(extras, "_found", lambda name: name not in ("torch", "transformers") and real(name))
    config = with_local_embeddings(project, model_dir(project))
    one_line_error(cli("check", "-c", config, "--run-id", "r", "--no-progress"), "releasegate[hf]",
                   "a local embedding model")
    assert not (project / "reports" / "r").exists()


@pytest.mark.parametrize(("config_json", "message"), [
    ("{not json", "is not JSON"), ('["a list"]', "names no model_type"), ('{"model_type": 3}', "names no model_type")])
def test_an_embedding_model_whose_config_cannot_load_is_refused(project, cli, config_json, message):
    pytest.importorskip("torch")
    folder = model_dir(project)
    (folder / "config.json").write_text(config_json)
    one_line_error(cli("validate", "-c", with_local_embeddings(project, folder)), message)


def test_an_embedding_model_without_weights_is_refused(project, cli):
    pytest.importorskip("torch")
    folder = model_dir(project)
    (folder / "model.safetensors").unlink()
    one_line_error(cli("validate", "-c", with_local_embeddings(project, folder)), "holds no weights")


@pytest.mark.parametrize("garbage", ["config", "weights", "fifo"])
def test_a_draft_model_that_cannot_load_is_refused_before_any_generation(tmp_path, garbage):
    from releasegate.inputs.model_files import check_model_dir

    folder = model_dir(tmp_path)
    if garbage == "config":
        (folder / "config.json").write_text("\x00\x01garbage")
    elif garbage == "weights":
        (folder / "model.safetensors").unlink()
    else:
        hostile(folder, "fifo")
    with pytest.raises(InputError) as raised:
        check_model_dir(folder, "draft model", {"field": "target.draft"})
    assert raised.value.field == "target.draft"


def test_a_prebuilt_gguf_that_is_not_gguf_is_refused(tmp_path):
    from releasegate.inputs.model_files import check_gguf_file

    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"PK\x03\x04 not a gguf")
    with pytest.raises(InputError, match="not a GGUF file"):
        check_gguf_file(fake, "GGUF model", {"field": "variants[0].gguf"})
    fake.write_bytes(b"GGUF\x03\x00\x00\x00")
    assert check_gguf_file(fake, "GGUF model", {}) == fake
    with pytest.raises(InputError, match="not a regular file"):
        check_gguf_file(hostile(tmp_path, "zero"), "GGUF model", {})


# ---------------------------------------------------------------- the job summary

@pytest.mark.parametrize("kind", ["fifo-no-reader", "fifo-with-reader", "device", "loop"])
def test_a_job_summary_that_is_not_a_regular_file_is_a_warning_and_the_run_goes_on(project, cli, monkeypatch, kind):
    summary = project / "summary"
    reader = None
    if kind.startswith("fifo"):
        os.mkfifo(summary)
        if kind == "fifo-with-reader":  # opening for writing then succeeds: refused by what it is, not by ENXIO
            reader = os.open(summary, os.O_RDONLY | os.O_NONBLOCK)
    elif kind == "device":
        summary.symlink_to("/dev/null")
    else:
        summary.symlink_to(summary.name)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    try:
        code, _, err = cli("check", "-c", project / "releasegate.yaml", "--run-id", "r", "--no-progress")
        if reader is not None:
            assert os.read(reader, 1 << 16) == b""  # nothing was written into the FIFO
    finally:
        if reader is not None:
            os.close(reader)
    assert code == 1 and "Traceback" not in err  # the gate's own verdict (one wrong answer), not an error
    warnings = [line for line in err.splitlines() if line.startswith("warning:") and "GITHUB_STEP_SUMMARY" in line]
    assert len(warnings) == 1 and str(summary) in warnings[0] and "not written" in warnings[0]
    assert (project / "reports" / "r" / "report.md").is_file()


def test_a_regular_summary_file_is_appended_to(tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("before\n")
    append_regular(summary, "after\n", what="GITHUB_STEP_SUMMARY")
    assert summary.read_text() == "before\nafter\n"
    assert stat.S_ISREG(summary.stat().st_mode)


# ---------------------------------------------------------------- the environment

@pytest.mark.parametrize(("name", "value"), [
    ("RELEASEGATE_PROGRESS_INTERVAL_S", "inf"), ("RELEASEGATE_PROGRESS_INTERVAL_S", "nan"),
    ("RELEASEGATE_PROGRESS_INTERVAL_S", "-1"), ("RELEASEGATE_PROGRESS_INTERVAL_S", "0"),
    ("RELEASEGATE_PROGRESS_INTERVAL_S", "ten"), ("RELEASEGATE_PROGRESS_INTERVAL_S", "1e400"),
    ("RELEASEGATE_PROGRESS_INTERVAL_S", "5\x01"), ("RELEASEGATE_TEST_JUDGE_DELAY_S", "-5"),
    ("RELEASEGATE_TEST_HOLD_AFTER_VERDICT_S", "Infinity"), ("RELEASEGATE_EVENT_LOOP", "trio"),
])
def test_a_bad_environment_value_is_exit_2_naming_it_before_any_generation(project, cli, monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    one_line_error(cli("check", "-c", project / "releasegate.yaml", "--run-id", "r", "--no-progress"), name)
    assert not (project / "reports").exists()


def test_good_environment_values_are_read_with_their_types(monkeypatch):
    monkeypatch.setenv("RELEASEGATE_PROGRESS_INTERVAL_S", " 0.25 ")
    monkeypatch.setenv("RELEASEGATE_EVENT_LOOP", " AsyncIO ")
    assert border_env.env_number(border_env.PROGRESS_INTERVAL) == 0.25
    assert border_env.env_choice(border_env.EVENT_LOOP) == "asyncio"
    monkeypatch.setenv("RELEASEGATE_PROGRESS_INTERVAL_S", "")
    assert border_env.env_number(border_env.PROGRESS_INTERVAL) == 10.0  # empty: the default
    for off in ("", "0", "false", "No"):
        monkeypatch.setenv("RELEASEGATE_TRACEBACK", off)
        assert not border_env.env_flag("RELEASEGATE_TRACEBACK")
    monkeypatch.setenv("RELEASEGATE_VLLM_PYTHON", "x" * (border_env.MAX_ENV_CHARS + 1))
    with pytest.raises(InputError, match="RELEASEGATE_VLLM_PYTHON is longer"):
        border_env.check_environment()


def test_the_progress_interval_is_read_through_the_border(monkeypatch):
    from releasegate.run.progress import interval_s

    monkeypatch.setenv("RELEASEGATE_PROGRESS_INTERVAL_S", "inf")
    with pytest.raises(InputError, match="RELEASEGATE_PROGRESS_INTERVAL_S"):
        interval_s()


# ---------------------------------------------------------------- the command line and user YAML

@pytest.mark.parametrize("key", ["a." * 999 + "a", "target" + "[0]" * 1000, ".".join(["generation"] * 20)])
def test_a_deep_set_key_is_exit_2_naming_the_set(project, cli, key):
    err = one_line_error(cli("validate", "-c", project / "releasegate.yaml", "--set", f"{key}=1"), "--set")
    assert key[:20] in err


def test_a_deep_set_value_is_exit_2_naming_its_key(project, cli):
    deep = "[" * 1000 + "]" * 1000
    one_line_error(cli("validate", "-c", project / "releasegate.yaml", "--set", f"generation.stop={deep}"),
                   "--set generation.stop", "nested too deeply")


def test_a_deeply_nested_config_and_a_long_extends_chain_are_exit_2(project, cli):
    config = project / "releasegate.yaml"
    deep = project / "deep.yaml"
    deep.write_text("x: " + "[" * 5000 + "]" * 5000 + "\n")
    one_line_error(cli("validate", "-c", deep), "nested too deeply")
    for i in range(40):
        (project / f"c{i}.yaml").write_text(f"extends: c{i + 1}.yaml\n")
    shutil.copy(config, project / "c40.yaml")
    one_line_error(cli("validate", "-c", project / "c0.yaml"), "extends chain")


# ---------------------------------------------------------------- stored run files read back

@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("stored")
    config = replay_scaffold(root, {"example-001": GOOD, "example-002": GOOD})
    assert main(["check", "-c", str(config), "--run-id", "base", "--no-progress"]) == 1  # one wrong answer
    return root / "reports" / "base"


def _edit(data, path: tuple, value) -> None:
    for part in path[:-1]:
        data = data[part]
    if value is _DELETE:
        del data[path[-1]]
    else:
        data[path[-1]] = value


class _Delete:
    def __repr__(self) -> str:
        return "deleted"


_DELETE = _Delete()
EDITS = [
    ("run.json", ("cases",), "two"), ("run.json", ("cases",), -1), ("run.json", ("cases",), 2.5),
    ("run.json", ("load_seconds",), float("nan")), ("run.json", ("load_seconds",), -2.5),
    ("run.json", ("run_id",), _DELETE), ("run.json", ("cost",), "cheap"), ("run.json", ("cost", "mode"), _DELETE),
    ("run.json", ("cost", "hourly_usd"), _DELETE), ("run.json", ("cost", "hourly_usd"), float("inf")),
    ("run.json", ("response_cache_probe",), {}), ("run.json", ("sessions",), [{"cases": "x"}]),
    ("run.json", ("timing",), {"total_s": "x"}), ("run.json", ("load_phase",), {"requests": -3}),
    ("manifest.json", ("sealed", "files"), "x"), ("manifest.json", ("sealed", "files"), _DELETE),
    ("manifest.json", ("sealed", "files", "run.json"), {}), ("manifest.json", ("sealed", "broken"), None),
    ("manifest.json", ("target",), None), ("manifest.json", ("inputs",), {}),
    ("manifest.json", ("inputs", 0, "role"), _DELETE), ("manifest.json", ("packages", "python"), []),
    ("manifest.json", ("samples",), None), ("manifest.json", ("sealed", "files", "run.json", "bytes"), float("nan")),
]


@pytest.mark.parametrize(("name", "path", "value"), EDITS, ids=lambda v: ".".join(map(str, v)) if isinstance(v, tuple) else repr(v))
def test_an_edited_stored_file_is_exit_2_naming_it_in_every_command(finished_run, tmp_path, capsys, name, path, value):
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    data = json.loads((run / name).read_text())
    _edit(data, path, value)
    (run / name).write_text(json.dumps(data))  # NaN and Infinity as Python's json writes them
    for command in (["gate", str(run)], ["report", str(run), "--format", "markdown"], ["verify", str(run)],
                    ["check", "--resume", str(run), "--no-progress"]):
        code = main(command)
        err = capsys.readouterr().err
        assert code != 70 and "Traceback" not in err and "internal error" not in err, (command, err)
        seal = name == "manifest.json" and path[0] == "sealed"  # gate reads the seal, verify every part
        if (command[0] == "gate" and (name == "run.json" or seal)) or (command[0] == "verify" and name == "manifest.json"):
            assert code == 2 and name in err, (command, err)
        elif command[0] == "verify":  # the seal finds run.json edited: exit 1, the edit named
            assert code == 1, err


@pytest.mark.parametrize("kind", ["fifo", "zero"])
@pytest.mark.parametrize(("name", "command"), [("run.json", "gate"), ("records.jsonl", "gate"),
                                               ("manifest.json", "gate"), ("manifest.json", "verify"),
                                               ("report.json", "report")])
def test_a_stored_file_that_is_not_a_regular_file_is_refused(finished_run, tmp_path, cli, kind, name, command):
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    (run / name).unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(run / name)
    else:
        (run / name).symlink_to("/dev/zero")
    one_line_error(cli(command, run), name, "not a regular file")


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_the_judge_and_corpus_journals_are_read_only_when_regular(tmp_path, kind):
    from releasegate.record.judge_journal import JUDGMENTS_FILE, read_judgments
    from releasegate.record.records import RunDir
    from releasegate.scorers.stored import CORPUS_JOURNAL, CorpusScores

    run = RunDir(tmp_path)
    for name in (JUDGMENTS_FILE, CORPUS_JOURNAL):
        if kind == "fifo":
            os.mkfifo(tmp_path / name)
        else:
            (tmp_path / name).symlink_to("/dev/zero")
    with pytest.raises(InputError, match="not a regular file"):
        read_judgments(run)
    assert CorpusScores.of(run).added == []  # nothing stored is reused, and nothing waited on


# ---------------------------------------------------------------- nothing the run did not bring is executed

def test_a_vllm_interpreter_in_the_current_directory_is_never_run(tmp_path, monkeypatch):
    import releasegate.export.vllm as vllm

    planted = tmp_path / "pr" / ".venv-vllm" / "bin" / "python"
    planted.parent.mkdir(parents=True)
    marker = tmp_path / "ran"
    planted.write_text(f"#!/bin/sh\ntouch {marker}\n")
    planted.chmod(0o755)
    monkeypatch.chdir(tmp_path / "pr")
    monkeypatch.delenv("RELEASEGATE_VLLM_PYTHON", raising=False)
    monkeypatch.setattr(vllm, "INSTALL_ROOT", tmp_path / "install")
    assert vllm.vllm_python() == tmp_path / "install" / ".venv-vllm" / "bin" / "python"
    with pytest.raises(FileNotFoundError) as raised:  # a served variant's row says why; the plan goes on
        vllm.start_server(tmp_path, timeout=1)
    assert "RELEASEGATE_VLLM_PYTHON" in str(raised.value) and "current directory" in str(raised.value)
    assert not marker.exists()


def test_a_named_vllm_interpreter_must_be_a_program(tmp_path, monkeypatch):
    import releasegate.export.vllm as vllm

    monkeypatch.setenv("RELEASEGATE_VLLM_PYTHON", str(hostile(tmp_path, "zero")))
    with pytest.raises(FileNotFoundError, match="no vLLM environment"):
        vllm.start_server(tmp_path, timeout=1)


@pytest.mark.parametrize("depth", [65, 950, 100_000])
def test_a_suite_case_nested_deeper_than_any_case_is_exit_2_naming_its_line(project, cli, depth):
    """Under the parser's own limit (950) as much as past it: never a RecursionError later in a scorer."""
    from releasegate.border.structured import MAX_JSON_DEPTH, nesting

    suite = next((project / "suites").glob("*.jsonl"))
    deep = "[" * depth + "]" * depth
    first = suite.read_text().splitlines()[0]
    suite.write_text(first + "\n" + f'{{"id": "deep", "prompt": "p", "expected": {deep}}}' + "\n")
    one_line_error(cli("check", "-c", project / "releasegate.yaml", "--run-id", "r", "--no-progress"),
                   f"{suite.name}:2:", f"more than {MAX_JSON_DEPTH} levels")
    assert nesting([[{"a": [1]}], 2]) == 4 and nesting("x") == 0


# ---------------------------------------------------------------- no environment read around the border

def environment_reads_around_the_border(sources: dict[str, str]) -> list[str]:
    """Modules outside releasegate.border that name a RELEASEGATE_ variable and read os.environ or os.getenv."""
    import ast

    wrong = []
    for name, text in sources.items():
        if name.startswith("releasegate.border"):
            continue
        tree = ast.parse(text)
        names_ours = any(isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("RELEASEGATE_")
                         for n in ast.walk(tree))
        reads = any(isinstance(n, ast.Call) and ast.unparse(n.func) in ("os.environ.get", "os.getenv")
                    or isinstance(n, ast.Subscript) and ast.unparse(n.value) == "os.environ"
                    and isinstance(n.ctx, ast.Load) for n in ast.walk(tree))
        if names_ours and reads:
            wrong.append(name)
    return wrong


def test_releasegate_variables_are_read_only_through_the_border():
    from conftest import ROOT

    package = ROOT / "src" / "releasegate"
    sources = {".".join(p.relative_to(package.parent).with_suffix("").parts): p.read_text("utf-8")
               for p in package.rglob("*.py")}
    assert environment_reads_around_the_border(sources) == []
    # the rule can fail: a module reading its own variable directly
    planted = {"releasegate.run.x": 'import os\nDELAY = float(os.environ.get("RELEASEGATE_X_S") or 0)\n'}
    assert environment_reads_around_the_border(planted) == ["releasegate.run.x"]
