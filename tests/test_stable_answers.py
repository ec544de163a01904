"""Stable answers, end to end against the stub server: repeated draws (`generation.repeats`), the criteria over
them, and the flip probe (the same cases' answers alone and under load)."""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from pathlib import Path

from conftest import write_jsonl
from releasegate.record.records import RunDir
from releasegate.testing import StubBehaviour, StubServer
from releasegate.testing.answers import flips

FLIP_RUBRIC = """\
review: {required_domains: []}
criteria:
  - {metric: accuracy, op: ">=", threshold: 0.5}
  - {metric: load_flip_rate, op: "<=", threshold: 0.02, confidence: 0.95}
"""

DRAW_RUBRIC = """\
review: {required_domains: []}
criteria:
  - {metric: pass_all_k, op: ">=", threshold: 0.0}
  - {metric: flip_rate, op: "<=", threshold: 1.0}
  - {metric: pass_any_k, op: ">=", threshold: 0.0}
  - {metric: answer_agreement, op: ">=", threshold: 0.0}
"""


def project(root: Path, base_url: str, *, cases: int, rubric: str, extra: str = "", generation: str = "",
            concurrency: int = 1) -> Path:
    write_jsonl(root / "suite.jsonl", [
        {"id": f"c{i:03d}", "messages": [{"role": "user", "content": f"question {i}"}], "expected": "yes"}
        for i in range(cases)
    ])
    (root / "rubric.yaml").write_text(rubric)
    (root / "releasegate.yaml").write_text(
        f"target:\n  backend: openai\n  base_url: {base_url}\n  model: stub\n  concurrency: {concurrency}\n"
        f"  retries: 0\n  timeout_s: 10\n"
        f"generation: {{max_new_tokens: 8{generation}}}\n"
        f"suites: [{{path: suite.jsonl, answer: {{type: normalized}}}}]\nrubric: rubric.yaml\n{extra}"
    )
    return root / "releasegate.yaml"


def check(cli, config: Path, run_id: str = "r"):
    code, out, err = cli("check", "-c", config, "--run-id", run_id, "--no-progress", "--json")
    assert "Traceback" not in err, err
    report = json.loads(out)
    assert report["exit_code"] == code
    return code, report, RunDir(config.parent / "reports" / run_id)


def criterion(report: dict, metric: str) -> dict:
    return next(c for c in report["criteria"] if c["metric"] == metric)


def _yes(body: dict) -> str:
    return "yes"


# --- the flip probe: a server whose answers change under load -------------------------------------------------

CASES = 150  # at 0.95 a zero flip rate needs 133 cases before its upper bound is under 0.02


def test_answers_changed_under_load_fail_the_flip_criterion_naming_the_cases(tmp_path, cli):
    behaviour = StubBehaviour(ttft_ms=2, itl_ms=0.5, tokens=2, reply=_yes, flip_share=0.1, flip_above=1, flip_seed=3)
    with StubServer(behaviour) as stub:
        config = project(tmp_path, stub.base_url, cases=CASES, rubric=FLIP_RUBRIC,
                         extra=f"load: {{concurrency: 8, requests: {CASES}}}\n")
        code, report, run = check(cli, config)
    changed = {prompt for prompt, text in stub.answers if text.endswith("(changed)")}
    flipped = sorted(f"c{int(p.split()[-1]):03d}" for p in changed)
    # the stub flips a seeded 10% of prompts, and only while more than one request is in flight: never alone
    seeded = {f"c{i:03d}" for i in range(CASES) if flips(f"question {i}", 0.1, 3)}
    assert flipped and set(flipped) <= seeded and 0.05 * CASES <= len(seeded) <= 0.15 * CASES
    assert not any(r.output.endswith("(changed)") for r in run.read_records())
    row = criterion(report, "load_flip_rate")
    assert row["verdict"] == "fail" and code == 1 and report["verdict"] == "FAIL"
    assert row["value"] == len(flipped) / CASES and row["n"] == CASES
    assert row["bounds"][0] > 0.02  # even the lower bound is over the threshold
    assert all(case in row["reason"] for case in flipped[:10])  # the failing cases are named
    table = report["stability"]["flips"]
    assert sorted(r["case_id"] for r in table) == flipped
    assert all(r["under_load"].endswith("(changed)") and r["alone"] == "yes" for r in table)
    # every format shows the flip table, or the cases, and the criterion with its bound
    first = flipped[0]
    for name in ("report.md", "report.html"):
        text = (run.path / name).read_text()
        assert "Stable answers" in text and "answer under load" in text and first in text
    junit = (run.path / "report.junit.xml").read_text()
    assert 'name="stability"' in junit and first in junit and "load_flip_rate" in junit
    header, *rows = csv.reader(io.StringIO((run.path / "report.csv").read_text()))
    assert header[-4:] == ["draws", "failing_draws", "modal_answer", "answer_under_load"]
    assert {r[0]: r[-1] for r in rows}[first] == "yes (changed)"


