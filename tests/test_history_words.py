"""`releasegate history` reads in an 80-column CI log (one line a run), and the trend page labels its runs, rings
the blessed ones and draws the confidence bound that decided each criterion, not the threshold under its name."""

from __future__ import annotations

import json
import re

from conftest import run_subprocess
from releasegate.report.trend import deciding_bound, trend_series
from test_bless import bless, passing_project

DEFAULT_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}")


def made_runs(project, cli, n: int) -> list[str]:
    for _ in range(n):
        code, _, err = cli("check", "-c", project / "releasegate.yaml", "--no-progress")
        assert code == 0, err
    return sorted(p.name for p in (project / "reports").iterdir() if DEFAULT_ID.fullmatch(p.name))


def test_history_fits_80_columns_in_a_ci_log_one_line_a_run(project, cli):
    passing_project(project)
    ids = made_runs(project, cli, 3)
    assert bless(cli, project / "reports" / ids[0])[0] == 0
    done = run_subprocess("history", "--reports", project / "reports", env={"COLUMNS": "80"})  # stdout a pipe
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, done.stdout
    for run_id in ids:
        [line] = [line for line in lines if line.startswith(run_id)]
        assert re.search(r"PASS.* 1 +1 +0( |$)", line), done.stdout  # its verdict and its metrics on its line
    assert "PASS @prod" in next(line for line in lines if line.startswith(ids[0]))
    assert " time " not in lines[2]  # default run ids begin with their time: no column repeats it


def test_the_trend_page_labels_runs_rings_blessings_and_draws_the_deciding_bound(project, cli):
    passing_project(project)
    ids = made_runs(project, cli, 2)
    assert bless(cli, project / "reports" / ids[1])[0] == 0
    code, out, err = cli("history", "--reports", project / "reports", "--html", "--json")
    assert code == 0, err
    rows = json.loads(out)["runs"]
    [accuracy] = [s for s in trend_series(rows) if s["name"] == "accuracy"]
    for point in accuracy["points"]:  # accuracy >= 0.5 over 3 right answers: PASS on its one-sided lower bound
        assert point["threshold"] == 0.5 and 0.5 < point["bound"] < 1 and point["bound_side"] == "lower 95%"
    page = (project / "reports" / "history.html").read_text()
    assert all('class="run-label"' in page and f">{run_id}</text>" in page for run_id in ids)
    assert page.count('class="blessed"') == 2 and ">@prod</text>" in page  # accuracy's chart and the guard's
    bound = re.search(r'<polyline class="bound"[^>]*points="([^"]+)"', page).group(1)
    threshold = re.search(r'<polyline class="threshold"[^>]*points="([^"]+)"', page).group(1)
    assert bound != threshold
    assert "bound that decided" in page and f"{accuracy['points'][0]['bound']:.4g} (lower 95%)" in page


def test_the_deciding_bound_is_the_side_the_gate_held_against_the_threshold():
    lower, upper = [0.8, 0.95], [0.01, 0.04]
    assert deciding_bound({"op": ">=", "verdict": "pass", "bounds": lower, "confidence": 0.95}) == (0.8, "lower 95%")
    assert deciding_bound({"op": ">=", "verdict": "fail", "bounds": lower, "confidence": 0.95}) == (0.95, "upper 95%")
    assert deciding_bound({"op": "<=", "verdict": "insufficient", "bounds": upper, "confidence": 0.9}) == (0.04, "upper 90%")
    assert deciding_bound({"op": "<=", "verdict": "fail", "bounds": upper}) == (0.01, "lower")
    assert deciding_bound({"op": ">=", "verdict": "pass", "bounds": [None, 1.0]}) == (None, "")  # never the threshold
    assert deciding_bound({"op": ">=", "verdict": "pass"}) == (None, "")
