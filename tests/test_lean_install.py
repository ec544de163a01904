"""The core install: `pip install releasegate` checks and gates an endpoint without torch, transformers, peft,
datasets or evaluate; a command that needs an extra that is not installed says which, in one line, exit 2.

The missing extras are simulated with an import hook that refuses the package as an uninstalled one would
(`find_spec` and `import` both fail). The real thing, a fresh venv with `pip install .`, is the slow test at the end.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from releasegate.cli import main
from releasegate.errors import InputError
from releasegate.extras import install_command, load, missing, require

DEMO_BASE = ROOT / "models" / "demo" / "base"
DEMO_ADAPTER = ROOT / "models" / "demo" / "adapters" / "good"

WITHOUT = '''\
import sys

class Uninstalled:
    """An import hook standing in for packages that are not installed."""

    def __init__(self, names):
        self.names = names

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Uninstalled(set(sys.argv[1].split(","))))
command, args = sys.argv[2], sys.argv[3:]
if command == "releasegate":
    from releasegate.cli import main
    sys.exit(main(args))
import runpy
sys.argv = [command, *args]
runpy.run_module(command, run_name="__main__")
'''


def without(packages: str, command: str, *args, cwd: Path) -> subprocess.CompletedProcess:
    """`releasegate ARGS` (or `python -m COMMAND ARGS`) in a fresh interpreter where `packages` are not installed."""
    return subprocess.run([sys.executable, "-c", WITHOUT, packages, command, *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=180)


def one_line(out: subprocess.CompletedProcess, *needles: str) -> str:
    assert out.returncode == 2, out.stderr
    lines = [line for line in out.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1, out.stderr
    assert "Traceback" not in out.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def replay_config(directory: Path, *, target: str = "{backend: replay, responses: responses.jsonl}",
                  suite: str = "  - path: suites/example.jsonl\n", rubric: str = "rubrics/example.yaml",
                  extra: str = "") -> Path:
    path = directory / "lean.yaml"
    path.write_text(f"target: {target}\nsuites:\n{suite}rubric: {rubric}\noutput: {{dir: reports}}\n{extra}",
                    encoding="utf-8")
    return path


# -- the helper itself ---------------------------------------------------------------------------------------

def test_a_missing_module_names_its_extra_in_one_line():
    assert missing("json", "no_such_module_here") == ["no_such_module_here"]
    with pytest.raises(InputError) as caught:
        require("backend: hf", "json", "torch_not_here", field="target.backend")
    assert "backend: hf needs torch_not_here, which is not installed" in str(caught.value)
    with pytest.raises(InputError) as caught:
        require("the GGUF export", "gguf_x", "torch_x")
    assert "which are not installed (install them with" in str(caught.value)
    assert install_command("llamacpp", "hf") == "pip install 'releasegate[llamacpp,hf]'"


def test_an_installed_package_whose_own_dependency_is_missing_says_so(tmp_path, monkeypatch):
    (tmp_path / "half_installed").mkdir()
    (tmp_path / "half_installed" / "__init__.py").write_text("import its_dependency_is_gone\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(InputError) as caught:
        load("half_installed", "a suite source")
    text = str(caught.value)
    assert "fails to import" in text and "its_dependency_is_gone" in text and "\n" not in text


# -- each command that needs an extra, without it -------------------------------------------------------------

@pytest.mark.skipif(not (DEMO_ADAPTER / "adapter_config.json").exists(), reason="demo model not built")
@pytest.mark.parametrize("command", ["validate", "check"])
def test_an_hf_target_without_the_hf_extra(project, command):
    target = f"{{backend: hf, base: {DEMO_BASE}, adapter: {DEMO_ADAPTER}}}"
    config = replay_config(project, target=target)
    args = ["-c", config] + (["--no-progress"] if command == "check" else [])
    line = one_line(without("torch,transformers,peft", "releasegate", command, *args, cwd=project),
                    "lean.yaml:1", "target.backend", "torch, transformers, peft", install_command("hf"))
    assert line.count("releasegate[") == 1
    assert not (project / "reports").exists()  # refused before any run directory was made


def test_a_hub_suite_without_the_datasets_extra(project):
    suite = "  - name: t\n    source: {hub: acme/tickets, split: validation}\n    columns: {prompt: text, expected: label}\n"
    out = without("datasets", "releasegate", "check", "-c", replay_config(project, suite=suite), "--no-progress",
                  cwd=project)
    one_line(out, "hub:acme/tickets", "needs datasets", install_command("datasets"))
    assert not (project / "reports").exists()


def test_a_save_to_disk_suite_without_the_datasets_extra(project):
    (project / "saved").mkdir()
    (project / "saved" / "state.json").write_text('{"_data_files": []}')
    suite = "  - name: t\n    source: {format: disk, path: saved}\n    columns: {prompt: text, expected: label}\n"
    out = without("datasets", "releasegate", "validate", "-c", replay_config(project, suite=suite), cwd=project)
    one_line(out, "saved", "save_to_disk", install_command("datasets"))


def test_ray_scale_without_the_ray_extra(project):
    config = replay_config(project, target="{backend: openai, base_url: 'http://127.0.0.1:9/v1', model: m}",
                           extra="load: {concurrency: 2, requests: 4}\nscale: {engine: ray, workers: 2}\n")
    one_line(without("ray", "releasegate", "validate", "-c", config, cwd=project), "scale.engine",
             install_command("ray"))


def _local_metric(where: Path) -> str:
    """A copy of a shipped metric's script as a user's own `evaluate` module: `evaluate` loads it."""
    from releasegate.scorers.evaluate_metric import resolve_module

    folder = where / "my_metric"
    folder.mkdir(exist_ok=True)
    (folder / "my_metric.py").write_bytes(Path(resolve_module("releasegate:field_accuracy")).read_bytes())
    return f"evaluate:\n  - {{name: field_accuracy, module: '{folder}', key: field_accuracy}}\n"


def test_a_rubric_with_evaluate_metrics_without_the_evaluate_extra(project):
    rubric = project / "rubrics" / "example.yaml"
    rubric.write_text(rubric.read_text() + _local_metric(project))
    out = without("evaluate", "releasegate", "check", "-c", replay_config(project), "--no-progress", cwd=project)
    one_line(out, "example.yaml", "field 'evaluate'", install_command("evaluate"))
    assert not (project / "reports").exists()  # said before the model runs, not after


def test_gate_with_an_evaluate_rubric_without_the_evaluate_extra_refuses_rather_than_drops_the_metric(project, cli):
    code, _, err = cli("check", "-c", replay_config(project), "--run-id", "r", "--no-progress", "--allow-pending")
    assert code in (0, 1, 3), err
    rubric = project / "rubrics" / "with_evaluate.yaml"
    rubric.write_text((project / "rubrics" / "example.yaml").read_text() + _local_metric(project))
    report = project / "reports" / "r" / "report.json"
    before = report.read_bytes()
    out = without("evaluate", "releasegate", "gate", project / "reports" / "r", "--rubric", rubric, cwd=project)
    one_line(out, "evaluate")
    assert report.read_bytes() == before  # no verdict written without the metric


def test_corpus_a_missing_extra_is_never_a_pass_without_its_metric(tmp_path, capsys):
    """A run every criterion passes, field_accuracy from a local `evaluate` module among them: PASS with the
    extra installed; without it `gate` refuses (exit 2), never judges the rubric's other criteria alone."""
    from test_false_pass import Run, lenient, ok

    module = _local_metric(tmp_path).split("module: '")[1].split("'")[0]
    rubric = lenient(evaluate=[{"name": "field_accuracy", "module": module, "key": "field_accuracy"}])
    rubric["criteria"].append({"metric": "field_accuracy", "op": ">=", "threshold": 0.9})
    path = Run([ok(i) for i in range(100)], rubric=rubric).build(tmp_path)
    out = without("evaluate", "releasegate", "gate", path, "--json", cwd=tmp_path)
    one_line(out, "field_accuracy" if "field_accuracy" in out.stderr else "evaluate")
    assert '"PASS"' not in out.stdout and not (path / "report.json").exists()
    assert main(["gate", str(path), "--json"]) == 0  # the control: the same run, the extra installed
    assert json.loads(capsys.readouterr().out)["verdict"] == "PASS"


