"""Table suites read without torch (CSV, TSV, JSON, JSON Lines, xlsx, parquet: pyarrow and pandas, never
`datasets`), in the delimiter and encoding the file was written in; `validate` refusing cases that can never
pass (an expected answer outside the output schema, an empty expected cell) with file:line:field; "did you
mean" for mistyped keys, metrics and sheets; an unreachable endpoint leaving no run directory."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import pytest

from conftest import heavy_imports_after, write_jsonl
from releasegate.inputs.config import load_config
from releasegate.inputs.suites import load_suite

pd = pytest.importorskip("pandas")
pytest.importorskip("openpyxl")

from test_suite_sources import (  # noqa: E402  (after the skips: it needs pandas)
    ANSWER,
    FLAT_COLUMNS,
    TEMPLATE,
    _config,
    _entry,
    _flat,
    _one_line_error,
)

SCHEMA = {"type": "object", "additionalProperties": False, "required": ["intent", "priority"],
          "properties": {"intent": {"enum": ["billing", "shipping", "account", "technical", "refund",
                                             "cancel_subscription", "security"]},
                         "priority": {"enum": ["low", "medium", "high"]}}}
SCHEMA_LIST = "[{type: json_schema, schema: ticket.schema.json}]"
SCHEMA_FORMAT = "format: " + SCHEMA_LIST


def _csv_entry(name: str) -> str:
    return f"  - name: t\n    source: {{path: {name}}}\n    {FLAT_COLUMNS}\n    {TEMPLATE}\n    {ANSWER}\n    {SCHEMA_FORMAT}\n"


def _schema(directory: Path) -> None:
    (directory / "ticket.schema.json").write_text(json.dumps(SCHEMA))


# -- read without torch ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["csv", "jsonl_rows", "json", "xlsx", "parquet_template"])
def test_validate_of_a_table_suite_imports_no_torch_or_datasets(tmp_path, kind):
    (tmp_path / "rubrics").mkdir()
    (tmp_path / "rubrics" / "example.yaml").write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.5}\n")
    config = _config(tmp_path, _entry(kind, tmp_path))
    heavy = ("torch", "transformers", "datasets", "evaluate") + (() if kind in ("xlsx", "parquet_template") else ("pandas",))
    assert heavy_imports_after([["validate", "-c", config]], heavy) == []  # CSV and JSON: not even pandas


def _cases(directory: Path, entry: str, name: str):
    return load_suite(load_config(_config(directory, entry, name)).suites[0], directory)


@pytest.mark.parametrize("how", ["tsv", "semicolon", "utf-16", "bom", "crlf"])
def test_csv_in_any_dialect_gives_the_same_cases(tmp_path, how):
    (tmp_path / "rubrics").mkdir()
    want = _cases(tmp_path, _entry("csv", tmp_path), "a.yaml")
    if how == "tsv":
        name, options = "t.tsv", {"sep": "\t"}
    else:
        name = "t2.csv"
        options = {"semicolon": {"sep": ";"}, "utf-16": {"encoding": "utf-16"}, "bom": {"encoding": "utf-8-sig"},
                   "crlf": {"lineterminator": "\r\n"}}[how]
    _flat().to_csv(tmp_path / name, index=False, **options)
    entry = f"  - name: tickets\n    source: {{path: {name}}}\n    {FLAT_COLUMNS}\n    {TEMPLATE}\n    {ANSWER}\n" \
            "    format: [{type: json}, {type: max_length, max_chars: 200}]\n"
    assert _cases(tmp_path, entry, "b.yaml") == want


def test_a_cell_reading_na_is_text_and_an_empty_cell_is_empty(tmp_path):
    frame = _flat()
    frame.loc[0, "risk"] = "NA"
    frame.loc[1, "risk"] = None
    frame.to_csv(tmp_path / "t.csv", index=False)
    entry = f"  - name: t\n    source: {{path: t.csv}}\n    {FLAT_COLUMNS}\n    {TEMPLATE}\n    {ANSWER}\n"
    cases = _cases(tmp_path, entry, "c.yaml")
    assert cases[0].tags["risk"] == "NA" and "risk" not in cases[1].tags


def test_csv_columns_are_typed_as_pandas_types_them_but_integers_stay_integers(tmp_path):
    (tmp_path / "t.csv").write_text("id,text,label,n,flag,code,x\n"
                                    "1,a,yes,5,true,1,\n"
                                    "2,b,no,,FALSE,x7,\n"
                                    "3,\"c, quoted\nover two lines\",yes,-2,,08,\n")
    entry = ("  - name: t\n    source: {path: t.csv}\n"
             "    columns: {id: id, prompt: text, expected: label, tags: [n, flag, code, x]}\n    answer: {type: exact}\n")
    cases = _cases(tmp_path, entry, "typed.yaml")
    assert [c.id for c in cases] == ["1", "2", "3"] and cases[2].prompt == "c, quoted\nover two lines"
    assert [c.tags for c in cases] == [{"n": 5, "flag": True, "code": "1"}, {"flag": False, "code": "x7"},
                                       {"n": -2, "code": "08"}]


def test_a_csv_record_longer_than_its_header_names_the_row(project, cli):
    _schema(project)
    text = _flat().to_csv(index=False).splitlines()
    text[3] += ",extra"
    (project / "t.csv").write_text("\n".join(text) + "\n")
    _one_line_error(cli, _config(project, _csv_entry("t.csv")), "t.csv:4 (spreadsheet row 4)", "8 fields where the header has 7",
                    "comma-separated, UTF-8")


def test_json_rows_keep_their_nested_values_and_a_missing_key_is_empty(tmp_path):
    rows = [{"ticket_id": "a", "text": "x", "expected": {"intent": "billing"}, "risk": "high"},
            {"ticket_id": "b", "text": "y", "expected": {"intent": "refund"}}]
    write_jsonl(tmp_path / "t.jsonl", rows)
    entry = ("  - name: t\n    source: {path: t.jsonl}\n    columns: {id: ticket_id, prompt: text, expected: expected, "
             "tags: [risk]}\n    answer: {type: json_fields}\n")
    cases = _cases(tmp_path, entry, "j.yaml")
    assert [c.expected for c in cases] == [{"intent": "billing"}, {"intent": "refund"}]
    assert [c.tags for c in cases] == [{"risk": "high"}, {}]


# -- encodings and delimiters named in errors -----------------------------------------------------------------------

def test_a_csv_that_is_not_utf8_names_what_it_reads_as(project, cli):
    _schema(project)
    frame = _flat()
    frame.loc[0, "text"] = "Mon café est froid"
    (project / "t.csv").write_bytes(frame.to_csv(index=False).encode("cp1252"))
    _one_line_error(cli, _config(project, _csv_entry("t.csv")), "t.csv", "not UTF-8", "Windows-1252", "CSV UTF-8")


def test_a_bom_read_as_latin1_says_reopen_as_utf8(project, cli):
    _schema(project)
    text = "\ufeff" + _flat().to_csv(index=False).replace("Maria", "Mariä")
    (project / "t.csv").write_text(text.encode("utf-8").decode("latin-1"), encoding="utf-8")
    line = _one_line_error(cli, _config(project, _csv_entry("t.csv")), "t.csv:1", "ï»¿", "reopen")
    assert "UTF-8" in line


def test_a_csv_parse_error_names_the_delimiter_it_was_read_with(project, cli):
    _schema(project)
    text = _flat().to_csv(index=False, sep=";").splitlines()
    text[5] += ";one;too;many"
    (project / "t.csv").write_text("\n".join(text) + "\n")
    _one_line_error(cli, _config(project, _csv_entry("t.csv")), "t.csv", "semicolon-separated, UTF-8")


# -- cases that can never pass --------------------------------------------------------------------------------------

def test_expected_outside_the_output_schema_is_refused_naming_row_and_column(project, cli):
    _schema(project)
    frame = _flat()
    frame.loc[2, "intent"] = "refnd"
    frame.to_csv(project / "t.csv", index=False)
    line = _one_line_error(cli, _config(project, _csv_entry("t.csv")), "t.csv:4 (spreadsheet row 4)", "field 'intent'", "'refnd'")
    assert "did you mean 'refund'?" in line and "never pass" in line


def test_an_empty_expected_cell_is_refused(project, cli):
    _schema(project)
    frame = _flat()
    frame.loc[4, "priority"] = None
    frame.to_csv(project / "t.csv", index=False)
    _one_line_error(cli, _config(project, _csv_entry("t.csv")), "t.csv:6 (spreadsheet row 6)", "field 'priority'", "empty")
    no_schema = _csv_entry("t.csv").replace(f"    {SCHEMA_FORMAT}\n", "")
    _one_line_error(cli, _config(project, no_schema), "t.csv:6 (spreadsheet row 6)", "field 'priority'", "empty")


def _jsonl_config(project: Path, rows: list[dict], answer: str, fmt: str = "") -> Path:
    write_jsonl(project / "s.jsonl", rows)
    entry = f"  - name: s\n    path: s.jsonl\n    answer: {answer}\n" + (f"    format: {fmt}\n" if fmt else "")
    return _config(project, entry)


def _ticket(i: int, expected) -> dict:
    return {"id": f"c{i}", "prompt": f"ticket {i}", "expected": expected}


def test_jsonl_expected_outside_the_schema_names_line_and_field(project, cli):
    _schema(project)
    rows = [_ticket(1, {"intent": "refund", "priority": "low"}), _ticket(2, {"intent": "refnd", "priority": "low"})]
    config = _jsonl_config(project, rows, "{type: json_fields, fields: [intent, priority]}", SCHEMA_LIST)
    _one_line_error(cli, config, "s.jsonl:2", "field 'expected.intent'", "did you mean 'refund'?")


def test_an_expected_null_the_schema_allows_is_a_case(project, cli):
    schema = {"type": "object", "properties": {"refund": {"type": ["number", "null"]}}}
    (project / "ticket.schema.json").write_text(json.dumps(schema))
    config = _jsonl_config(project, [_ticket(1, {"refund": None}), _ticket(2, {"refund": 12.5})],
                           "{type: json_fields}", SCHEMA_LIST)
    code, out, err = cli("validate", "-c", config)
    assert code == 0, err


@pytest.mark.parametrize("answer, expected, fmt, words", [
    ("{type: exact}", "", "", ["empty"]),
    ("{type: exact}", "   ", "", ["empty"]),
    ("{type: numeric}", "about ten", "", ["numeric needs a number"]),
    ("{type: label, labels: [billing, refund]}", "refnd", "", ["not one of answer.labels", "did you mean 'refund'?"]),
    ("{type: exact}", '{"intent": "refund"}', SCHEMA_LIST, ["json_schema format check", "priority"]),
    ("{type: exact}", "yes", "[{type: json}]", ["json format check", "not JSON"]),
    ("{type: exact}", "a long answer", "[{type: max_length, max_chars: 5}]", ["13 chars > 5"]),
])
def test_jsonl_refusals_of_answers_no_output_can_meet(project, cli, answer, expected, fmt, words):
    _schema(project)
    config = _jsonl_config(project, [_ticket(1, "ok" if "numeric" not in answer else 3), _ticket(2, expected)], answer, fmt)
    if "label" in answer:
        config = _jsonl_config(project, [_ticket(1, "billing"), _ticket(2, expected)], answer, fmt)
    if "exact" in answer and fmt:
        config = _jsonl_config(project, [_ticket(2, expected)], answer, fmt)
    line = _one_line_error(cli, config, "s.jsonl:", "field 'expected'", *words)
    assert "never pass" in line


def test_answers_that_read_no_expected_answer_accept_an_empty_one(project, cli):
    config = _jsonl_config(project, [_ticket(1, None), _ticket(2, "")], "{type: regex, pattern: 'ok'}")
    assert cli("validate", "-c", config)[0] == 0


def test_check_never_runs_cases_whose_empty_cells_an_answer_would_match(project, cli):
    """Empty priority cells and outputs that give priority null: json_fields would pass every case, a PASS on
    answers nobody wrote down. `check` refuses the suite before anything runs (exit 2), no run directory."""
    frame = _flat().head(12)
    frame["priority"] = None
    frame.to_csv(project / "t.csv", index=False)
    write_jsonl(project / "responses.jsonl", [{"id": i, "output": json.dumps({"intent": t, "priority": None})}
                                              for i, t in zip(frame["ticket_id"], frame["intent"])])
    config = _config(project, _csv_entry("t.csv").replace(f"    {SCHEMA_FORMAT}\n", ""))
    code, _, err = cli("check", "-c", config, "--run-id", "r", "--no-progress")
    assert code == 2 and "t.csv:2 (spreadsheet row 2)" in err and "field 'priority'" in err and "empty" in err, err
    assert not (project / "reports" / "r").exists()


# -- did you mean ---------------------------------------------------------------------------------------------------

def test_unknown_config_key_suggests_the_one_meant(project, cli):
    config = project / "releasegate.yaml"
    config.write_text(config.read_text().replace("output:", "outptu:"))
    line = _one_line_error(cli, config, "field 'outptu'", "did you mean 'output'?")
    assert "allowed:" not in line


def test_unknown_metric_suggests_the_one_meant(project, cli):
    rubric = project / "rubrics" / "example.yaml"
    text = rubric.read_text().replace("criteria:\n", "criteria:\n  - {metric: cost_per_1m_tokens, op: '<=', threshold: 5}\n")
    rubric.write_text(text)
    line = _one_line_error(cli, project / "releasegate.yaml", "unknown metric 'cost_per_1m_tokens'",
                           "did you mean 'cost_per_1m_output_tokens'?")
    assert "accuracy" not in line  # the one meant, not the list of every metric


def test_a_mistyped_enum_value_suggests_the_one_meant(project, cli):
    rows = [{"id": "c1", "messages": [{"role": "sytem", "content": "x"}, {"role": "user", "content": "y"}],
             "expected": "ok"}]
    config = _jsonl_config(project, rows, "{type: exact}")
    _one_line_error(cli, config, "s.jsonl:1", "field 'messages[0].role'", "did you mean 'system'?")


def test_missing_sheet_lists_the_sheets_and_suggests_one(project, cli):
    with pd.ExcelWriter(project / "t.xlsx") as writer:
        _flat().to_excel(writer, sheet_name="english", index=False)
        _flat().to_excel(writer, sheet_name="korean", index=False)
    entry = f"  - name: t\n    source: {{path: t.xlsx, sheet: Korean}}\n    {FLAT_COLUMNS}\n    {TEMPLATE}\n"
    _one_line_error(cli, _config(project, entry), "releasegate.yaml:4: field 'suites[0].source.sheet'", "t.xlsx",
                    "no sheet 'Korean'", "sheets: english, korean", "did you mean 'korean'?")


# -- an endpoint that does not answer -------------------------------------------------------------------------------

def _endpoint_config(project: Path, url: str, extra: str = "") -> Path:
    config = project / "ep.yaml"
    config.write_text(f"target: {{backend: openai, base_url: '{url}', model: m{extra}}}\n"
                      "suites: [{path: suites/example.jsonl}]\nrubric: rubrics/example.yaml\noutput: {dir: reports}\n")
    return config


def test_an_unreachable_endpoint_leaves_no_run_directory(project, cli):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    code, _, err = cli("check", "-c", _endpoint_config(project, f"http://127.0.0.1:{port}/v1"), "--no-progress")
    assert code == 4 and f"127.0.0.1:{port}" in err and len(err.strip().splitlines()) == 1
    assert not (project / "reports").exists() or not any((project / "reports").iterdir())


def test_an_endpoint_that_never_answers_fails_at_the_stall_timeout(project, cli):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(server.accept()[0]), daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.getsockname()[1]}/v1"
        code, _, err = cli("check", "-c", _endpoint_config(project, url, ", stall_timeout_s: 0.2"), "--no-progress")
    finally:
        for conn in held:
            conn.close()
        server.close()
    assert code == 4 and "no answer within stall_timeout_s" in err, err
    assert not (project / "reports").exists() or not any((project / "reports").iterdir())


# -- a review CSV whose UTF-8 was read as Latin-1 ---------------------------------------------------------------------

from test_review import assert_refused, exported, read_rows, review_project, run_dir, write_rows  # noqa: E402,F401


def test_a_review_csv_read_as_latin1_says_reopen_as_utf8(run_dir, cli, exported):  # noqa: F811
    path = run_dir.parent / "garbled.csv"
    write_rows(path, exported[:2])  # UTF-8 with a byte-order mark, as exported
    path.write_text(path.read_bytes().decode("latin-1"), encoding="utf-8")  # opened as Latin-1, saved as UTF-8
    assert_refused(cli, run_dir, path, "garbled.csv:1:", "ï»¿", "reopen the original as UTF-8")
