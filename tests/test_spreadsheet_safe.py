"""Every CSV releasegate writes (report.csv, the review queue, the server comparison) opened by a real spreadsheet,
Debian's LibreOffice Calc, with ',' ';' tab and '|' as separator: no cell is a formula, whatever a model wrote.
Plus the rule itself (`spreadsheet.neutralise`) and the review round trip through it."""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
from pathlib import Path

import openpyxl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import write_jsonl
from releasegate.report.servers import COLUMNS as SERVER_COLUMNS
from releasegate.report.servers import render_servers
from releasegate.spreadsheet import FORMULA_START, SEPARATORS, csv_text, neutralise, unneutralise

PAYLOADS = [
    "ok;=1+1;", "=SUM(40+2)", "x|=cmd|' /C calc'!A0", "a\t=1+1", "a,@SUM(1,2)", "line\n=1+1", "b; -2+3",
    'q; "=1+1"', "+cmd|' /C calc'!A0", "-2+3", "@SUM(1)", "\t=1", "ok|+1|-1", "'=1", "a;'=1",
    "a =1+1", "total: +cmd|' /C calc'!A0", "x  @SUM(1)", "a '=1",
]
SEPARATOR_CODES = {",": 44, ";": 59, "\t": 9, "|": 124, " ": 32}


# ---------------------------------------------------------------- the rule

@pytest.mark.parametrize("text", PAYLOADS + ["plain", "", "''", "it's", " ;\"'", "a\t\tb", ";;==", "\r\r"])
def test_neutralise_is_undone_exactly(text):
    assert unneutralise(neutralise(text)) == text


@pytest.mark.parametrize("text", PAYLOADS)
@pytest.mark.parametrize("separator", list(SEPARATORS))
def test_no_piece_starts_a_formula_after_any_separator(text, separator):
    for piece in neutralise(text).split(separator):
        assert not piece.lstrip(' "').startswith(tuple(FORMULA_START)), (text, piece)


TRICKY = st.text(alphabet=st.sampled_from(list(FORMULA_START + SEPARATORS + "'\" a1")), max_size=40)


@settings(max_examples=300, deadline=None, database=None)
@given(TRICKY)
def test_any_text_round_trips_and_starts_no_formula_anywhere(text):
    shown = neutralise(text)
    assert unneutralise(shown) == text
    for separator in SEPARATORS:
        for piece in shown.split(separator):
            assert not piece.lstrip(' "').startswith(tuple(FORMULA_START)), (text, shown)


def test_numbers_stay_numbers_and_text_is_neutralised():
    assert csv_text([["=1", -2, 1.5, "a;-b"]]) == "'=1,-2,1.5,a;'-b\r\n"


# ---------------------------------------------------------------- the writers, through the CLI

def hostile_project(root: Path) -> Path:
    cases = [f"c{i}" for i in range(len(PAYLOADS))]
    write_jsonl(root / "suite.jsonl", [{"id": c, "prompt": f"p {c}", "expected": "ok", "tags": {"domain": "web"}}
                                       for c in cases])
    write_jsonl(root / "responses.jsonl", [{"id": c, "output": p} for c, p in zip(cases, PAYLOADS)])
    (root / "rubric.yaml").write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.0}\n"
                                      "review: {sample: {per_slice: 20}}\n")
    (root / "releasegate.yaml").write_text(
        "target: {backend: replay, responses: responses.jsonl}\n"
        "suites: [{path: suite.jsonl, answer: {type: exact}}]\nrubric: rubric.yaml\n")
    return root / "releasegate.yaml"


@pytest.fixture
def csv_files(tmp_path, cli) -> dict[str, Path]:
    config = hostile_project(tmp_path)
    code, _, err = cli("check", "-c", config, "--run-id", "r", "--no-progress")
    assert code in (0, 3), err
    run = tmp_path / "reports" / "r"
    assert cli("review", "export", run)[0] == 0
    assert cli("report", run, "--format", "csv", "-o", tmp_path / "report.csv")[0] == 0
    servers = tmp_path / "servers.csv"
    servers.write_text(render_servers(_comparison(), "csv"), encoding="utf-8")
    return {"report": tmp_path / "report.csv", "review": run / "review_queue.csv", "servers": servers}


