"""The CLI on a real project on disk (replay backend): check, gate, validate, init, JSON output."""

import json

from conftest import GOOD, ROOT, heavy_imports_after, run_subprocess, write_jsonl
from releasegate.record.records import RunDir


def test_check_writes_the_run_record(project, cli):
    code, out, err = cli("check", "--config", project / "releasegate.yaml", "--run-id", "r1", "--no-progress")
    assert code == 1  # example-002 is answered with the wrong priority
    run = project / "reports" / "r1"
    for name in ("run.json", "records.jsonl", "config.yaml", "rubric.yaml", "report.json", "report.md"):
        assert (run / name).is_file(), name
    records = RunDir(run).read_records()
    assert [r.case_id for r in records] == ["example-001", "example-002"]
    assert records[0].scores["answer"]["passed"] and not records[1].scores["answer"]["passed"]
    report = json.loads((run / "report.json").read_text())
    assert report["verdict"] == "FAIL"
    assert "accuracy" in out and "fail" in out


def test_json_output_is_only_json_on_stdout(project, cli):
    code, out, err = cli("check", "-c", project / "releasegate.yaml", "--run-id", "r2", "--no-progress", "--json")
    report = json.loads(out)
    assert report["exit_code"] == code == 1
    assert "criterion" in err  # the human table went to stderr


def test_gate_recomputes_without_the_model(project, cli):
    cli("check", "-c", project / "releasegate.yaml", "--run-id", "r3", "--no-progress")
    run = project / "reports" / "r3"
    first = json.loads((run / "report.json").read_text())
    code, out, _ = cli("gate", run, "--json")
    again = json.loads(out)
    assert code == 1 and again["criteria"] == first["criteria"]
    # a laxer rubric turns the same outputs into a pass (latency criterion dropped: replay measures none)
    lax = project / "lax.yaml"
    lax.write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.5}\nreview: {required_domains: []}\n")
    code, out, _ = cli("gate", run, "--rubric", lax, "--json")
    whatif_report = json.loads(out)  # it judges the outputs again, but over a run that failed it never exits 0
    assert code == 3 and whatif_report["verdict"] == "INCONCLUSIVE"
    assert whatif_report["judged_by"]["recorded_verdict"] == "FAIL"
    assert json.loads((run / "report.json").read_text())["verdict"] == "FAIL"  # a what-if never rewrites the run's
    (whatif,) = (run / "whatif").iterdir()
    assert json.loads((whatif / "report.json").read_text())["verdict"] == "INCONCLUSIVE"


def test_forbidden_rules_come_from_the_rubric(project, cli):
    write_jsonl(project / "responses.jsonl", [
        {"id": "example-001", "output": GOOD},
        {"id": "example-002", "output": "We promise a guaranteed refund"},
    ])
    code, out, _ = cli("check", "-c", project / "releasegate.yaml", "--run-id", "r4", "--no-progress", "--json")
    report = json.loads(out)
    forbidden = next(c for c in report["criteria"] if c["metric"] == "forbidden_rate")
    assert forbidden["value"] == 0.5 and forbidden["verdict"] == "fail"


def test_missing_response_is_a_recorded_error(project, cli):
    write_jsonl(project / "responses.jsonl", [{"id": "example-001", "output": GOOD}])
    code, out, _ = cli("check", "-c", project / "releasegate.yaml", "--run-id", "r5", "--no-progress", "--json")
    report = json.loads(out)
    assert report["counts"]["errors"] == {"missing_response": 1}
    assert report["metrics"]["error_rate"]["value"] == 0.5
    guard = next(c for c in report["criteria"] if c["metric"] == "error_rate")  # two requests decide nothing
    assert guard["verdict"] == "insufficient" and "an error rate needs at least 3" in guard["reason"]


def test_validate_and_init(tmp_path, cli):
    code, out, _ = cli("init", tmp_path)
    assert code == 0 and (tmp_path / "releasegate.yaml").exists()
    code, out, _ = cli("validate", "-c", tmp_path / "releasegate.yaml", "--json")
    assert code == 0 and json.loads(out)["cases"] == 2
    code, _, err = cli("init", tmp_path)
    assert code == 2 and "already exists" in err and "--force" in err


def test_validate_the_repo_demo(cli):
    code, out, _ = cli("validate", "-c", ROOT / "releasegate.yaml", "--json")
    summary = json.loads(out)
    assert code == 0 and summary["cases"] >= 100