def test_answers_unchanged_under_load_pass_with_the_bound_reported(tmp_path, cli):
    behaviour = StubBehaviour(ttft_ms=2, itl_ms=0.5, tokens=2, reply=_yes, flip_share=0.0)
    with StubServer(behaviour) as stub:
        config = project(tmp_path, stub.base_url, cases=CASES, rubric=FLIP_RUBRIC,
                         extra=f"load: {{concurrency: 8, requests: {CASES}}}\n")
        code, report, _ = check(cli, config)
    row = criterion(report, "load_flip_rate")
    assert row["value"] == 0 and row["n"] == CASES
    assert 0 < row["bounds"][1] <= 0.02 and row["confidence"] == 0.95
    assert row["verdict"] == "pass" and "upper bound" in row["reason"]
    assert report["verdict"] == "PASS" and code == 0
    assert report["stability"]["flips"] == []


# --- repeated draws: a sampling server at k = 5 ----------------------------------------------------------------


def test_random_answers_at_k_5_give_the_hand_counted_pass_k_and_flip_rate(tmp_path, cli):
    behaviour = StubBehaviour(ttft_ms=1, itl_ms=0.2, tokens=2, random_replies=("yes", "no", "yes"), flip_seed=11)
    cases, k = 12, 5
    with StubServer(behaviour) as stub:
        config = project(tmp_path, stub.base_url, cases=cases, rubric=DRAW_RUBRIC,
                         generation=f", temperature: 0.8, seed: 7, repeats: {k}", concurrency=3)
        code, report, run = check(cli, config)
    by_prompt = defaultdict(list)
    for prompt, text in stub.answers:
        by_prompt[prompt].append(text == "yes")
    assert len(by_prompt) == cases and all(len(v) == k for v in by_prompt.values())
    all_pass = sum(all(v) for v in by_prompt.values())
    any_pass = sum(any(v) for v in by_prompt.values())
    flipping = sum(len(set(v)) > 1 for v in by_prompt.values())
    assert 0 < flipping < cases  # the seeds make some cases flip and leave others alone
    assert criterion(report, "pass_all_k")["value"] == all_pass / cases
    assert criterion(report, "pass_any_k")["value"] == any_pass / cases
    assert criterion(report, "flip_rate")["value"] == flipping / cases
    for name in ("pass_all_k", "flip_rate", "answer_agreement"):
        assert criterion(report, name)["n"] == cases  # the case is the unit: nothing gains n by repeating
    # accuracy is per draw, bounded per case
    accuracy = report["metrics"]["accuracy"]
    assert accuracy["value"] == sum(sum(v) / k for v in by_prompt.values()) / cases and accuracy["n"] == cases
    draws = run.read_records("draws.jsonl")
    assert sorted((r.case_id, r.draw) for r in draws) == sorted((f"c{i:03d}", d) for i in range(cases) for d in range(1, k))
    assert sorted(b["seed"] for b in stub.bodies if b["messages"][0]["content"] == "question 0") == [7, 8, 9, 10, 11]
    rows = {r["case_id"]: r for r in report["stability"]["draws"]}
    assert len(rows) == cases and all(r["draws"] == k for r in rows.values())
    assert report["verdict"] == "PASS" and code == 0


