"""Templates a config brings (a suite's `template:`, the judge's prompt) render on a budget in the sandbox: each
hostile one is exit 2 at validate, one line naming the file (and the row), in a few seconds of a separate
process; a judge prompt that fails only on some real cases is a judge error for those cases, never a failed run."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from conftest import run_subprocess, write_jsonl
from releasegate.safe_template import MAX_CHARS, TemplateFailed, compile_template, render
from releasegate.testing import StubBehaviour, StubServer

HOSTILE = {
    "nested loops": ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                     "render budget"),
    "huge power": "{{ 9**(9**8) }}", "huge repeat": "{{ 'A' * 10**10 }}",
    "recursive macro": "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
    "mutating the row": "{{ row.pop('nope') }}", "a format with no argument": '{{ "{0}".format() }}',
    "a billion-item range": "{{ range(10**9)|list }}", "division by zero": "{{ 1 // 0 }}",
    "include": "{% include 'other.txt' %}",
    "doubling in a namespace": "{% set ns = namespace(x='x' * 100000) %}{% for i in range(40) %}"
                               "{% set ns.x = ns.x ~ ns.x %}{% endfor %}{{ ns.x }}",
    "doubling by concatenation": "{% set a = 'x' * 3000000 %}{{ a ~ a }}",
    "a huge width": "{{ 'x'|center(10**9) }}{{ '{:>999999999}'.format(1) }}",
    "a huge %-width": "{{ '%0999999999d' % 1 }}",
    "an endless output": "{% for i in range(100000) %}{{ 'y' * 100 }}{% endfor %}",
}
MESSAGE = {"nested loops": "render budget", "huge power": "bits", "huge repeat": "characters",
           "recursive macro": "recursion", "mutating the row": "not allowed", "a format with no argument": "IndexError",
           "a billion-item range": "1,000,000,000", "division by zero": "ZeroDivisionError", "include": "includes",
           "doubling in a namespace": "characters", "doubling by concatenation": "characters",
           "a huge width": "1,000,000,000", "a huge %-width": "width", "an endless output": "characters"}


def text_of(name: str) -> str:
    value = HOSTILE[name]
    return value[0] if isinstance(value, tuple) else value


# ---------------------------------------------------------------- the sandbox itself

@pytest.mark.parametrize("name", list(HOSTILE))
def test_every_hostile_template_is_one_failure(name):
    with pytest.raises(TemplateFailed) as failed:
        render(compile_template(text_of(name)), {"row": {"a": 1}})
    assert MESSAGE[name] in failed.value.message and "\n" not in failed.value.message


def test_ordinary_templates_render_as_jinja_does():
    template = ("{{ row.a }}|{% for i in range(3) %}{{ i }}{% endfor %}|{{ range(5)|length }}|{{ range(3)|reverse|list }}|"
                "{% set ns = namespace(n=0) %}{% for x in [1, 2] %}{% set ns.n = ns.n + x %}{% endfor %}{{ ns.n }}|"
                "{{ 'a,b'.split(',') }}|{{ 'x'|upper }}|{{ '%s-%03d'|format('a', 3) }}|{{ 2**10 }}|{{ 'ab' * 2 }}|"
                "{{ '{}!'.format('hi') }}|{{ 'x' ~ 'y' }}|{{ 'z'|center(5) }}")
    assert render(compile_template(template), {"row": {"a": 1}}) == (
        "1|012|5|[2, 1, 0]|3|['a', 'b']|X|a-003|1024|abab|hi!|xy|  z  ")


def test_an_output_just_under_the_limit_is_kept():
    assert len(render(compile_template("{{ 'x' * n }}"), {"n": MAX_CHARS})) == MAX_CHARS


# ---------------------------------------------------------------- through the CLI, in a separate process

def suite_project(root: Path, template: str) -> Path:
    pd.DataFrame([{"id": "a", "text": "hello", "expected": "x"}, {"id": "b", "text": "boom", "expected": "x"}]
                 ).to_parquet(root / "rows.parquet")
    (root / "rubric.yaml").write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.5}\n")
    write_jsonl(root / "responses.jsonl", [{"id": "a", "output": "x"}, {"id": "b", "output": "x"}])
    config = root / "releasegate.yaml"
    config.write_text("target: {backend: replay, responses: responses.jsonl}\n"
                      "suites:\n  - name: s\n    source: {path: rows.parquet}\n"
                      "    columns: {id: id, expected: expected}\n"
                      f"    template: {{user: {json.dumps(template)}}}\n    answer: {{type: exact}}\n"
                      "rubric: rubric.yaml\n")
    return config


def refused(done, *expected: str) -> None:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for text in expected:
        assert text in done.stderr, (text, done.stderr)


@pytest.mark.parametrize("name", ["nested loops", "huge power", "huge repeat", "recursive macro", "mutating the row",
                                  "a format with no argument", "a billion-item range", "division by zero", "include"])
def test_a_hostile_suite_template_is_exit_2_naming_the_row(tmp_path, name):
    config = suite_project(tmp_path, text_of(name))
    done = run_subprocess("validate", "-c", config, cwd=tmp_path)  # a generous timeout: a hang fails, slowness not
    # what the sandbox refuses whatever the row (an unsafe attribute) is the template's own line in the config;
    # what a row's values make fail names the row
    where = "releasegate.yaml:6" if name == "mutating the row" else "rows.parquet (row 1)"
    refused(done, where, "template.user", MESSAGE[name])


def test_a_suite_template_failing_on_one_row_names_that_row(tmp_path):
    config = suite_project(tmp_path, "{% if text == 'boom' %}{{ 1 // 0 }}{% endif %}{{ text }}")
    refused(run_subprocess("validate", "-c", config, cwd=tmp_path), "rows.parquet (row 2)", "ZeroDivisionError")


def judge_project(root: Path, prompt: str, port: int) -> Path:
    write_jsonl(root / "suite.jsonl", [{"id": f"c{i}", "messages": [{"role": "user", "content": f"ticket {i}"}],
                                        "expected": "a reply"} for i in range(4)])
    write_jsonl(root / "drafts.jsonl", [{"id": f"c{i}", "output": "BOOM" if i % 2 else "fine"} for i in range(4)])
    (root / "prompt.txt").write_text(prompt)
    (root / "rubric.yaml").write_text("criteria:\n  - {name: helpful, metric: accuracy, op: '>=', threshold: 0.5}\n"
                                      "judge: {min_agreement: 0.0, min_labels: 1}\n")
    config = root / "releasegate.yaml"
    config.write_text("target: {backend: replay, responses: drafts.jsonl}\n"
                      f"judge:\n  base_url: http://127.0.0.1:{port}/v1\n  model: judge\n  retries: 0\n"
                      "  prompt: prompt.txt\n  criteria:\n    helpful: {instructions: The reply helps.}\n"
                      "suites:\n  - path: suite.jsonl\n    answer: {type: judge, criterion: helpful}\n"
                      "rubric: rubric.yaml\n")
    return config


@pytest.mark.parametrize("name", ["nested loops", "huge power", "huge repeat", "recursive macro",
                                  "a format with no argument", "a billion-item range", "division by zero", "include"])
def test_a_hostile_judge_template_is_exit_2_at_validate(tmp_path, name):
    config = judge_project(tmp_path, text_of(name) + "{{ output }}", 9)
    refused(run_subprocess("validate", "-c", config, cwd=tmp_path), "judge prompt template", MESSAGE[name])


def test_a_judge_template_failing_on_real_cases_is_a_judge_error_not_a_failed_run(tmp_path):
    prompt = "{% if 'BOOM' in output %}{{ 1 // 0 }}{% endif %}Grade: {{ output }}"
    verdict = json.dumps({"reason": "ok", "verdict": "pass"})
    with StubServer(StubBehaviour(tokens=1, reply=lambda body: verdict)) as stub:
        config = judge_project(tmp_path, prompt, stub.port)
        assert run_subprocess("validate", "-c", config, cwd=tmp_path).returncode == 0  # the sample renders
        done = run_subprocess("check", "-c", config, "--run-id", "r", "--no-progress", "--json", cwd=tmp_path)
        asked = stub.requests
    assert done.returncode in (1, 3), done.stderr  # a verdict, not exit 70
    assert "Traceback" not in done.stderr
    judgments = [json.loads(line) for line in (tmp_path / "reports" / "r" / "judgments.jsonl").read_text().splitlines()]
    errors = {j["case_id"]: j["error"] for j in judgments}
    assert errors == {"c0": None, "c1": "judge_template_error", "c2": None, "c3": "judge_template_error"}
    assert asked == 2  # only the cases whose prompt rendered were sent
    assert all("ZeroDivisionError" in j["error_message"] for j in judgments if j["error"])
