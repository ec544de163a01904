"""The confidence-sequence plot of the HTML report: on a run that stops when decided, one figure per anytime-valid
criterion (a baseline's paired rows too) whose numbers are the running bounds recomputed here from the records;
none on a run that asks every case; a report.json whose sequences were edited is refused in one line."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import write_jsonl
from releasegate.decision.stopping import RUN_SHARE
from releasegate.record.records import RunDir
from releasegate.stats.anytime import confidence_bounds

RIGHT = "yes"


def _project(root: Path, cases: int = 400, baseline: Path | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    rows = [{"id": f"c{i:04d}", "prompt": f"question {i}", "expected": RIGHT} for i in range(cases)]
    write_jsonl(root / "suite.jsonl", rows)
    write_jsonl(root / "responses.jsonl",
                [{"id": r["id"], "output": "no" if i % 20 == 0 else RIGHT} for i, r in enumerate(rows)])
    compared = f"baseline: {{run: {baseline}, margins: {{accuracy: 0.2, forbidden_rate: 0.5}}}}\n" if baseline else ""
    (root / "rubric.yaml").write_text(
        "name: stop\nconfidence: 0.95\ncriteria:\n  - {metric: accuracy, op: '>=', threshold: 0.7}\n"
        "  - {metric: error_rate, op: '<=', threshold: 0.2}\n" + compared)
    (root / "releasegate.yaml").write_text(
        "target: {backend: replay, responses: responses.jsonl}\nseed: 7\n"
        "suites: [{path: suite.jsonl, answer: {type: exact}}]\nrubric: rubric.yaml\noutput: {dir: reports}\n")
    return root / "releasegate.yaml"


class _Figures(HTMLParser):
    """Every confidence-sequence figure's data attributes, and the SVG text inside it."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: list[dict] = []
        self._open = False

    def handle_starttag(self, tag, attrs):
        classes = dict(attrs).get("class") or ""
        if tag == "figure" and "confidence-sequence" in classes.split():
            self.figures.append({**{k: v for k, v in attrs if k.startswith("data-")}, "text": "", "svg": False})
            self._open = True
        elif self._open and tag == "svg":
            self.figures[-1]["svg"] = True

    def handle_endtag(self, tag):
        if tag == "figure":
            self._open = False

    def handle_data(self, data):
        if self._open:
            self.figures[-1]["text"] += data


def _figures(run: Path) -> dict[str, dict]:
    parser = _Figures()
    parser.feed((run / "report.html").read_text())
    return {f["data-criterion"]: f for f in parser.figures}


def _numbers(text: str) -> list[float]:
    return [float(v) for v in text.split()]


def _stopped(cli, root: Path, baseline: Path | None = None) -> Path:
    code, out, err = cli("check", "-c", _project(root, baseline=baseline), "--run-id", "r", "--stop-when-decided",
                         "--no-progress")
    assert code == 0, out + err
    return root / "reports" / "r"


def test_each_anytime_criterion_has_its_confidence_sequence_with_the_bounds_it_decided_on(tmp_path, cli):
    run = _stopped(cli, tmp_path)
    report = json.loads((run / "report.json").read_text())
    figures = _figures(run)
    assert set(figures) == {"accuracy", "error_rate"}
    records = RunDir(run).read_records()
    by_id = {r.case_id: r for r in records}
    order = RunDir(run).read_info().stopping["order"]
    values = [1.0 if by_id[i].output == RIGHT else 0.0 for i in order[:len(records)]]  # accuracy, case by case
    accuracy = figures["accuracy"]
    assert accuracy["svg"] and accuracy["data-threshold"] == "0.7" and accuracy["data-verdict"] == "pass"
    cases, lower, upper = (_numbers(accuracy[k]) for k in ("data-cases", "data-lower", "data-upper"))
    assert cases == list(range(1, len(records) + 1))  # under 120 cases: every one
    alpha = 0.05 * RUN_SHARE
    for case, low, high in zip(cases, lower, upper):
        want_low = confidence_bounds(values[:int(case)], alpha)[0]  # the PASS side at its level
        want_high = confidence_bounds(values[:int(case)], alpha / 2)[1]  # the FAIL side at its level over m = 2
        assert low == pytest.approx(want_low, abs=1e-5) and high == pytest.approx(want_high, abs=1e-5)
    decided = int(accuracy["data-decided-at"])
    row = next(s for s in report["sections"] if s["feature"] == "stopping")
    assert f"decided at case {decided} " in {r["label"]: r["value"] for r in row["rows"]}["accuracy"] + " "
    assert lower[decided - 1] >= 0.7 - 1e-3 and (decided == 1 or lower[decided - 2] <= 0.7 + 1e-3)
    assert f"decided at case {decided}: pass" in accuracy["text"]
    assert all(lo <= hi for lo, hi in zip(lower, upper))


def test_a_baselines_paired_rows_are_plotted_as_differences(tmp_path, cli):
    code, out, err = cli("check", "-c", _project(tmp_path / "base"), "--run-id", "base", "--no-progress")
    assert code == 0, out + err
    run = _stopped(cli, tmp_path / "cand", baseline=tmp_path / "base" / "reports" / "base")
    figures = _figures(run)
    paired = figures["accuracy vs baseline"]
    assert float(paired["data-threshold"]) == pytest.approx(-0.2)
    lower, upper = _numbers(paired["data-lower"]), _numbers(paired["data-upper"])
    assert all(-1 <= lo <= 0 <= hi <= 1 for lo, hi in zip(lower, upper))  # the same answers: no difference
    decided = int(paired["data-decided-at"])
    assert lower[_numbers(paired["data-cases"]).index(decided)] >= -0.2 - 1e-3


def test_a_run_that_asks_every_case_has_no_sequence(tmp_path, cli):
    config = _project(tmp_path, cases=50)
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress")
    assert code in (0, 3), out + err
    run = tmp_path / "reports" / "r"
    assert json.loads((run / "report.json").read_text()).get("confidence_sequences", []) == []
    assert _figures(run) == {} and "confidence-sequences" not in (run / "report.html").read_text()


@pytest.mark.parametrize("edit", [
    lambda s: s.update(lower=s["lower"][:-1]),  # lists of different lengths
    lambda s: s.update(threshold=float("nan")),
    lambda s: s.update(upper=[2.0] * len(s["upper"])),  # past the rate's range
    lambda s: s.update(cases=list(reversed(s["cases"]))),
    lambda s: s.update(cases=["<script>"] * len(s["cases"])),
])
def test_an_edited_sequence_in_report_json_is_refused_in_one_line(tmp_path, cli, edit):
    run = _stopped(cli, tmp_path)
    data = json.loads((run / "report.json").read_text())
    edit(data["confidence_sequences"][0])
    (run / "report.json").write_text(json.dumps(data).replace("NaN", "NaN"))
    code, out, err = cli("report", run, "--format", "html", "-o", tmp_path / "again.html")
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert "confidence_sequences" in lines[0]
