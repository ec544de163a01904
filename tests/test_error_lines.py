"""Errors point at the line to fix: the key that names a missing file, a rule's own line, the rubric line of a
slice, the config key of a misspelt field or column, and a table row as a text editor and a spreadsheet show it.
The mistake table (tests/test_mistakes.py) holds the typical cases; these are the variants around them."""

import json
import shutil
from pathlib import Path

import pytest

from releasegate.inputs.schema_check import did_you_mean

BASE = Path(__file__).resolve().parent / "mistakes" / "base"


@pytest.fixture
def project(tmp_path, monkeypatch):
    shutil.copytree(BASE, tmp_path / "p")
    monkeypatch.chdir(tmp_path / "p")
    return tmp_path / "p"


@pytest.fixture
def said(cli):
    """The one line `validate` prints for the project in the current directory (exit 2, no traceback)."""

    def run(*args: str) -> str:
        code, out, err = cli("validate", "-c", "releasegate.yaml", *args)
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 2 and "Traceback" not in out + err and len(lines) == 1, (code, out, err)
        return lines[0]

    return run


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), start=1) if text in line)


# -- near misses ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("word", "meant"), [("=<", "<="), ("=>", ">="), ("priorty", "priority"), ("Json", "json")])
def test_a_swap_or_a_near_name_gets_the_one_meant(word, meant):
    assert did_you_mean(word, [">=", ">", "<=", "<", "priority", "intent", "json"]) == f"did you mean '{meant}'?"


def test_a_swapped_operator_in_a_criterion_suggests_the_swap(project, said):
    edit(project / "rubric.yaml", '{metric: forbidden_rate, op: "<="', '{metric: forbidden_rate, op: "=<"')
    assert said().startswith(f"error: rubric.yaml:{line_of(project / 'rubric.yaml', '=<')}: field 'criteria[2].op'")
    assert said().endswith("did you mean '<='?")


# -- a missing file names the key that points to it --------------------------------------------------------------

def test_a_missing_file_named_in_an_extends_base_in_another_folder(project, said):
    (project / "layers").mkdir()
    base = (project / "releasegate.yaml").read_text().replace("suites/ticket.schema.json", "suites/order.schema.json")
    (project / "layers" / "base.yaml").write_text(base)
    (project / "releasegate.yaml").write_text("extends: layers/base.yaml\n")
    line = said()
    at = line_of(project / "layers" / "base.yaml", "order.schema.json")
    assert line.startswith(f"error: layers/base.yaml:{at}: field 'suites[0].format[0].schema': JSON Schema "
                           "suites/order.schema.json not found")
    assert "it is read from the current directory" in line  # the run config's folder, not the base's


def test_a_missing_source_given_with_set(project, said):
    assert said("--set", "suites[1].source.path=suites/other.csv").startswith(
        "error: --set suites[1].source.path: field 'suites[1].source.path': suite source suites/other.csv not found")


def test_a_missing_rules_file_of_a_rubric_elsewhere_names_the_rubric_line(project, said):
    (project / "gate").mkdir()
    shutil.move(project / "rubric.yaml", project / "gate" / "rubric.yaml")
    edit(project / "releasegate.yaml", "rubric: rubric.yaml", "rubric: gate/rubric.yaml")
    line = said()
    assert line.startswith("error: gate/rubric.yaml:6: field 'forbidden': forbidden-rules file gate/forbidden.yaml "
                           "not found") and "read from gate/" in line


# -- forbidden rules ------------------------------------------------------------------------------------------

def test_a_bad_inline_rule_names_the_rubric_line_and_shows_the_pattern_as_written(project, said):
    edit(project / "rubric.yaml", "forbidden: forbidden.yaml\n",
         "forbidden:\n  - category: ids\n    regex:\n      - '\\bID-\\d+\\b'\n      - \"\\\\d{3}(\\\\s\"\n")
    line = said()
    assert line.startswith(f"error: rubric.yaml:{line_of(project / 'rubric.yaml', '{3}')}: "
                           "field 'forbidden[0].regex[1]': invalid regex '\\d{3}(\\s': missing ), unterminated")


