"""Build releasegate's sdist and wheel into dist/ (`make dist`), for installing where no package index has it:
`pip install dist/releasegate-0.1.0-py3-none-any.whl` (with extras: `'dist/releasegate-0.1.0-py3-none-any.whl[hf]'`).

The build runs setuptools' own PEP 517 hooks in this interpreter (the build backend pyproject.toml names), so it
needs no network and no `build` package. It builds from a fresh copy of pyproject.toml, README.md and src/: an
in-tree build would reuse build/lib, where a module deleted from src/ lives on, and would leave egg-info in src/.

    python scripts/build_dist.py [OUT_DIR]     # default: dist/; prints the paths it wrote
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOOKS = """\
import sys
import setuptools
from setuptools import build_meta
if tuple(int(x) for x in setuptools.__version__.split(".")[:2] if x.isdigit()) < tuple(map(int, sys.argv[2:4])):
    sys.exit(f"STALE setuptools {setuptools.__version__}")
out = sys.argv[1]
names = [build_meta.build_sdist(out), build_meta.build_wheel(out)]
print("BUILT", *names)  # setuptools logs to stdout too
"""


def build(out: Path) -> list[Path]:
    """The sdist and the wheel, built into `out`; their paths."""
    out.mkdir(parents=True, exist_ok=True)
    least = _least_setuptools()
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "releasegate"
        copy.mkdir()
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(ROOT / name, copy / name)
        shutil.copytree(ROOT / "src", copy / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        done = subprocess.run([sys.executable, "-c", HOOKS, str(out.resolve()), *map(str, least)], cwd=copy,
                              capture_output=True, text=True)
    if "STALE setuptools" in done.stderr or "No module named 'setuptools'" in done.stderr:
        found = done.stderr.rpartition("STALE ")[2].strip() if "STALE" in done.stderr else "no setuptools"
        need = f"setuptools>={least[0]}.{least[1]}"
        raise SystemExit(f"error: {sys.executable} has {found}, and the build needs {need} (pyproject.toml "
                         f"[build-system]): pip install '{need}' there, or make setup first")
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
        raise SystemExit(f"error: building the distributions failed: {tail[0]}")
    built = done.stdout.rpartition("BUILT")[2].split()
    return [out / name for name in built]


def _least_setuptools() -> tuple[int, int]:
    """The oldest setuptools pyproject.toml's [build-system] accepts (`setuptools>=68` -> (68, 0))."""
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["build-system"]["requires"]
    found = next((m for r in requires if (m := re.fullmatch(r"setuptools\s*>=\s*(\d+)(?:\.(\d+))?.*", r))), None)
    return (int(found[1]), int(found[2] or 0)) if found else (0, 0)


def main(argv: list[str]) -> int:
    for path in build(Path(argv[0]) if argv else ROOT / "dist"):
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
