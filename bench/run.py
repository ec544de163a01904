"""Run every benchmark in bench/ (`make bench`). Each prints ratios against a baseline measured in the same run.

Optional benchmarks (OPTIONAL) run only when named: `python bench/run.py peers` or `make bench-peers`."""

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).parent
OPTIONAL = {"peers"}  # installs third-party load generators under build/peers/: only when asked

if __name__ == "__main__":
    names = sys.argv[1:] or sorted(p.stem for p in HERE.glob("*.py") if p.stem not in ("run", "__init__", *OPTIONAL))
    missed = []
    for name in names:
        print(f"\n== bench/{name}.py", flush=True)
        try:
            runpy.run_path(str(HERE / f"{name}.py"), run_name="__main__")
        except SystemExit as exc:  # a benchmark that missed its limit exits non-zero; the others still run
            if exc.code not in (None, 0):
                missed.append(name)
    if missed:
        sys.exit(f"\nlimits missed: {', '.join(missed)}")