def test_a_pattern_with_a_newline_stays_one_line(project, said):
    edit(project / "forbidden.yaml", "regex: ['\\b", 'regex: ["(a\\nb", \'\\b')
    line = said()
    assert "field 'rules[1].regex[0]'" in line and "invalid regex '(a\\nb'" in line


# -- slices -----------------------------------------------------------------------------------------------------

def test_a_required_review_slice_no_case_has_names_its_rubric_line(project, said):
    edit(project / "rubric.yaml", "  min_reviewed: 2\n", "  min_reviewed: 2\n  required_slices:\n    - {risk: hihg}\n")
    line = said()
    assert line.startswith(f"error: rubric.yaml:{line_of(project / 'rubric.yaml', 'hihg')}: "
                           "field 'review.required_slices[0]': slice risk=hihg matches no case")
    assert line.endswith("(did you mean 'high'?)")


def test_a_slice_beyond_a_limited_load_is_looked_for_in_the_rest(project, cli):
    edit(project / "rubric.yaml", "slice: {domain: customer_support}", "slice: {risk: low}")
    code, _, err = cli("check", "-c", "releasegate.yaml", "--limit", "1", "--no-progress", "--run-id", "r")
    assert "slice" not in err  # risk=low is a row of the CSV suite, after the limit
    edit(project / "rubric.yaml", "slice: {risk: low}", "slice: {risk: lwo}")
    code, _, err = cli("check", "-c", "releasegate.yaml", "--limit", "1", "--no-progress", "--run-id", "s")
    assert code == 2 and err.startswith("error: rubric.yaml:4: field 'criteria[1].slice'") and "'low'" in err, err


# -- answer.fields ----------------------------------------------------------------------------------------------

def test_a_case_s_own_answer_fields_typo_names_the_case_line(project, said):
    suite = project / "suites" / "tickets.jsonl"
    rows = [json.loads(line) for line in suite.read_text().splitlines()]
    rows[1]["answer"] = {"type": "json_fields", "fields": ["intent", "prio"]}
    suite.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert said() == ("error: suites/tickets.jsonl:2: field 'answer.fields[1]': the expected answer has no field "
                      "'prio' (suites/tickets.jsonl:2 has intent, priority) (did you mean 'priority'?)")


def test_an_empty_expected_field_is_still_the_case_s(project, said):
    edit(project / "suites" / "tickets.jsonl", '"priority": "low"', '"priority": null')
    assert said().startswith("error: suites/tickets.jsonl:2: field 'expected.priority': the expected field is empty")


# -- table rows: the editor's line and the spreadsheet's row -----------------------------------------------------

def test_crlf_line_ends_and_a_multi_line_cell(project, said):
    csv = project / "suites" / "tickets.csv"
    text = csv.read_text().replace("s4,Charged twice again", "s4,Charged twice again,").replace("\n", "\r\n")
    csv.write_bytes(text.replace('twice.\r\nPlease', 'twice.\r\n\r\nPlease').encode())
    assert said().startswith("error: suites/tickets.csv:8 (spreadsheet row 5): 7 fields where the header has 6")


def test_a_blank_line_is_a_spreadsheet_row_but_no_case(project, said):
    csv = project / "suites" / "tickets.csv"
    edit(csv, "s2,", "\ns2,")
    edit(csv, "s4,Charged", "s2,Charged")
    assert said() == "error: suites/tickets.csv:8 (spreadsheet row 6): field 'ticket_id': duplicate case id 's2'"


def test_a_tsv_row(project, said):
    edit(project / "releasegate.yaml", "suites/tickets.csv", "suites/tickets.tsv")
    (project / "suites" / "tickets.tsv").write_text(
        "ticket_id\ttext\tintent\tpriority\tdomain\trisk\n\"s1\"\t\"two\nlines\"\tbilling\thigh\tcs\thigh\n"
        "s2\tthree\tbilling\t\tcs\thigh\n")
    assert said().startswith("error: suites/tickets.tsv:4 (spreadsheet row 3): field 'priority'")


