"""Run every benchmark in bench/ (`make bench`). Each prints ratios against a baseline measured in the same run."""

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).parent

if __name__ == "__main__":
    names = sys.argv[1:] or sorted(p.stem for p in HERE.glob("*.py") if p.stem not in ("run", "__init__"))
    for name in names:
        print(f"\n== bench/{name}.py")
        runpy.run_path(str(HERE / f"{name}.py"), run_name="__main__")