def test_repeats_are_never_answered_from_the_response_cache(tmp_path, cli):
    behaviour = StubBehaviour(ttft_ms=1, itl_ms=0.2, tokens=2, reply=_yes)
    with StubServer(behaviour) as stub:
        config = project(tmp_path, stub.base_url, cases=6, rubric=DRAW_RUBRIC, extra="cache: {path: cache.sqlite}\n")
        check(cli, config, "first")  # fills the cache with every case's answer
        assert stub.requests == 6
        text = config.read_text().replace("max_new_tokens: 8", "max_new_tokens: 8, repeats: 3")
        config.write_text(text)
        code, report, run = check(cli, config, "repeated")
    assert stub.requests == 6 + 6 * 3  # every draw, draw 0 too, asked anew
    assert not any(r.cached for r in run.read_records() + run.read_records("draws.jsonl"))
    assert report["counts"]["cached"] == 0
    assert criterion(report, "pass_all_k")["value"] == 1.0


def test_a_run_without_repeats_has_no_draws_and_reports_as_before(tmp_path, cli):
    behaviour = StubBehaviour(ttft_ms=1, itl_ms=0.2, tokens=2, reply=_yes)
    rubric = "review: {required_domains: []}\ncriteria:\n  - {metric: accuracy, op: \">=\", threshold: 0.5}\n"
    with StubServer(behaviour) as stub:
        config = project(tmp_path, stub.base_url, cases=4, rubric=rubric)
        _, report, run = check(cli, config)
    assert not (run.path / "draws.jsonl").exists() and "stability" not in report
    assert "Stable answers" not in (run.path / "report.md").read_text()
    assert "answer_under_load" not in (run.path / "report.csv").read_text().splitlines()[0]
    assert all('"draw"' not in line for line in (run.path / "records.jsonl").read_text().splitlines())
    assert run.read_info().repeats is None


def test_a_resumed_run_asks_only_the_draws_it_lacks(tmp_path, cli):
    from conftest import as_killed

    behaviour = StubBehaviour(ttft_ms=1, itl_ms=0.2, tokens=2, reply=_yes)
    with StubServer(behaviour) as stub:
        config = project(tmp_path, stub.base_url, cases=6, rubric=DRAW_RUBRIC, generation=", repeats: 3")
        check(cli, config)
        run = RunDir(config.parent / "reports" / "r")
        lines = (run.path / "draws.jsonl").read_text().splitlines(keepends=True)
        (run.path / "draws.jsonl").write_text("".join(lines[:5]) + lines[5][:30])  # killed mid-batch: a torn line
        info = json.loads((run.path / "run.json").read_text())
        (run.path / "run.json").write_text(json.dumps({**info, "status": "interrupted"}))
        as_killed(run.path)
        before = stub.requests
        code, out, err = cli("check", "--resume", run.path, "--no-progress", "--json")
    assert out, err
    assert stub.requests - before == 12 - 5  # the 7 draws not journaled whole, nothing else
    report = json.loads(out)
    draws = run.read_records("draws.jsonl")
    assert sorted((r.case_id, r.draw) for r in draws) == sorted((f"c{i:03d}", d) for i in range(6) for d in (1, 2))
    assert report["verdict"] == "PASS" and criterion(report, "pass_all_k")["n"] == 6 and not report["incomplete"]


def test_review_export_puts_the_cases_that_flipped_under_load_first(tmp_path, cli):
    behaviour = StubBehaviour(ttft_ms=2, itl_ms=0.5, tokens=2, reply=_yes, flip_share=0.3, flip_above=1, flip_seed=5)
    rubric = FLIP_RUBRIC.replace("review: {required_domains: []}", "review: {required_domains: [], sample: {audit: 1.0}}")
    with StubServer(behaviour) as stub:
        config = project(tmp_path, stub.base_url, cases=30, rubric=rubric, extra="load: {concurrency: 8, requests: 30}\n")
        _, report, run = check(cli, config)
    flipped = {r["case_id"] for r in report["stability"]["flips"]}
    assert flipped
    code, out, err = cli("review", "export", run.path, "--unstable-first")
    assert code == 0 and f"{len(flipped)} sampled case(s) with unstable answers first" in out + err
    rows = list(csv.reader(io.StringIO((run.path / "review_queue.csv").read_text(encoding="utf-8-sig"))))
    header, body = rows[0], rows[1:]
    ids = [r[header.index("case_id")] for r in body]
    assert set(ids[:len(flipped)]) == flipped and len(ids) == 30


