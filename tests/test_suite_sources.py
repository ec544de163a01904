"""Suites from tabular sources (parquet, CSV, JSON lines, save_to_disk, xlsx, the hub cache): the same cases,
verdict and records as the JSONL suite they were written from; one-line errors naming file, row and column;
a limited load reads only the rows it needs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ROOT, run_subprocess, write_jsonl
from releasegate.inputs.config import load_config
from releasegate.inputs.suites import load_suite

pd = pytest.importorskip("pandas")
pytest.importorskip("datasets")
pytest.importorskip("openpyxl")

TICKETS = ROOT / "suites" / "demo" / "tickets.jsonl"
SYSTEM = "Classify the support ticket. Reply with JSON only."
ANSWER = "answer: {type: json_fields, fields: [intent, priority]}"
FORMAT = "format: [{type: json}, {type: max_length, max_chars: 200}]"


def _rows() -> list[dict]:
    return [json.loads(line) for line in TICKETS.read_text().splitlines() if line.strip()]


def _flat() -> pd.DataFrame:
    """The demo tickets as a table: one column per field, as a spreadsheet would hold them."""
    return pd.DataFrame([{
        "ticket_id": r["id"], "text": r["messages"][1]["content"], "intent": r["expected"]["intent"],
        "priority": r["expected"]["priority"], **r["tags"],
    } for r in _rows()])


def _nested() -> pd.DataFrame:
    """The demo tickets with their messages and expected object as nested columns (parquet holds them)."""
    return pd.DataFrame([{"ticket_id": r["id"], "messages": r["messages"], "expected": r["expected"], **r["tags"]}
                         for r in _rows()])


TEMPLATE = f'template: {{system: "{SYSTEM}", user: "{{{{ text }}}}"}}'
FLAT_COLUMNS = "columns: {id: ticket_id, expected: {intent: intent, priority: priority}, tags: [domain, risk, task]}"


def _entry(kind: str, directory: Path) -> str:
    """A `suites:` entry named `tickets` reading the demo tickets written as `kind`."""
    if kind == "jsonl":
        return f"  - name: tickets\n    path: {TICKETS}\n    {ANSWER}\n    {FORMAT}\n"
    if kind == "parquet":
        path = directory / "tickets.parquet"
        _nested().to_parquet(path)
        source = f"source: {{format: parquet, path: {path.name}}}"
        columns = "columns: {id: ticket_id, messages: messages, expected: expected, tags: [domain, risk, task]}"
        return f"  - name: tickets\n    {source}\n    {columns}\n    {ANSWER}\n    {FORMAT}\n"
    if kind == "parquet_template":
        path = directory / "flat.parquet"
        _flat().to_parquet(path)
        source = f"source: {{path: {path.name}}}"
    elif kind == "xlsx":
        path = directory / "tickets.xlsx"
        with pd.ExcelWriter(path) as writer:
            pd.DataFrame({"note": ["another sheet"]}).to_excel(writer, sheet_name="readme", index=False)
            _flat().to_excel(writer, sheet_name="tickets", index=False)
        source = f"source: {{format: xlsx, path: {path.name}, sheet: tickets}}"
    elif kind == "csv":
        path = directory / "tickets.csv"
        _flat().to_csv(path, index=False)
        source = f"source: {{path: {path.name}}}"
    elif kind == "jsonl_rows":
        path = directory / "tickets.rows.jsonl"
        _flat().to_json(path, orient="records", lines=True)
        source = f"source: {{format: jsonl, path: {path.name}}}"
    elif kind == "json":
        path = directory / "tickets.json"
        _flat().to_json(path, orient="records")
        source = f"source: {{path: {path.name}}}"
    elif kind == "arrow":
        import pyarrow as pa

        path = directory / "tickets.arrow"
        table = pa.Table.from_pandas(_flat(), preserve_index=False)
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        source = f"source: {{path: {path.name}}}"
    elif kind == "disk":
        import datasets

        path = directory / "saved"
        datasets.DatasetDict({"validation": datasets.Dataset.from_pandas(_flat())}).save_to_disk(str(path))
        source = f"source: {{format: disk, path: {path.name}, split: validation}}"
    else:
        raise AssertionError(kind)
    return f"  - name: tickets\n    {source}\n    {FLAT_COLUMNS}\n    {TEMPLATE}\n    {ANSWER}\n    {FORMAT}\n"


def _config(directory: Path, entry: str, name: str = "releasegate.yaml") -> Path:
    path = directory / name
    path.write_text(
        "target: {backend: replay, responses: responses.jsonl}\n"
        f"suites:\n{entry}"
        "rubric: rubrics/example.yaml\n"
        "output: {dir: reports}\n",
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize("kind", ["parquet", "parquet_template", "xlsx", "csv", "jsonl_rows", "json", "arrow", "disk"])
def test_source_gives_the_same_cases_as_the_jsonl_suite(tmp_path, kind):
    (tmp_path / "rubrics").mkdir()
    want = load_suite(load_config(_config(tmp_path, _entry("jsonl", tmp_path), "a.yaml")).suites[0], tmp_path)
    got = load_suite(load_config(_config(tmp_path, _entry(kind, tmp_path), "b.yaml")).suites[0], tmp_path)
    assert len(want) == 60
    assert got == want  # ids, messages, expected, tags, answer, format: the same Case objects


def _responses(directory: Path) -> None:
    rows = []
    for i, r in enumerate(_rows()):
        right = json.dumps(r["expected"])
        rows.append({"id": r["id"], "output": right if i % 7 else '{"intent": "other", "priority": "low"}'})
    write_jsonl(directory / "responses.jsonl", rows)


@pytest.mark.parametrize("kind", ["parquet", "xlsx", "disk"])
def test_check_gives_the_same_verdict_and_records(project, cli, kind):
    _responses(project)
    base = _config(project, _entry("jsonl", project), "jsonl.yaml")
    other = _config(project, _entry(kind, project), f"{kind}.yaml")
    code_a, _, err_a = cli("check", "-c", base, "--run-id", "a", "--allow-pending", "--no-progress")
    code_b, _, err_b = cli("check", "-c", other, "--run-id", "b", "--allow-pending", "--no-progress")
    assert code_a == code_b == 1, (err_a, err_b)  # accuracy 51/60 < 0.9
    report_a = json.loads((project / "reports/a/report.json").read_text())
    report_b = json.loads((project / "reports/b/report.json").read_text())
    assert report_a["verdict"] == report_b["verdict"] == "FAIL"
    assert (project / "reports/a/records.jsonl").read_text() == (project / "reports/b/records.jsonl").read_text()


def _one_line_error(cli, config: Path, *parts: str) -> str:
    code, out, err = cli("validate", "-c", config)
    assert code == 2, (out, err)
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1, err
    for part in parts:
        assert part in lines[0], lines[0]
    return lines[0]


def test_a_missing_column_names_the_config_key_that_names_it(project, cli):
    _flat().drop(columns=["priority"]).to_parquet(project / "t.parquet")
    entry = f"  - name: t\n    source: {{path: t.parquet}}\n    {FLAT_COLUMNS}\n    {TEMPLATE}\n"
    line = _one_line_error(cli, _config(project, entry), "releasegate.yaml:", "field 'suites[0].columns.expected.priority'",
                           "t.parquet has no column 'priority'")
    assert "its columns: ticket_id, text, intent" in line


def test_template_with_a_missing_field_names_file_row_and_column(project, cli):
    _flat().to_parquet(project / "t.parquet")
    entry = (f"  - name: t\n    source: {{path: t.parquet}}\n    {FLAT_COLUMNS}\n"
             "    template: {user: '{{ text }} / {{ customer_name }}'}\n")
    line = _one_line_error(cli, _config(project, entry), "releasegate.yaml:", "field 'suites[0].template.user'",
                           "uses 'customer_name', which is not a column of")
    assert "t.parquet" in line and "its columns: ticket_id" in line


def test_template_is_sandboxed(project, cli):
    _flat().to_parquet(project / "t.parquet")
    entry = (f"  - name: t\n    source: {{path: t.parquet}}\n    {FLAT_COLUMNS}\n"
             "    template: {user: '{{ text.__class__.__mro__ }}'}\n")
    _one_line_error(cli, _config(project, entry), "releasegate.yaml:", "field 'suites[0].template.user'", "not allowed")


def test_bad_row_names_file_row_and_column(project, cli):
    frame = _flat()
    frame.loc[4, "ticket_id"] = "ticket 5 has spaces"
    frame.to_parquet(project / "t.parquet")
    entry = f"  - name: t\n    source: {{path: t.parquet}}\n    {FLAT_COLUMNS}\n    {TEMPLATE}\n"
    _one_line_error(cli, _config(project, entry), "t.parquet (row 5)", "field 'ticket_id'")


def test_bad_tag_value_in_xlsx_names_the_column(project, cli):
    frame = _flat()
    frame["risk"] = frame["risk"].astype(object)
    frame.loc[2, "risk"] = "x" * 2000
    frame.to_excel(project / "t.xlsx", index=False)
    entry = f"  - name: t\n    source: {{path: t.xlsx}}\n    {FLAT_COLUMNS}\n    {TEMPLATE}\n"
    _one_line_error(cli, _config(project, entry), "t.xlsx (spreadsheet row 4)", "field 'risk'")


def test_config_errors(project, cli):
    _flat().to_parquet(project / "t.parquet")
    both = f"  - name: t\n    source: {{path: t.parquet}}\n    columns: {{prompt: text, expected: intent}}\n    {TEMPLATE}\n"
    _one_line_error(cli, _config(project, both), "field 'suites[0].columns'", "exactly one of")
    no_columns = "  - name: t\n    source: {path: t.parquet}\n"
    _one_line_error(cli, _config(project, no_columns), "field 'suites[0].columns'")
    unknown = "  - name: t\n    source: {path: t.dat}\n    columns: {prompt: text, expected: intent}\n"
    _one_line_error(cli, _config(project, unknown), "field 'suites[0].source.path'", "source.format")
    missing = "  - name: t\n    source: {path: nothere.parquet}\n    columns: {prompt: text, expected: intent}\n"
    _one_line_error(cli, _config(project, missing), "nothere.parquet", "not found")


def test_hub_dataset_not_cached_is_a_one_line_offline_error(project, tmp_path_factory):
    home = tmp_path_factory.mktemp("hf_home")
    entry = ("  - name: t\n    source: {hub: some-org/not-cached, config: default, split: validation, revision: main}\n"
             "    columns: {prompt: text, expected: label}\n")
    config = _config(project, entry)
    env = {"HF_HOME": str(home), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    out = run_subprocess("check", "-c", config, "--no-progress", cwd=project, env=env)
    assert out.returncode == 2, out.stderr
    lines = [line for line in out.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1, out.stderr
    assert "hub:some-org/not-cached" in lines[0] and "offline" in lines[0], lines[0]


def test_limit_reads_only_the_rows_it_needs(project, cli, monkeypatch):
    import releasegate.inputs.sources as sources

    n = 100_000
    frame = pd.DataFrame({
        "ticket_id": [f"t-{i:06d}" for i in range(n)],
        "text": [f"ticket {i}" for i in range(n)],
        "label": ["billing"] * n,
        "risk": ["high"] * n,
    })
    frame.loc[5, "ticket_id"] = "not a valid id"  # row 6: a full load stops there
    frame.to_parquet(project / "big.parquet", row_group_size=10_000)
    entry = ("  - name: big\n    source: {path: big.parquet}\n"
             "    columns: {id: ticket_id, prompt: text, expected: label, tags: [risk]}\n"
             "    answer: {type: exact}\n")
    config = _config(project, entry)
    write_jsonl(project / "responses.jsonl", [{"id": f"t-{i:06d}", "output": "billing"} for i in range(3)])

    pulled = []
    real = sources._file_rows

    def counting(src):
        for row in real(src):
            pulled.append(row["ticket_id"])
            yield row

    monkeypatch.setattr(sources, "_file_rows", counting)
    code, out, err = cli("check", "-c", config, "--limit", "3", "--run-id", "lim", "--allow-pending", "--no-progress")
    assert code != 2, err
    assert pulled == ["t-000000", "t-000001", "t-000002"]
    records = (project / "reports/lim/records.jsonl").read_text().splitlines()
    assert [json.loads(r)["case_id"] for r in records] == pulled

    pulled.clear()
    _one_line_error(cli, config, "big.parquet (row 6)", "field 'ticket_id'")
    assert len(pulled) == 6


def _hub_cache(home: Path, repo: str, commit: str = "0123456789abcdef0123456789abcdef01234567") -> None:
    """A hub cache holding a dataset repository `repo` as `huggingface_hub` lays it out (refs/main, snapshot)."""
    folder = home / "hub" / ("datasets--" + repo.replace("/", "--"))
    data = folder / "snapshots" / commit / "data"
    data.mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(commit)
    _nested().to_parquet(data / "validation-00000-of-00001.parquet")
    _nested().head(3).to_parquet(data / "train-00000-of-00001.parquet")


def test_hub_dataset_from_the_local_hub_cache(project, tmp_path_factory):
    home = tmp_path_factory.mktemp("hf_home")
    _hub_cache(home, "acme/tickets")
    _responses(project)
    columns = "columns: {id: ticket_id, messages: messages, expected: expected, tags: [domain, risk, task]}"
    entry = (f"  - name: tickets\n    source: {{hub: acme/tickets, split: validation, revision: main}}\n"
             f"    {columns}\n    {ANSWER}\n    {FORMAT}\n")
    env = {"HF_HOME": str(home), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    hub = _config(project, entry, "hub.yaml")
    base = _config(project, _entry("jsonl", project), "jsonl.yaml")
    for config, run_id in ((base, "a"), (hub, "b")):
        out = run_subprocess("check", "-c", config, "--run-id", run_id, "--allow-pending", "--no-progress",
                             cwd=project, env=env)
        assert out.returncode == 1, out.stderr
    assert (project / "reports/a/records.jsonl").read_text() == (project / "reports/b/records.jsonl").read_text()
    missing_split = _config(project, entry.replace("split: validation", "split: test"), "split.yaml")
    out = run_subprocess("validate", "-c", missing_split, cwd=project, env=env)
    assert out.returncode == 2 and "hub:acme/tickets" in out.stderr and "test" in out.stderr, out.stderr


@pytest.mark.parametrize("kind", ["parquet", "disk"])
def test_resume_and_verify_a_source_suite(project, cli, kind):
    _responses(project)
    config = _config(project, _entry(kind, project), f"{kind}.yaml")
    code, _, err = cli("check", "-c", config, "--run-id", "r", "--allow-pending", "--no-progress")
    assert code == 1, err
    run = project / "reports" / "r"
    whole = (run / "records.jsonl").read_text()
    assert cli("verify", run)[0] == 0
    (run / "records.jsonl").write_text(whole.splitlines(True)[0])  # as if killed after the first case
    info = json.loads((run / "run.json").read_text())
    info["status"] = "interrupted"
    (run / "run.json").write_text(json.dumps(info))
    code, _, err = cli("check", "--resume", run, "--allow-pending", "--no-progress")
    assert code == 1, err
    assert (run / "records.jsonl").read_text() == whole


def test_template_row_variable_and_default_ids(project):
    frame = _flat().rename(columns={"text": "ticket text"}).drop(columns=["ticket_id"])
    frame.to_csv(project / "t.csv", index=False)
    entry = ("  - name: t\n    source: {path: t.csv}\n"
             "    columns: {expected: {intent: intent, priority: priority}, tags: {area: domain}}\n"
             "    template: {user: '{{ row[\"ticket text\"] }} ({{ risk }})'}\n")
    cases = load_suite(load_config(_config(project, entry)).suites[0], project)
    rows = _rows()
    assert [c.id for c in cases[:2]] == ["t-000001", "t-000002"]
    assert cases[0].messages == ({"role": "user", "content": f"{rows[0]['messages'][1]['content']} ({rows[0]['tags']['risk']})"},)
    assert cases[0].tags == {"area": "customer_support"}