def test_a_json_lines_source_names_the_file_line(project, said):
    edit(project / "releasegate.yaml", "suites/tickets.csv", "suites/tickets.jsonl2")
    edit(project / "releasegate.yaml", "source: {path: suites/tickets.jsonl2}", "source: {path: suites/t.jsonl, format: jsonl}")
    row = {"ticket_id": "j1", "text": "hi", "intent": "billing", "priority": "high", "domain": "cs", "risk": "low"}
    (project / "suites" / "t.jsonl").write_text(json.dumps(row) + "\n\n\n" + json.dumps({**row, "ticket_id": "j 2"}) + "\n")
    assert said().startswith("error: suites/t.jsonl:4: field 'ticket_id'")


def test_a_workbook_row_is_its_sheet_row(project, said):
    import pandas as pd

    frame = pd.DataFrame([{"ticket_id": f"x{i}", "text": "hi", "intent": "billing", "priority": "high",
                           "domain": "cs", "risk": "low"} for i in range(5)])
    frame.loc[3, "intent"] = None
    frame.to_excel(project / "suites" / "t.xlsx", index=False, sheet_name="Cases")
    edit(project / "releasegate.yaml", "source: {path: suites/tickets.csv}", "source: {path: suites/t.xlsx, sheet: Cases}")
    assert said().startswith("error: suites/t.xlsx (spreadsheet row 5 of sheet 'Cases'): field 'intent'")


def test_a_parquet_row_is_named_as_a_row_not_a_line(project, said):
    import pandas as pd

    frame = pd.DataFrame([{"ticket_id": f"x{i}", "text": "hi", "intent": "billing", "priority": "high",
                           "domain": "cs", "risk": "low"} for i in range(5)])
    frame.loc[4, "ticket_id"] = "x 4"
    frame.to_parquet(project / "suites" / "t.parquet")
    edit(project / "releasegate.yaml", "source: {path: suites/tickets.csv}", "source: {path: suites/t.parquet}")
    assert said().startswith("error: suites/t.parquet (row 5): field 'ticket_id'")


def test_a_field_no_case_has_under_any_near_name_is_the_case_s(project, said):
    edit(project / "releasegate.yaml", "fields: [intent, priority]}\n    format", "fields: [intent, urgency]}\n    format")
    assert said().startswith("error: suites/tickets.jsonl:1: field 'expected.urgency': the expected answer has no "
                             "field 'urgency', which answer.fields names")


def test_a_dangling_link_as_a_suite_is_named_at_its_key(project, said):
    (project / "suites" / "gone.jsonl").symlink_to(project / "suites" / "nowhere.jsonl")
    edit(project / "releasegate.yaml", "suites/tickets.jsonl", "suites/gone.jsonl")
    assert said().startswith("error: releasegate.yaml:6: field 'suites[0].path': suite file suites/gone.jsonl is a "
                             "link to nothing")


def test_a_case_s_own_missing_schema_names_the_case_line(project, said):
    suite = project / "suites" / "tickets.jsonl"
    rows = [json.loads(line) for line in suite.read_text().splitlines()]
    rows[2]["format"] = [{"type": "json"}, {"type": "json_schema", "schema": "orders.schema.json"}]
    suite.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert said() == ("error: suites/tickets.jsonl:3: field 'format[1].schema': JSON Schema suites/orders.schema.json "
                      "not found (check the path: it is read from suites/)")



def test_a_misspelt_judge_criterion_names_the_key_with_the_one_meant(cli):
    config = Path(__file__).resolve().parents[1] / "examples" / "judge.yaml"
    code, _, err = cli("validate", "-c", config, "--set", "suites[0].answer.criterion=helpfull_reply")
    assert code == 2 and err.strip() == (
        "error: --set suites[0].answer.criterion: field 'suites[0].answer.criterion': judge criterion "
        "'helpfull_reply' is not defined (known: helpful_reply) (did you mean 'helpful_reply'?)"), err


def test_an_absolute_path_is_not_said_to_be_read_from_the_config_folder(project, said):
    missing = project.parent / "elsewhere" / "s.jsonl"
    edit(project / "releasegate.yaml", "path: suites/tickets.jsonl", f"path: {missing}")
    assert said() == (f"error: releasegate.yaml:6: field 'suites[0].path': suite file {missing} not found "
                      "(check the path)")
