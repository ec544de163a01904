"""Where users wait on the command line: `releasegate --help` and `releasegate validate` on the demo config, wall
time as the median of 10 runs each, against two baselines measured in the same run: a bare Python start and a
Python start that imports typer and rich (what any typer CLI pays). Then the import profile of each command:
the modules that cost the most, cumulative.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = 10
COMMANDS = {
    "bare python": [sys.executable, "-c", "pass"],
    "python + typer + rich": [sys.executable, "-c", "import typer, rich.console"],
    "releasegate --help": [sys.executable, "-m", "releasegate", "--help"],
    "releasegate validate": [sys.executable, "-m", "releasegate", "validate", "-c", str(ROOT / "releasegate.yaml")],
}


def wall(cmd: list[str]) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def profile(cmd: list[str], top: int = 8) -> list[tuple[int, str]]:
    out = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], cwd=ROOT, capture_output=True, text=True, check=True)
    rows = []
    for line in out.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].strip()))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    medians = {name: wall(cmd) for name, cmd in COMMANDS.items()}
    base = medians["python + typer + rich"]
    print(f"{'command':24} {'median wall':>12} {'x typer+rich start':>20}")
    for name, seconds in medians.items():
        print(f"{name:24} {seconds * 1000:9.0f} ms {seconds / base:19.2f}x")
    for name in ("releasegate --help", "releasegate validate"):
        print(f"\nimport profile of {name} (cumulative ms):")
        for micros, module in profile(COMMANDS[name]):
            print(f"  {micros / 1000:7.1f}  {module}")


if __name__ == "__main__":
    main()
