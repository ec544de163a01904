"""`make dist`: the sdist and the wheel a user installs where no package index has releasegate. The wheel holds every
file the package reads at run time (its schemas, report templates, local metric scripts, and the sources the scorer
fingerprint hashes), declares the command and the extras, and runs from where pip installed it."""

from __future__ import annotations

import email
import os
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from test_reports import make_run

PACKAGE = ROOT / "src" / "releasegate"


def package_files() -> set[str]:
    """Every file of src/releasegate, as a path inside the wheel (releasegate/...)."""
    return {str(p.relative_to(PACKAGE.parent)) for p in PACKAGE.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_dist.py"), str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    wheel, sdist = next(out.glob("releasegate-*.whl")), next(out.glob("releasegate-*.tar.gz"))
    assert done.stdout.split() == [str(sdist), str(wheel)]
    return {"wheel": wheel, "sdist": sdist}


def test_the_wheel_holds_every_file_the_package_reads(dist):
    names = set(zipfile.ZipFile(dist["wheel"]).namelist())
    files = package_files()
    assert files - names == set()
    for needed in ("releasegate/schemas/config.schema.json", "releasegate/schemas/rubric.schema.json",
                   "releasegate/schemas/case.schema.json", "releasegate/schemas/backends.json",
                   "releasegate/report/templates/report.html.j2", "releasegate/report/templates/report.css",
                   "releasegate/scorers/metrics_local/field_accuracy/field_accuracy.py", "releasegate/py.typed"):
        assert needed in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_the_wheel_declares_the_command_and_every_extra(dist):
    wheel = zipfile.ZipFile(dist["wheel"])
    info = next(n.rsplit("/", 1)[0] for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    metadata = email.message_from_bytes(wheel.read(f"{info}/METADATA"))
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert metadata["Name"] == "releasegate" and metadata["Version"] == declared["version"]
    assert set(metadata.get_all("Provides-Extra")) == set(declared["optional-dependencies"])
    assert "releasegate = releasegate.__main__:main" in wheel.read(f"{info}/entry_points.txt").decode()


def test_the_sdist_builds_the_same_package(dist):
    with tarfile.open(dist["sdist"]) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert {"pyproject.toml", "README.md"} <= names
    assert {f"src/{f}" for f in package_files()} - names == set()


def test_the_installed_wheel_validates_and_renders_from_its_own_files(dist, tmp_path):
    """Installed by pip into a folder of its own, the package reads its schemas, metric scripts and templates from
    there, not from this checkout."""
    site = tmp_path / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target",
                          str(site), str(dist["wheel"])], capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stderr[-2000:]
    (tmp_path / "made").mkdir()
    run = make_run(tmp_path / "made")
    env = {**os.environ, "PYTHONPATH": str(site), "HF_HUB_OFFLINE": "1"}
    where = subprocess.run([sys.executable, "-c", "import releasegate; print(releasegate.__file__)"], env=env,
                           capture_output=True, text=True, cwd=tmp_path)
    assert where.stdout.strip().startswith(str(site))
    for args in (["validate", "-c", str(ROOT / "releasegate.yaml")], ["report", str(run.path), "-f", "html"]):
        done = subprocess.run([sys.executable, "-m", "releasegate", *args], env=env, capture_output=True, text=True,
                              cwd=ROOT, timeout=600)
        assert done.returncode == 0, (args, done.stderr[-2000:])
    assert "<svg" in done.stdout and "Content-Security-Policy" in done.stdout


# -- the example CI workflow installs that wheel -------------------------------------------------------------

def install_step() -> tuple[dict, str]:
    workflow = yaml.safe_load((ROOT / "docs" / "release-gate.github-workflow.yml").read_text())
    job = next(iter(workflow["jobs"].values()))
    step = next(s for s in job["steps"] if s.get("name") == "Install releasegate")
    return job["env"], step["run"]


def run_step(script: str, cwd: Path, releasegate: str) -> subprocess.CompletedProcess:
    """The step's script in bash, as the runner runs it, with a `python` that only writes down what it was asked."""
    bin_dir = cwd / "fake-bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "python"
    fake.write_text('#!/bin/sh\nif [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin"; cp "$0" "$3/bin/python"; fi\n'
                    'echo "$*" >> "$CALLS"\n')
    fake.chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "RELEASEGATE": releasegate, "PIP_ARGS": "",
           "CALLS": str(cwd / "calls.txt")}
    return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def test_the_workflow_installs_the_wheel_make_dist_builds_with_its_extras(tmp_path):
    env, script = install_step()
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert Path(env["RELEASEGATE"]).name == f"releasegate-{version}-py3-none-any.whl"
    wheel = tmp_path / env["RELEASEGATE"]
    wheel.parent.mkdir(parents=True)
    wheel.write_bytes(b"")
    done = run_step(script, tmp_path, env["RELEASEGATE"] + "[hf]")
    assert done.returncode == 0, done.stderr
    assert f"-m pip install {env['RELEASEGATE']}[hf]" in (tmp_path / "calls.txt").read_text()


def test_the_workflow_without_the_wheel_stops_in_one_line_saying_how_to_build_it(tmp_path):
    env, script = install_step()
    done = run_step(script, tmp_path, env["RELEASEGATE"] + "[hf]")
    assert done.returncode == 2 and not (tmp_path / "calls.txt").exists()
    line = done.stdout.strip()
    assert line.startswith("::error::") and "\n" not in line
    assert f"no releasegate wheel at {env['RELEASEGATE']}:" in line and "make dist" in line