def test_help_names_exit_codes(cli):
    code, out, _ = cli("--help")
    assert code == 0 and "Exit codes" in out and "4 target failed" in " ".join(out.split())
    code, out, _ = cli("check", "--help")
    assert code == 0 and "4 the target could not be run" in " ".join(out.replace("│", " ").split())


def test_help_is_one_line_a_command_in_panels_within_40_lines_at_80_columns():
    """`releasegate --help` in a CI log: every command on one line, grouped in panels, the screen under 40 lines."""
    from conftest import run_subprocess
    from releasegate.cli.app import COMMANDS

    out = run_subprocess("--help", env={"COLUMNS": "80"}).stdout
    lines = out.rstrip().splitlines()
    assert len(lines) < 40 and max(len(line) for line in lines) <= 80, out
    for panel in ("Run", "Judge", "Review", "Compare", "Release"):
        assert f"─ {panel} ─" in out
    for name, _function, _panel, short, _codes in COMMANDS:
        assert any(line.startswith(f"│ {name} ") and short in line for line in lines), name


def test_help_and_validate_do_not_import_torch(tmp_path):
    commands = [["--help"], ["validate", "-c", ROOT / "releasegate.yaml"]]
    assert heavy_imports_after(commands, ("torch", "transformers", "peft", "evaluate", "datasets")) == []


def test_help_loads_no_model_run_or_schema_machinery():
    """`--help` imports only the CLI's own wiring: no pydantic models, no YAML or JSON Schema, no reports."""
    heavy = ("pydantic", "jsonschema", "yaml", "numpy", "releasegate.record.records", "releasegate.report",
             "releasegate.pipeline.gate", "releasegate.inputs.config", "releasegate.pipeline.check", "asyncio")
    assert heavy_imports_after([["--help"]], heavy) == []


def test_validate_loads_no_run_record_or_reports():
    heavy = ("numpy", "releasegate.record.records", "releasegate.report", "releasegate.pipeline.gate", "releasegate.pipeline.check",
             "releasegate.record.review_labels", "releasegate.review.csv_io")
    assert heavy_imports_after([["validate", "-c", ROOT / "releasegate.yaml"]], heavy) == []


def test_entry_point_exit_code_is_real(project):
    proc = run_subprocess("check", "-c", project / "releasegate.yaml", "--run-id", "r6", "--no-progress")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr


def test_gate_on_a_run_cut_short_is_never_a_pass(project, cli):
    cli("check", "-c", project / "releasegate.yaml", "--run-id", "cut", "--no-progress")
    run = project / "reports" / "cut"
    lax = project / "lax.yaml"
    lax.write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.0}\nreview: {required_domains: []}\n")
    assert cli("gate", run, "--rubric", lax)[0] == 3  # a what-if over a run that failed never exits 0
    lines = (run / "records.jsonl").read_text().splitlines()
    (run / "records.jsonl").write_text(lines[0] + "\n")  # as if killed after the first case
    code, out, err = cli("gate", run, "--rubric", lax, "--json")
    report = json.loads(out)
    assert code == 3 and report["verdict"] == "INCONCLUSIVE" and "1 of 2 cases" in report["incomplete"]


def test_commands_run_one_after_another_in_one_process_keep_their_own_options(project, cli):
    """One process may call `main` many times: no option, value or usage error of one call carries into the next."""
    cli("check", "-c", project / "releasegate.yaml", "--run-id", "r", "--no-progress")
    run = project / "reports" / "r"
    code, out, _ = cli("gate", run, "--json")
    assert code == 1 and json.loads(out)["verdict"] == "FAIL"
    code, out, err = cli("gate", run)  # no --json this time: the human table, on stdout, no JSON
    assert code == 1 and "criterion" in out and not out.lstrip().startswith("{")
    lax = project / "lax.yaml"
    lax.write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.5}\nreview: {required_domains: []}\n")
    assert cli("gate", run, "--rubric", lax, "--json")[0] == 3
    code, out, _ = cli("gate", run, "--json")  # the rubric of the call before is not this call's
    judged_by = json.loads(out)["judged_by"]
    assert code == 1 and judged_by["file"] == "rubric.yaml" and not judged_by["whatif"]
    code, _, err = cli("gate", run, "--no-such-option")
    assert code == 2 and "--no-such-option" in err
    assert cli("gate", run, "--json")[0] == 1  # a usage error leaves nothing behind
