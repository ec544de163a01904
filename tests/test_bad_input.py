"""Bad input: one line naming file, line or field; exit 2; no traceback; nothing recorded is lost."""

import pytest

from conftest import run_subprocess


def one_line_error(cli, *args):
    code, out, err = cli(*args)
    assert code == 2, (out, err)
    assert "Traceback" not in err + out
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def edit(path, old, new):
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def check(cli, project):
    return one_line_error(cli, "validate", "-c", project / "releasegate.yaml")


def test_malformed_yaml(project, cli):
    edit(project / "releasegate.yaml", "generation:\n", "generation: [\n")
    msg = check(cli, project)
    assert "releasegate.yaml:" in msg and "malformed YAML" in msg


def test_wrong_type_names_field_and_line(project, cli):
    edit(project / "releasegate.yaml", "  threads: 1", "  threads: two")
    line = (project / "releasegate.yaml").read_text().splitlines().index("  threads: two") + 1
    msg = check(cli, project)
    assert f"releasegate.yaml:{line}:" in msg and "target.threads" in msg and "expected integer" in msg


def test_unknown_key(project, cli):
    edit(project / "releasegate.yaml", "  threads: 1", "  threads: 1\n  temperture: 0.2")
    msg = check(cli, project)
    assert "target.temperture" in msg and "unknown key" in msg and "allowed:" in msg


def test_missing_required_key(project, cli):
    edit(project / "releasegate.yaml", "rubric: rubrics/example.yaml\n", "")
    assert "field 'rubric'" in check(cli, project)


def test_missing_config_file(tmp_path, cli):
    msg = one_line_error(cli, "validate", "-c", tmp_path / "nope.yaml")
    assert "nope.yaml" in msg and "not found" in msg


def test_empty_config(tmp_path, cli):
    (tmp_path / "c.yaml").write_text("")
    assert "must be a mapping" in one_line_error(cli, "validate", "-c", tmp_path / "c.yaml")


def test_missing_suite_file(project, cli):
    edit(project / "releasegate.yaml", "suites/example.jsonl", "suites/missing.jsonl")
    msg = check(cli, project)
    line = (project / "releasegate.yaml").read_text().splitlines().index("  - path: suites/missing.jsonl") + 1
    assert f"releasegate.yaml:{line}: field 'suites[0].path'" in msg and "missing.jsonl not found" in msg


def test_missing_rubric_file(project, cli):
    edit(project / "releasegate.yaml", "rubrics/example.yaml", "rubrics/none.yaml")
    assert "none.yaml" in check(cli, project)


def test_suite_line_not_json(project, cli):
    with (project / "suites/example.jsonl").open("a") as fh:
        fh.write("{not json}\n")
    msg = check(cli, project)
    assert "example.jsonl:3" in msg and "not valid JSON" in msg


def test_suite_case_bad_field(project, cli):
    with (project / "suites/example.jsonl").open("a") as fh:
        fh.write('{"id": "x", "messages": [{"role": "bot", "content": "hi"}], "expected": "a"}\n')
    msg = check(cli, project)
    assert "example.jsonl:3" in msg and "messages[0].role" in msg


def test_suite_case_needs_messages_or_prompt(project, cli):
    with (project / "suites/example.jsonl").open("a") as fh:
        fh.write('{"id": "x", "expected": "a"}\n')
    assert "example.jsonl:3" in check(cli, project)


def test_duplicate_case_id(project, cli):
    path = project / "suites/example.jsonl"
    path.write_text(path.read_text() + path.read_text().splitlines()[0] + "\n")
    msg = check(cli, project)
    assert "example.jsonl:3" in msg and "duplicate case id" in msg


def test_rubric_unknown_metric(project, cli):
    edit(project / "rubrics/example.yaml", "metric: accuracy", "metric: acuracy")
    msg = check(cli, project)
    assert "example.yaml:3" in msg and "unknown metric 'acuracy'" in msg


def test_rubric_bad_regex_in_forbidden_file(project, cli):
    edit(project / "rubrics/forbidden.yaml", "regex: ['", "regex: ['(unclosed")
    msg = check(cli, project)
    assert "forbidden.yaml" in msg and "invalid regex" in msg


def test_bad_json_schema_file(project, cli):
    edit(project / "releasegate.yaml", "      - {type: json}", "      - {type: json_schema, schema: s.json}")
    (project / "s.json").write_text("{oops")
    assert "s.json:1" in check(cli, project)


def test_gate_on_a_directory_that_is_not_a_run(tmp_path, cli):
    msg = one_line_error(cli, "gate", tmp_path)
    assert "not a run directory" in msg


def test_check_on_bad_input_writes_no_run(project, cli):
    edit(project / "rubrics/example.yaml", "metric: accuracy", "metric: acuracy")
    one_line_error(cli, "check", "-c", project / "releasegate.yaml")
    assert not (project / "reports").exists()


def test_existing_run_is_never_overwritten(project, cli):
    cli("check", "-c", project / "releasegate.yaml", "--run-id", "keep", "--no-progress")
    before = (project / "reports/keep/records.jsonl").read_bytes()
    msg = one_line_error(cli, "check", "-c", project / "releasegate.yaml", "--run-id", "keep", "--no-progress")
    assert "already exists" in msg
    assert (project / "reports/keep/records.jsonl").read_bytes() == before


@pytest.mark.parametrize("args", [["check", "--bogus"], ["nosuchcommand"], ["check", "--limit", "0"]])
def test_usage_errors_exit_2(args):
    proc = run_subprocess(*args)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_subprocess_reports_one_line(project):
    (project / "releasegate.yaml").write_text("target: {backend: hf, base: 3}\nsuites: [{path: s.jsonl}]\nrubric: r.yaml\n")
    proc = run_subprocess("validate", "-c", project / "releasegate.yaml")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "target.base" in proc.stderr
