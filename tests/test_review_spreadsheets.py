"""The review CSV as spreadsheets save it: a LibreOffice Calc round trip with its default filter (Windows-1252 in
and out, the byte-order mark read as three characters and written back inside the first cell's quotes, numbers
and dates detected) is refused naming the settings that work, and those settings, run for real with headless
LibreOffice, import and gate. Cells only shown (auto_why) keep an apostrophe single."""

from __future__ import annotations

import csv
import io
import json
import shlex
import subprocess
from pathlib import Path

import pytest

from conftest import replay_scaffold, write_jsonl
from releasegate.inputs.csv_dialect import misread_utf8
from releasegate.spreadsheet import LIBREOFFICE_OPTIONS, SAVE_AS_UTF8, neutralise, neutralise_shown, unneutralise
from test_review import RIGHT, RUBRIC, snapshot, soffice  # noqa: F401  (soffice: a fixture)

# outputs a spreadsheet's defaults would change: number-like, date-like, a truth value, text beyond Windows-1252
AWKWARD = {"web-0": "0001", "web-1": "1/2", "web-2": "TRUE", "web-3": "Grüße aus 東京 🚀, \"quoted\""}
REASON = "très bien, 東京 ok"


@pytest.fixture
def run_dir(tmp_path: Path, cli) -> Path:
    """The review test project (customer_support and medical need review) with awkward outputs in a web slice."""
    config = replay_scaffold(tmp_path)
    (tmp_path / "rubrics" / "example.yaml").write_text(RUBRIC.replace("n: 3", "n: 4"))
    good, wrong = json.dumps(RIGHT), json.dumps({**RIGHT, "priority": "low"})
    cases = [(f"cs-{i}", "customer_support", wrong if i == 7 else good) for i in range(8)]
    cases += [(f"med-{i}", "medical", good) for i in range(5)]
    cases += [(cid, "web", out) for cid, out in AWKWARD.items()]
    write_jsonl(tmp_path / "suites" / "example.jsonl",
                [{"id": c, "prompt": f"ticket {c}", "expected": RIGHT, "tags": {"domain": d}} for c, d, _ in cases])
    write_jsonl(tmp_path / "responses.jsonl", [{"id": c, "output": o} for c, _, o in cases])
    code, _, err = cli("check", "-c", config, "--run-id", "r", "--no-progress")
    assert code == 3, err
    return tmp_path / "reports" / "r"


def labelled_as_exported(run_dir: Path, cli, path: Path) -> Path:
    """The exported review CSV with every row approved by a reviewer who typed non-ASCII text, saved the way the
    export writes it (UTF-8 with a BOM, every cell quoted): what a spreadsheet opens and saves again."""
    assert cli("review", "export", run_dir)[0] == 0
    with (run_dir / "review_queue.csv").open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        row.update(label="approve", reason=REASON, reviewer="Zoë")
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_bytes(buf.getvalue().encode("utf-8-sig"))
    return path