def test_the_shipped_metrics_need_no_evaluate_extra(tmp_path, capsys):
    """`releasegate:field_accuracy` (and rouge, bleu, chrf) are computed by releasegate itself: a core install
    gates a rubric that names them, with the values the full install gives."""
    from test_false_pass import Run, lenient, ok

    rubric = lenient(evaluate=[{"name": "field_accuracy", "module": "releasegate:field_accuracy"},
                               {"name": "chrf", "module": "releasegate:chrf"}])
    rubric["criteria"] += [{"metric": "field_accuracy", "op": ">=", "threshold": 0.0},
                           {"metric": "chrf", "op": ">=", "threshold": 0.0}]
    path = Run([ok(i) for i in range(30)], rubric=rubric).build(tmp_path)
    out = without("evaluate,datasets,torch,transformers", "releasegate", "gate", path, "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lean = json.loads(out.stdout)
    assert main(["gate", str(path), "--json"]) == 0
    full = json.loads(capsys.readouterr().out)
    assert lean["verdict"] == full["verdict"] == "PASS"
    values = [{c["metric"]: c["value"] for c in report["criteria"]} for report in (lean, full)]
    assert values[0] == values[1] and values[0]["field_accuracy"] == 1.0 and values[0]["chrf"] is not None


def test_the_gguf_export_without_its_extras(tmp_path):
    out = without("gguf,torch", "releasegate.export.gguf", DEMO_BASE, tmp_path / "m.gguf", cwd=tmp_path)
    one_line(out, "the GGUF export needs gguf, torch", install_command("llamacpp", "hf"))
    assert not (tmp_path / "m.gguf").exists()


def test_serving_with_llama_cpp_without_the_llamacpp_extra(tmp_path):
    out = without("xllamacpp", "releasegate.export.llamacpp", "--out", tmp_path / "gguf", cwd=tmp_path)
    one_line(out, "serving with llama.cpp needs xllamacpp", install_command("llamacpp"))
    assert not (tmp_path / "gguf").exists()


def test_every_extra_named_is_one_pyproject_declares():
    import tomllib

    from releasegate.extras import DISTRIBUTION_OF, EXTRA_OF

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRA_OF.values()) <= set(extras)
    def names(specs: list[str]) -> set[str]:
        return {re.match(r"[A-Za-z0-9_.-]+", spec).group().lower() for spec in specs}

    core = names(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])
    for module, extra in EXTRA_OF.items():
        assert module not in core, f"{module} is in the core dependencies, but belongs to [{extra}]"
        assert DISTRIBUTION_OF.get(module, module) in names(extras[extra]), (module, extra)