def _comparison() -> dict:
    """A server comparison whose every text cell is hostile (a model or run named like a formula)."""
    targets = []
    for i, payload in enumerate(PAYLOADS):
        target = {key: payload for key, _ in SERVER_COLUMNS}
        target["parity"] = None if i == 0 else {"identical_outputs": 1, "shared_cases": 2, "accuracy_delta": payload,
                                                "quality_verdict": payload}
        targets.append(target)
    return {"targets": targets, "reference": PAYLOADS[0], "recommendation": PAYLOADS[1], "recommended": None,
            "verdict": "INCONCLUSIVE", "exit_code": 3, "verdict_reason": PAYLOADS[1]}


def test_every_writer_neutralises_every_payload(csv_files):
    for name, path in csv_files.items():
        text = path.read_text(encoding="utf-8-sig")
        cells = [c for row in csv.reader(io.StringIO(text, newline="")) for c in row]
        for separator in SEPARATORS:
            for cell in cells:
                for piece in cell.split(separator):
                    assert not piece.lstrip(' "').startswith(tuple(FORMULA_START)), (name, cell)


def test_the_review_queue_round_trips_through_import(csv_files, tmp_path, cli):
    path = csv_files["review"]
    with path.open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        row.update(label="reject", reason=neutralise("bad;=1+1"), reviewer=neutralise("=me"))
    with path.open("w", encoding="utf-8-sig", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]), delimiter=";", quoting=csv.QUOTE_ALL)
        writer.writeheader()
        writer.writerows(rows)
    run = path.parent
    code, _, err = cli("review", "import", run, path)
    assert code == 0, err
    reviews = (run / "reviews.jsonl").read_text()
    assert reviews.count('"reason": "bad;=1+1"') + reviews.count('"reason":"bad;=1+1"') == len(rows)
    assert '"=me"' in reviews


# ---------------------------------------------------------------- a real spreadsheet: LibreOffice Calc

@pytest.fixture
def soffice() -> str:
    path = shutil.which("soffice")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("LibreOffice is not installed; .ci/run installs it with `make libreoffice`")
        pytest.skip("LibreOffice (soffice) is not installed (make libreoffice, or apt-get install libreoffice-calc-nogui)")
    return path


def formula_cells(soffice: str, source: Path, separator: str, tmp_path: Path) -> tuple[list[str], int]:
    """Open `source` in Calc as CSV split on `separator` (formulas evaluated, Calc's default) and save it as xlsx;
    return the coordinates of formula cells and the number of non-empty cells."""
    out = tmp_path / f"converted-{SEPARATOR_CODES[separator]}-{source.stem}"
    profile = (tmp_path / "lo-profile").as_uri()
    cmd = [soffice, f"-env:UserInstallation={profile}", "--headless",
           f"--infilter=CSV:{SEPARATOR_CODES[separator]},34,76,1", "--convert-to", "xlsx", "--outdir", str(out), str(source)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    target = out / f"{source.stem}.xlsx"
    assert proc.returncode == 0 and target.is_file(), proc.stdout + proc.stderr
    cells = [c for row in openpyxl.load_workbook(target).active.iter_rows() for c in row if c.value is not None]
    return [c.coordinate for c in cells if c.data_type == "f"], len(cells)


@pytest.mark.parametrize("separator", list(SEPARATOR_CODES))
def test_no_cell_is_a_formula_in_calc_under_any_separator(soffice, csv_files, separator, tmp_path):
    for name, path in csv_files.items():
        formulas, cells = formula_cells(soffice, path, separator, tmp_path)
        assert cells > len(PAYLOADS), name  # the file was read
        assert formulas == [], (name, separator)


@pytest.mark.parametrize("quoting", [csv.QUOTE_MINIMAL, csv.QUOTE_ALL])
def test_the_same_payloads_raw_are_formulas_in_calc(soffice, quoting, tmp_path):
    """The control: written without neutralising, Calc evaluates some under ';' (`ok;=1+1;` split where the ';'
    falls; fully quoted, a line break inside a cell read as a new row), so the test above can fail."""
    raw = tmp_path / "raw.csv"
    with raw.open("w", encoding="utf-8", newline="") as fh:
        csv.writer(fh, quoting=quoting, lineterminator="\r\n").writerows(
            [["id", "output", "x"], *([str(i), p, "x"] for i, p in enumerate(PAYLOADS))])
    formulas, _ = formula_cells(soffice, raw, ";", tmp_path)
    assert formulas != []