def calc(soffice: str, source: Path, tmp_path: Path, *options: str) -> Path:  # noqa: F811
    """Open `source` in headless LibreOffice Calc and save it as CSV: its default filter, or `options`."""
    out = tmp_path / f"calc-{len(list(tmp_path.glob('calc-*')))}"
    cmd = [soffice, f"-env:UserInstallation={(tmp_path / 'lo-profile').as_uri()}", "--headless",
           *(options or ("--convert-to", "csv")), "--outdir", str(out), str(source)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    saved = out / f"{source.stem}.csv"
    assert proc.returncode == 0 and saved.is_file(), proc.stdout + proc.stderr
    return saved


def test_a_libreoffice_default_round_trip_is_refused_naming_its_utf8_settings(soffice, run_dir, cli, tmp_path):  # noqa: F811
    saved = calc(soffice, labelled_as_exported(run_dir, cli, tmp_path / "filled.csv"), tmp_path)
    raw = saved.read_bytes()
    assert raw.startswith(b'"\xef\xbb\xbf""review_id"""')  # the mark, read as 'ï»¿', written back inside the quotes
    assert b'"0001"' not in raw  # and its other defaults: '0001' was read as the number 1
    before = snapshot(run_dir)
    code, _, err = cli("review", "import", run_dir, saved)
    line = " ".join(err.split())
    assert code == 2 and f"{saved.name}:1:" in line and "Traceback" not in err
    assert "byte-order mark inside its first cell's quotes" in line and "Windows-1252" in line
    assert "'Unicode (UTF-8)'" in line and "LibreOffice" in line and "CSV:44,34,76,1,,0,true,false" in line
    assert "'Format quoted field as text' on, 'Detect special numbers' off" in line
    assert snapshot(run_dir) == before  # nothing imported


def test_the_settings_the_message_names_round_trip_through_calc(soffice, run_dir, cli, tmp_path):  # noqa: F811
    options = shlex.split(LIBREOFFICE_OPTIONS)[1:]  # exactly what the error message and the docs tell a user
    saved = calc(soffice, labelled_as_exported(run_dir, cli, tmp_path / "filled.csv"), tmp_path, *options)
    code, _, err = cli("review", "import", run_dir, saved)
    assert code == 0, err
    labels = [json.loads(line) for line in (run_dir / "reviews.jsonl").read_text("utf-8").splitlines()]
    assert {(e["reason"], e["reviewer"]) for e in labels} == {(REASON, "Zoë")}  # typed text kept whole
    assert {e["case_id"] for e in labels} >= set(AWKWARD)  # '0001', '1/2', 'TRUE' still the outputs exported
    assert cli("gate", run_dir)[0] == 0


def test_detected_numbers_are_named_as_the_spreadsheet_s_doing(soffice, run_dir, cli, tmp_path):  # noqa: F811
    # UTF-8 both ways but the default 'Detect special numbers' and quoted fields not as text: '0001' comes back 1
    options = ["--infilter=CSV:44,34,76,1", "--convert-to", "csv:Text - txt - csv (StarCalc):44,34,76,1"]
    saved = calc(soffice, labelled_as_exported(run_dir, cli, tmp_path / "filled.csv"), tmp_path, *options)
    code, _, err = cli("review", "import", run_dir, saved)
    line = " ".join(err.split())
    assert code == 2 and "output was edited since export" in line
    assert "a spreadsheet read it as a number, date or truth value" in line and "'Detect special numbers' off" in line


def test_a_suite_csv_from_the_same_round_trip_is_refused_too(project, cli):
    suite = project / "suites" / "tickets.csv"
    suite.write_bytes(b'"\xef\xbb\xbf""id""",prompt,expected\n1,caf\xe9 au lait,x\n')  # cp1252 typed after it
    config = project / "releasegate.yaml"
    config.write_text(config.read_text().replace(
        "  - path: suites/example.jsonl\n    answer: {type: json_fields, fields: [intent, priority]}",
        "  - name: tickets\n    source: {path: suites/tickets.csv}\n"
        "    columns: {id: id, prompt: prompt, expected: expected}\n    answer: {type: exact}"))
    code, _, err = cli("validate", "-c", config)
    assert code == 2 and "tickets.csv:1" in err and "'Unicode (UTF-8)'" in " ".join(err.split()), err


def test_misread_headers():
    assert misread_utf8('"\ufeff""review_id""",case_id') is not None  # LibreOffice default, Windows-1252 out
    assert misread_utf8('"\u00ef\u00bb\u00bf""review_id""",case_id') is not None  # the same, saved as UTF-8
    assert misread_utf8("\u00ef\u00bb\u00bfreview_id,case_id") is not None  # unquoted
    assert misread_utf8('"review_id","case_id"') is None and misread_utf8("review_id,café") is None
    assert misread_utf8('"\ufeffreview_id","case_id"') is None  # a mark kept as a character by a UTF-8 reader: text
    assert "Unicode (UTF-8)" in SAVE_AS_UTF8 and "CSV UTF-8 (Comma delimited)" in SAVE_AS_UTF8


@pytest.mark.parametrize("text", ["got 'low', expected 'high'", "it's 'x' ; 'y'", "'quoted' at the start"])
def test_a_shown_cell_keeps_an_apostrophe_single(text):
    assert neutralise_shown(text) == text  # no formula character: shown as written
    assert neutralise(text) != text and unneutralise(neutralise(text)) == text  # the cells read back: exact


@pytest.mark.parametrize("text", ['=HYPERLINK("x")', "a; =1+1", "x,@SUM(A1)", "-2", "'=1", " +1", "got '=cmd|x'"])
def test_a_shown_cell_is_still_no_formula(text):
    shown = neutralise_shown(text)
    for sep in ",;\t| ":
        for cell in shown.split(sep):
            assert not cell.lstrip(' "').startswith(tuple("=+-@")), (text, shown)
    if "'=" in text:  # read with ' as the quote character ('=cmd|x' unquoted is a formula): an apostrophe more
        assert "''=" in shown, shown


def test_auto_why_reads_without_doubled_apostrophes(run_dir, cli, tmp_path):
    rubric = tmp_path / "shown.yaml"
    rubric.write_text(RUBRIC.replace("  min_approval: 0.75\n", "  min_approval: 0.75\n  show_auto: true\n"))
    code, _, err = cli("review", "export", run_dir, "--rubric", rubric, "-o", tmp_path / "q.csv")
    assert code == 0, err
    with (tmp_path / "q.csv").open(encoding="utf-8-sig", newline="") as fh:
        why = [r["auto_why"] for r in csv.DictReader(fh) if r["auto_why"]]
    assert "answer: priority: got 'low', expected 'high'" in why, why
    assert not any("''" in w for w in why)


def test_a_mark_kept_inside_the_first_cell_by_a_utf8_reader_still_imports(run_dir, cli, tmp_path):
    path = labelled_as_exported(run_dir, cli, tmp_path / "filled.csv")
    raw = path.read_bytes()
    assert raw.startswith(b'\xef\xbb\xbf"review_id"')
    path.write_bytes(b'"\xef\xbb\xbfreview_id"' + raw[len(b'\xef\xbb\xbf"review_id"'):])  # text, read as UTF-8
    code, _, err = cli("review", "import", run_dir, path)
    assert code == 0, err