def test_compare_of_repeated_runs_says_what_it_paired_and_refuses_missing_draws(tmp_path, cli):
    behaviour = StubBehaviour(ttft_ms=1, itl_ms=0.2, tokens=2, reply=_yes)
    with StubServer(behaviour) as stub:
        config = project(tmp_path, stub.base_url, cases=6, rubric=DRAW_RUBRIC, generation=", repeats: 2")
        check(cli, config, "base")
        check(cli, config, "cand")
    reports = config.parent / "reports"
    code, out, err = cli("compare", reports / "base", reports / "cand", "--json")
    result = json.loads(out)
    assert "per draw" in result["draws_note"] and result["pairs_answered"] == 6
    lines = (reports / "cand" / "draws.jsonl").read_text().splitlines(keepends=True)
    (reports / "cand" / "draws.jsonl").write_text("".join(lines[:3]))  # three draws gone
    code, out, err = cli("compare", reports / "base", reports / "cand", "--json")
    result = json.loads(out)
    assert result["verdict"] != "PASS" and code != 0 and "lack planned draws" in result["verdict_reason"], result["verdict_reason"]


def test_servers_does_not_recommend_a_server_whose_greedy_answers_change_under_load(tmp_path, cli):
    rubric = "review: {required_domains: []}\ncriteria:\n  - {metric: accuracy, op: \">=\", threshold: 0.5}\n"
    runs = {}
    for name, share in (("flipping", 0.3), ("steady", 0.0)):
        behaviour = StubBehaviour(ttft_ms=2, itl_ms=0.5, tokens=2, reply=_yes, flip_share=share, flip_seed=2)
        with StubServer(behaviour) as stub:
            (tmp_path / name).mkdir()
            config = project(tmp_path / name, stub.base_url, cases=40, rubric=rubric,
                             extra="load: {concurrency: 8, requests: 40}\n")
            runs[name] = check(cli, config, name)[2].path
    code, out, err = cli("servers", runs["flipping"], runs["steady"], "--json")
    result = json.loads(out)
    flipping = result["targets"][0]
    assert flipping["load_flip_rate"] > 0 and flipping["flip_margin"] == 0.02
    assert result["verdict"] != "PASS" and "change under load" in result["recommendation"]
    code, out, err = cli("servers", runs["steady"], runs["flipping"], "--json")
    result = json.loads(out)
    assert result["targets"][0]["load_flip_rate"] == 0 and result["recommended"] == result["targets"][0]["run_id"]


def test_retry_errors_asks_failed_draws_again_and_the_retry_is_the_draw(tmp_path, cli):
    with StubServer(StubBehaviour(ttft_ms=1, itl_ms=0.2, tokens=2, reply=_yes, fail_status=500, fail_every=4)) as stub:
        config = project(tmp_path, stub.base_url, cases=8, rubric=DRAW_RUBRIC, generation=", repeats: 3")
        _, first, run = check(cli, config)
        failed = [r for r in run.read_records("draws.jsonl") if r.error]
        retried_cases = [r for r in run.read_records() if r.error]
        assert failed and first["verdict"] != "PASS"
        stub.behaviour = StubBehaviour(ttft_ms=1, itl_ms=0.2, tokens=2, reply=_yes)  # the server mended
        before = stub.requests
        code, out, err = cli("check", "--resume", run.path, "--retry-errors", "--no-progress", "--json")
        assert out, err
        asked = stub.requests - before
    report = json.loads(out)
    assert asked == len(failed) + len(retried_cases)  # every failed draw and case asked again, no other
    assert criterion(report, "pass_all_k")["value"] == 1.0 and not report["incomplete"]
    assert report["counts"]["phases"]["quality"]["failed"] == len(failed) + len(retried_cases)  # still counted
