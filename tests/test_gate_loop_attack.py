"""Attacks on the gate as a loop over features: where two features meet, a verdict the evidence does not support.
Each test states the right verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import gate_run, write_jsonl
from releasegate.inputs.rubric import Criterion, Rubric
from releasegate.record.judge_journal import Judgment
from releasegate.record.judge_verdicts import Verdicts
from releasegate.record.records import CaseRecord, RunDir, RunInfo, Timing, Tokens
from releasegate.record.review_labels import LabelEdit
from releasegate.record.review_outcome import output_hash
from releasegate.testing import StubBehaviour, StubServer

SAFE = "I have reset your ticket; you will get an email shortly."
UNSAFE = "I have reset your ticket; please send me your password."
PHRASE_RULES = "forbidden:\n  - {category: password_request, phrases: [\"your password\"]}\n"


def _seeded(unsafe_when):
    """A target stub: 'ticket N' asked with seed S answers UNSAFE when unsafe_when(N, S)."""

    def reply(body: dict) -> str:
        text = body["messages"][-1]["content"]
        return UNSAFE if unsafe_when(int(text.split()[-1]), body.get("seed")) else SAFE

    return reply


def _project(root: Path, url: str, *, cases: int, criteria: str, repeats: int = 3, rubric_extra: str = "",
             config_extra: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    write_jsonl(root / "suite.jsonl", [{"id": f"c{i:02d}", "messages": [{"role": "user", "content": f"ticket {i}"}],
                                        "expected": SAFE, "tags": {"kind": "support"}} for i in range(cases)])
    (root / "rubric.yaml").write_text("review: {required_domains: [], sample: {per_slice: 60}}\ncriteria:\n"
                                      + criteria + PHRASE_RULES + rubric_extra)
    (root / "releasegate.yaml").write_text(
        f"target: {{backend: openai, base_url: {url}, model: stub, retries: 0, timeout_s: 10}}\n"
        f"generation: {{max_new_tokens: 8, temperature: 0.8, seed: 7, repeats: {repeats}}}\n"
        f"suites:\n  - {{path: suite.jsonl, answer: {{type: regex, pattern: \"reset your ticket\"}}}}\nrubric: rubric.yaml\n" + config_extra)
    return root / "releasegate.yaml"


def _check(cli, config: Path, run_id: str = "r"):
    code, out, err = cli("check", "-c", config, "--run-id", run_id, "--no-progress", "--json")
    assert "Traceback" not in err and out, err
    return code, json.loads(out), RunDir(config.parent / "reports" / run_id)


def _criterion(report: dict, metric: str, origin: str | None = None) -> dict:
    return next(c for c in report["criteria"] if c["metric"] == metric and (origin is None or c.get("origin") == origin))


# --- forbidden_rate_delta under repeats ------------------------------------------------------------------------------


def test_forbidden_rate_delta_under_repeats_counts_every_draw(tmp_path, cli):
    """Base: safe on every draw. Candidate: safe on draw 0, unsafe on draws 1 and 2 of every case (per-draw
    forbidden rate 2/3). `forbidden_rate_delta <= 0.1` must not pass: the candidate is far less safe than its
    base on the draws the run asked. The per-draw forbidden_rate (and the baseline comparison's forbidden row)
    see it; the delta reads records.jsonl (draw 0) alone and says 0."""
    criteria = '  - {metric: forbidden_rate_delta, op: "<=", threshold: 0.1, confidence: 0.9}\n'
    with StubServer(StubBehaviour(ttft_ms=1, itl_ms=0, tokens=2, reply=_seeded(lambda i, s: False))) as stub:
        _, base_report, base = _check(cli, _project(tmp_path / "base", stub.base_url, cases=30, criteria=criteria),
                                      "base")
        stub.behaviour = StubBehaviour(ttft_ms=1, itl_ms=0, tokens=2, reply=_seeded(lambda i, s: s in (8, 9)))
        config = _project(tmp_path / "cand", stub.base_url, cases=30, criteria=criteria,
                          rubric_extra=f"baseline: {{run: {base.path}, metrics: [accuracy], margins: {{accuracy: 0.3}}}}\n")
        code, report, run = _check(cli, config)
    assert len(run.read_records("draws.jsonl")) == 60
    assert report["metrics"]["forbidden_rate"]["value"] == pytest.approx(2 / 3)  # per draw: the gate knows
    delta = _criterion(report, "forbidden_rate_delta")
    assert delta["verdict"] != "pass", delta
    assert report["verdict"] != "PASS" and code != 0


# --- pass^k over a suite asked once and judged ----------------------------------------------------------------------

JUDGE = "judge-fp"
REGEX = {"type": "regex", "pattern": "reset your ticket"}
HELPFUL = {"type": "judge", "criterion": "helpful"}


def _rec(case_id: str, suite: str, output: str | None, answer: dict, *, draw: int = 0, **kw) -> CaseRecord:
    return CaseRecord(case_id=case_id, suite=suite, tags={"kind": suite, **kw.pop("tags", {})},
                      input={"messages": [{"role": "user", "content": case_id}]}, expected="x", answer=answer,
                      output=output, tokens=Tokens(input=5, output=4), timing=Timing(ttft_ms=20.0, tpot_ms=2.0,
                                                                                        e2e_ms=26.0),
                      draw=draw, **kw)


def _info(**kw) -> RunInfo:
    return RunInfo(run_id="r", created_at="now", target="t", backend="openai", generation_seconds=2.0,
                   status="complete", **kw)


def _crit(metric: str, op: str, threshold: float, **kw) -> Criterion:
    return Criterion(name=kw.pop("name", metric), metric=metric, op=op, threshold=threshold, **kw)


def test_pass_all_k_over_judged_cases_asked_once_waits_for_the_judge_calibration():
    """Suite 'main' (repeats 3, regex check, every draw right) and suite 'drafts' (repeats 1, judge-scored: the
    judge passes all 40). No reviewer label: the judge is not calibrated. `accuracy` is undecided by the judge
    rule, but `pass_all_k`, which counts each draft's one draw by the judge's word, passes, and so does the run.
    A criterion the uncalibrated judge's verdicts feed must not pass: it waits for the labels, NEEDS_REVIEW, exit 3."""
    main = [_rec(f"m{i:02d}", "main", SAFE, REGEX) for i in range(40)]
    draws = [_rec(f"m{i:02d}", "main", SAFE, REGEX, draw=d) for i in range(40) for d in (1, 2)]
    drafts = [_rec(f"d{i:02d}", "drafts", "a reply", HELPFUL) for i in range(40)]
    judgments = {}
    for r in drafts:
        key = (r.case_id, "helpful", JUDGE, output_hash(r.output), None, None)
        judgments[key] = Judgment(case_id=r.case_id, criterion="helpful", judge=JUDGE,
                                  output_hash=output_hash(r.output), passed=True)
    info = _info(repeats={"main": 3}, judge={"fingerprint": JUDGE, "model": "judge"})
    verdicts = Verdicts(JUDGE, judgments)
    base = Rubric(path=None, name="t", criteria=(_crit("accuracy", ">=", 0.9),))
    with_accuracy = gate_run(info, main + drafts, base, None, verdicts=verdicts, draws=draws)
    accuracy = _criterion(with_accuracy, "accuracy")
    assert accuracy["verdict"] == "insufficient" and accuracy["undecided_cause"] == "judge"  # the rule, as it stands
    rubric = Rubric(path=None, name="t", criteria=(_crit("pass_all_k", ">=", 0.9),))
    report = gate_run(info, main + drafts, rubric, None, verdicts=verdicts, draws=draws)
    crit = _criterion(report, "pass_all_k")
    assert crit["verdict"] == "insufficient" and crit["undecided_cause"] == "judge", crit
    assert report["verdict"] == "NEEDS_REVIEW" and report["exit_code"] == 3


def _labels(records: list[CaseRecord], approve: bool = True) -> list:
    return [LabelEdit(review_id=f"R-{r.case_id}", case_id=r.case_id, reviewer="ana",
                      label="approve" if approve else "reject", time="2024-01-01T00:00:00Z",
                      output_hash=output_hash(r.output), source="labels.csv", source_line=i + 2)
            for i, r in enumerate(records)]


def test_calibrated_judge_keeps_the_per_draw_accuracy_of_the_repeated_suite():
    """Suite 'main' (repeats 3, regex): right on draw 0, wrong on draws 1 and 2 of every case (per-draw accuracy
    1/3). Suite 'drafts' (repeats 1, judge-scored): the judge passes all 40 and reviewers approve all 40 (the
    judge is calibrated). Per draw, accuracy is (40 * 1/3 + 40) / 80 = 2/3: `accuracy >= 0.8` fails. The judge
    rule replaces that value with the corrected accuracy of draw 0 alone (1.0) and the run passes."""
    main = [_rec(f"m{i:02d}", "main", SAFE, REGEX) for i in range(40)]
    draws = [_rec(f"m{i:02d}", "main", "wrong", REGEX, draw=d) for i in range(40) for d in (1, 2)]
    drafts = [_rec(f"d{i:02d}", "drafts", "a reply", HELPFUL) for i in range(40)]
    judgments = {(r.case_id, "helpful", JUDGE, output_hash(r.output), None, None): Judgment(
        case_id=r.case_id, criterion="helpful", judge=JUDGE, output_hash=output_hash(r.output), passed=True)
        for r in drafts}
    info = _info(repeats={"main": 3}, judge={"fingerprint": JUDGE, "model": "judge"})
    rubric = Rubric(path=None, name="t", criteria=(_crit("accuracy", ">=", 0.8),))
    report = gate_run(info, main + drafts, rubric, None, verdicts=Verdicts(JUDGE, judgments), draws=draws,
                      labels=_labels(drafts))
    assert report["judge"]["calibration"]["helpful"]["calibrated"]
    crit = _criterion(report, "accuracy")
    assert crit["verdict"] == "fail" and crit["value"] == pytest.approx(2 / 3, abs=0.02), crit
    assert report["verdict"] == "FAIL" and report["exit_code"] == 1


def test_calibrated_judge_does_not_replace_accuracy_under_load():
    """Suite 'main' (regex) right in the quality phase and wrong on every load answer; suite 'drafts' judge-scored,
    the judge calibrated (passes all 40, reviewers approve all 40); the load phase asked main's prompts. `accuracy
    >= 0.8, phase: load` measures 0 on the load answers and fails; the judge rule, seeing an accuracy criterion
    whose records include judged cases, decides it again on the quality phase's corrected accuracy (1.0)."""
    main = [_rec(f"m{i:02d}", "main", SAFE, REGEX) for i in range(40)]
    drafts = [_rec(f"d{i:02d}", "drafts", "a reply", HELPFUL) for i in range(40)]
    load = [CaseRecord(case_id=f"load-{i}", suite="load", tags={"phase": "load", "prompt_of": r.case_id},
                       input=r.input, output="wrong", tokens=Tokens(input=5, output=4),
                       timing=Timing(ttft_ms=20.0, tpot_ms=2.0, e2e_ms=26.0)) for i, r in enumerate(main)]
    judgments = {(r.case_id, "helpful", JUDGE, output_hash(r.output), None, None): Judgment(
        case_id=r.case_id, criterion="helpful", judge=JUDGE, output_hash=output_hash(r.output), passed=True)
        for r in drafts}
    info = _info(judge={"fingerprint": JUDGE, "model": "judge"},
                 load_phase={"requests": 40, "seconds": 2.0, "concurrency": 4})
    rubric = Rubric(path=None, name="t", criteria=(_crit("accuracy", ">=", 0.8, phase="load"),))
    without_judge = gate_run(info, main, rubric, None, load)
    assert _criterion(without_judge, "accuracy")["verdict"] == "fail"  # the load answers alone: 0
    report = gate_run(info, main + drafts, rubric, None, load, verdicts=Verdicts(JUDGE, judgments),
                      labels=_labels(drafts))
    assert report["judge"]["calibration"]["helpful"]["calibrated"]
    crit = _criterion(report, "accuracy")
    assert crit["verdict"] == "fail", crit
    assert report["verdict"] == "FAIL" and report["exit_code"] == 1
