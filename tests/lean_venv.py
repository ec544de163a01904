"""A fresh virtual environment with releasegate's core install only: `pip install .`, no extras.

Its dependencies are resolved by pip from the local pip configuration (index, find-links, constraints), as a CI
job installing the package would. Building it takes about a minute, so it is kept under build/, keyed by the
hash of pyproject.toml (the dependency lists): a changed dependency list builds a new one. Releasegate's own
code is reinstalled into it (without re-resolving) whenever src/ changes, so a test always runs the code of
this checkout, installed as a wheel: package data included, nothing from the source tree on the path.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from conftest import ROOT

BUILD = ROOT / "build"
HEAVY = ("torch", "transformers", "peft", "datasets", "evaluate", "accelerate", "safetensors", "ray", "gguf",
         "xllamacpp")
"""What the core install must not bring: each belongs to an extra."""


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _source_files() -> list[Path]:
    src = ROOT / "src" / "releasegate"
    return sorted(p for p in src.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def clean_env(**extra: str) -> dict[str, str]:
    """The environment a user's shell would give the lean venv: none of this checkout's paths or venv."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_HUB_DISABLE_PROGRESS_BARS="1", COLUMNS="200", **extra)
    return env


def _pip(python: Path, *args: str) -> None:
    out = subprocess.run([str(python), "-m", "pip", "install", "-q", *args], capture_output=True, text=True,
                         env=clean_env(), timeout=1200)
    assert out.returncode == 0, f"pip install {' '.join(args)} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"


def _package_copy(into: Path) -> Path:
    """What a wheel is built from, copied out of the checkout: an in-tree build would reuse build/lib, where a
    module deleted from src/ lives on."""
    copy = into / "releasegate"
    copy.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, copy / name)
    shutil.copytree(ROOT / "src", copy / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return copy


def _install(python: Path, *args: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _pip(python, *args, str(_package_copy(Path(tmp))))


def lean_venv() -> Path:
    """The bin/ directory of the core-only venv, built or refreshed as needed (one builder at a time)."""
    BUILD.mkdir(exist_ok=True)
    venv = BUILD / f"lean-venv-{_digest([ROOT / 'pyproject.toml'])}"
    code = venv / f".releasegate-{_digest(_source_files())}"
    with open(BUILD / "lean-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / ".installed").exists():
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=300)
            _install(venv / "bin" / "python")  # the core: every dependency resolved by pip
            (venv / ".installed").touch()
            code.touch()
        elif not code.exists():
            _install(venv / "bin" / "python", "--no-deps", "--force-reinstall")  # this checkout's code
            for old in venv.glob(".releasegate-*"):
                old.unlink()
            code.touch()
    return venv / "bin"