def test_the_example_workflow_installs_the_package_not_this_repository():
    import yaml

    workflow = yaml.safe_load((ROOT / "docs" / "release-gate.github-workflow.yml").read_text())
    job = next(iter(workflow["jobs"].values()))
    runs = "\n".join(step.get("run", "") for step in job["steps"])
    assert not re.search(r"^\s*make ", runs, re.M) and 'pip install $PIP_ARGS "$RELEASEGATE"' in runs  # runs no make
    assert Path(job["env"]["RELEASEGATE"]).name.startswith("releasegate-")  # the wheel `make dist` builds


# -- the real thing: a fresh venv, `pip install .` ----------------------------------------------------------------

LEAN_RUBRIC = """\
criteria:
  - {metric: accuracy, op: ">=", threshold: 0.5}
  - {metric: format_compliance, op: ">=", threshold: 0.5}
  - {metric: error_rate, op: "<=", threshold: 0.0}
review:
  min_reviewed: 4
  min_approval: 0.5
  sample: {stratify_by: [suite], per_slice: 4}
"""


def lean_run(bin_dir: Path, *args, cwd: Path) -> subprocess.CompletedProcess:
    from lean_venv import clean_env

    return subprocess.run([str(bin_dir / "releasegate"), *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          env=clean_env(), timeout=600)


def endpoint_config(directory: Path, server) -> Path:
    suites = ROOT / "suites" / "demo"
    (directory / "rubric.yaml").write_text(LEAN_RUBRIC)
    path = directory / "endpoint.yaml"
    path.write_text(
        f"target:\n  backend: openai\n  base_url: {server.base_url}\n  model: {server.model}\n  concurrency: 4\n"
        f"  tokenizer: {DEMO_BASE}\n  extra_body: {{lora: [{{id: 0, scale: 1.0}}]}}\n"
        "generation: {max_new_tokens: 32}\n"
        f"suites:\n  - {{path: {suites / 'tickets.jsonl'}, answer: {{type: json_fields, fields: [intent, priority]}}, "
        f"format: [{{type: json_schema, schema: {suites / 'ticket.schema.json'}}}]}}\n"
        "rubric: rubric.yaml\noutput: {dir: reports}\ncost: {mode: self_hosted, hourly_usd: 0.1}\n")
    return path


@pytest.mark.slow
def test_a_core_install_checks_gates_reports_and_reviews_an_endpoint_without_torch(llamacpp_server, tmp_path):
    from lean_venv import HEAVY, clean_env, lean_venv

    bin_dir = lean_venv()
    python = str(bin_dir / "python")
    absent = subprocess.run([python, "-c", "import importlib.util, sys; print([m for m in sys.argv[1:] if "
                             "importlib.util.find_spec(m)])", *HEAVY], capture_output=True, text=True, env=clean_env())
    assert absent.stdout.strip() == "[]", absent.stdout + absent.stderr  # none of the extras came with the core
    torch = subprocess.run([python, "-c", "import torch"], capture_output=True, text=True, env=clean_env())
    assert torch.returncode != 0 and "No module named 'torch'" in torch.stderr
    where = subprocess.run([python, "-c", "import releasegate; print(releasegate.__file__)"], capture_output=True,
                           text=True, env=clean_env(), cwd=tmp_path)
    assert "site-packages" in where.stdout, where.stdout + where.stderr  # the installed wheel, not src/

    config = endpoint_config(tmp_path, llamacpp_server)
    check = lean_run(bin_dir, "check", "-c", config, "--run-id", "lean", "--no-progress", "--json", "--allow-pending",
                     cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    assert json.loads(check.stdout)["verdict"] == "PASS"
    run_dir = tmp_path / "reports" / "lean"
    gate = lean_run(bin_dir, "gate", run_dir, "--json", "--allow-pending", cwd=tmp_path)
    assert gate.returncode == 0 and json.loads(gate.stdout)["verdict"] == "PASS", gate.stderr
    for fmt in ("md", "html", "junit", "csv"):
        report = lean_run(bin_dir, "report", run_dir, "--format", fmt, "-o", tmp_path / f"report.{fmt}", cwd=tmp_path)
        assert report.returncode == 0 and (tmp_path / f"report.{fmt}").stat().st_size > 0, (fmt, report.stderr)
    review = lean_run(bin_dir, "review", "export", run_dir, "-o", tmp_path / "review.csv", cwd=tmp_path)
    assert review.returncode == 0, review.stderr
    assert (tmp_path / "review.csv").read_text(encoding="utf-8-sig").count("\n") >= 4
    again = lean_run(bin_dir, "check", "-c", config, "--run-id", "again", "--no-progress", "--allow-pending",
                     cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    compare = lean_run(bin_dir, "compare", run_dir, tmp_path / "reports" / "again", "--json", cwd=tmp_path)
    # its exit code is its verdict (two runs of one server differ in latency): not what is checked here
    assert compare.returncode in (0, 1, 3) and not compare.stderr.startswith("error"), compare.stderr
    json.loads(compare.stdout)
    servers = lean_run(bin_dir, "servers", run_dir, tmp_path / "reports" / "again", "--format", "md", cwd=tmp_path)
    # its exit code is its verdict (3: no load phase, latency not compared); the table is what is checked here
    assert servers.returncode in (0, 1, 3) and "|" in servers.stdout, servers.stderr
    assert "Traceback" not in servers.stderr and not servers.stderr.startswith("error"), servers.stderr


@pytest.mark.slow
@pytest.mark.skipif(not (DEMO_ADAPTER / "adapter_config.json").exists(), reason="demo model not built")
def test_a_core_install_names_the_extra_an_hf_target_and_the_export_need(project):
    from lean_venv import clean_env, lean_venv

    bin_dir = lean_venv()
    target = f"{{backend: hf, base: {DEMO_BASE}, adapter: {DEMO_ADAPTER}}}"
    config = replay_config(project, target=target)
    out = lean_run(bin_dir, "check", "-c", config, "--no-progress", cwd=project)
    one_line(out, "target.backend", "needs torch, transformers, peft", install_command("hf"))
    export = subprocess.run([str(bin_dir / "python"), "-m", "releasegate.export.gguf", DEMO_BASE, project / "m.gguf"],
                            cwd=project, capture_output=True, text=True, env=clean_env())
    one_line(export, install_command("llamacpp", "hf"))
