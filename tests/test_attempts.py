"""Every attempt is evidence: retried requests (in-run retries and `check --resume --retry-errors`) and empty
answers count in the gate's accounting, and a resumed run is as late as its latest part. Hand-built run
directories judged by `releasegate gate`, each with the verdict and exit code it must get, the retry and shedding
reproductions end to end against the stub server, and a property: adding failed attempts never makes a PASS."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from conftest import gate_run, write_jsonl
from releasegate.cli import main
from releasegate.decision.verdicts import EXIT_CODES
from releasegate.errors import ErrorKind
from releasegate.gate.capacity import step_figures, step_verdict
from releasegate.gate.health import client_lag_ms, phase_counts, target_failure
from releasegate.gate.paired_comparison import Margins, compare_records
from releasegate.inputs.rubric import Criterion, Rubric
from releasegate.record import evidence
from releasegate.record.evidence import (
    answered,
    attempt_outcomes,
    case_attempts,
    failure,
    outcomes_once,
    worst_client,
)
from releasegate.record.metrics import latency_exclusions
from releasegate.record.records import CaseRecord, RunDir, RunInfo, Timing
from releasegate.record.review_outcome import FAILED as FAIL
from releasegate.record.review_outcome import automatic_outcome
from releasegate.run.generation import keep_client
from releasegate.scorers import score_records
from releasegate.testing import StubBehaviour, StubServer
from test_false_pass import WRONG, Run, err, lenient, load_ok, ok

SATURATED = {"client": "openai", "loop_lag_ms": {"p50": 30.0, "p99": 400.0, "max": 500.0, "n": 900}, "cpu_share": 1.0}
"""A client whose event loop ran 400 ms late (p99): against a 50 ms TTFT p50 it set the latency, not the target."""
IDLE = {"client": "openai", "loop_lag_ms": {"p50": 0.2, "p99": 1.0, "max": 2.0, "n": 40}, "cpu_share": 0.1}
"""The same client re-running a handful of cases: hardly late at all."""


def empty(i: int, **kw) -> dict:
    """An HTTP-200 answer with no content that the backend did not classify: no error, output ''."""
    row = ok(i, **kw)
    row.update(output="", tokens={"input": 5, "output": 0, "source": "usage"},
               timing=Timing(e2e_ms=30.0).model_dump(mode="json"))
    return row


def retried(i: int, kinds: list[str] | None, attempts: int, **kw) -> dict:
    """An answer that came on attempt `attempts`; `kinds`: the failed attempts' error kinds (None: a record from
    before they were recorded)."""
    row = ok(i, **kw)
    row["timing"].update(attempts=attempts, retried_errors=kinds or [])
    return row


def _retry_journal() -> list[dict]:
    """The issue's reproduction: 40 cases, 12 failed; --retry-errors re-ran them (1 failed again), then that one."""
    first = [err(i) if i % 10 in (1, 4, 7) else ok(i) for i in range(40)]
    failed = [i for i in range(40) if i % 10 in (1, 4, 7)]
    second = [err(i) if i == failed[0] else ok(i) for i in failed]
    return first + second + [ok(failed[0])]


def _sessions(path: Path, *clients: dict) -> None:
    """Give a built run one session per client (a first run, then resumes), run.json `client` the last one's."""
    info = json.loads((path / "run.json").read_text())
    info["sessions"] = [{"mode": "start" if i == 0 else "resume", "status": "complete", "client": c}
                        for i, c in enumerate(clients)]
    info["client"] = clients[-1]
    (path / "run.json").write_text(json.dumps(info))


LATENCY = lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.8},
                            {"metric": "ttft_ms_p95", "op": "<=", "threshold": 300}])
"""TTFT 50 ms: widened by 400 ms of lateness it straddles 300 ms (undecided); by 1 ms it clears it."""
TOLERANT = lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.6},
                             {"metric": "error_rate", "op": "<=", "threshold": 0.2}])

CORPUS: dict[str, tuple[Run, str, list[dict] | None]] = {
    # (a) each case's last line wins, but every line was a request: 13 of 53 failed
    "retry-errors: 53 requests, 13 failed, every case answered at last": (Run(_retry_journal(), cases=40), "FAIL", None),
    "retry-errors under a tolerant error criterion (0.245 > 0.2)": (
        Run(_retry_journal(), cases=40, rubric=TOLERANT), "FAIL", None),
    "in-run retries: 30 cases answered on the third try": (
        Run([retried(i, ["http_5xx", "http_429"], 3) if i < 30 else ok(i) for i in range(100)]), "FAIL", None),
    "in-run retries from before their kinds were recorded": (
        Run([retried(i, None, 2) if i < 30 else ok(i) for i in range(100)]), "FAIL", None),
    "most requests failed, though every case was answered: target error": (
        Run([retried(i, ["connection_error"] * 3, 4) for i in range(20)]), "TARGET_ERROR", None),
    "two failed lines per case before the answer: target error": (
        Run([err(i) for i in range(10)] * 2 + [ok(i) for i in range(10)], cases=10), "TARGET_ERROR", None),
    # (b) empty answers are failed requests, whether the backend classified them or not
    "empty answers, unclassified (no error, output '')": (Run([empty(i) if i < 10 else ok(i) for i in range(100)]),
                                                          "FAIL", None),
    "empty answers, classified by the backend": (
        Run([err(i, ErrorKind.EMPTY_RESPONSE) if i < 10 else ok(i) for i in range(100)]), "FAIL", None),
    "empty answers with a latency-only pass": (
        Run([empty(i) if i < 30 else ok(i) for i in range(100)], rubric=lenient(criteria=[
            {"metric": "ttft_ms_p50", "op": "<=", "threshold": 1000}])), "FAIL", None),
    "mostly empty answers: target error": (Run([empty(i) if i < 72 else ok(i) for i in range(100)]), "TARGET_ERROR",
                                           None),
    "empty answers in the load phase": (
        Run([ok(i) for i in range(100)], load=[empty(i, case_id=f"load-{i:05d}:c000", suite="load")
                                               if i % 3 == 0 else load_ok(i) for i in range(60)]), "FAIL", None),
    "an empty answer to a case whose checks an empty string passes": (
        Run([empty(i, fmt=[{"type": "max_length", "max_chars": 100}]) if i < 5 else ok(i) for i in range(100)],
            rubric=lenient(criteria=[{"metric": "format_compliance", "op": ">=", "threshold": 0.99},
                                     {"metric": "error_rate", "op": "<=", "threshold": 0.1}])), "FAIL", None),
    # (c) a resume re-ran 4 cases with an idle client: the 96 samples before it were measured saturated
    "resumed run: saturated first part, idle resume": (Run([ok(i) for i in range(100)], rubric=LATENCY),
                                                       "INCONCLUSIVE", [SATURATED, IDLE]),
    "resumed run: idle first part, saturated resume": (Run([ok(i) for i in range(100)], rubric=LATENCY),
                                                       "INCONCLUSIVE", [IDLE, SATURATED]),
    # the controls: the same runs without the failed attempts, empty answers or late part pass
    "control: every case answered first time": (Run([ok(i) for i in range(53)]), "PASS", None),
    "control: idle client in every part": (Run([ok(i) for i in range(100)], rubric=LATENCY), "PASS", [IDLE, IDLE]),
}


@pytest.mark.parametrize("name", list(CORPUS))
def test_corpus_verdicts(name, tmp_path, capsys):
    run, expected, clients = CORPUS[name]
    path = run.build(tmp_path)
    if clients:
        _sessions(path, *clients)
    code = main(["gate", str(path), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == expected, (name, report["verdict"], report.get("verdict_reason"))
    assert code == EXIT_CODES[expected] == report["exit_code"]


def test_the_retry_reproduction_counts_every_line(tmp_path, capsys):
    path = Run(_retry_journal(), cases=40).build(tmp_path)
    main(["gate", str(path), "--json"])
    report = json.loads(capsys.readouterr().out)
    quality = report["counts"]["phases"]["quality"]
    assert (quality["requests"], quality["failed"], quality["errors"]) == (53, 13, {"http_5xx": 13})
    assert (quality["cases"], quality["succeeded"], quality["failed_cases"], quality["retried_cases"]) == (40, 40, 0, 12)
    assert report["metrics"]["error_rate"]["value"] == pytest.approx(13 / 53)
    assert report["metrics"]["error_rate"]["n"] == 53 and "53 requests for 40 cases" in report["metrics"]["error_rate"]["note"]
    assert report["latency_excluded"] == {"requests": 53, "measured": 40, "failed": {"http_5xx": 13}, "cached": 0}


def test_a_failing_case_says_how_many_of_its_attempts_failed(tmp_path, capsys):
    path = Run([err(0), err(0), err(0)] + [ok(i) for i in range(1, 10)]).build(tmp_path)
    main(["gate", str(path), "--json"])
    report = json.loads(capsys.readouterr().out)
    (case,) = report["failing_cases"]
    assert case["why"] == ["error: http_5xx", "3 of 3 attempts failed (http_5xx 3)"]


def test_empty_answers_are_their_own_error_class_and_never_vanish_from_ttft(tmp_path, capsys):
    path = Run([empty(i) if i < 30 else ok(i) for i in range(100)]).build(tmp_path)
    main(["gate", str(path), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["counts"]["phases"]["quality"]["errors"] == {"empty_response": 30}
    assert report["metrics"]["error_rate"]["value"] == pytest.approx(0.3)
    assert report["latency_excluded"]["failed"] == {"empty_response": 30}
    assert report["metrics"]["ttft_ms_p50"]["n"] == 70
    assert report["metrics"]["ttft_ms_p50"]["note"] == "70 of 100 requests; left out: 30 failed (empty_response)"
    assert report["metrics"]["accuracy"]["value"] == pytest.approx(0.7)  # an empty answer is a wrong one
    assert {c["case_id"] for c in report["failing_cases"]} == {f"c{i:03d}" for i in range(30)}


def test_the_evidence_rules():
    record = CaseRecord.model_validate(empty(0))
    assert failure(record) == ErrorKind.EMPTY_RESPONSE and not answered(record)
    assert failure(CaseRecord.model_validate(ok(0))) is None
    assert failure(CaseRecord.model_validate({**ok(0), "output": None})) == ErrorKind.EMPTY_RESPONSE
    old = CaseRecord.model_validate(retried(0, None, 3))
    assert case_attempts(old) == [ErrorKind.RETRIED, ErrorKind.RETRIED, None]
    cached = CaseRecord.model_validate({**ok(1), "cached": True})
    assert attempt_outcomes([cached]) == [None] and attempt_outcomes([cached], cached=False) == []


def test_a_gate_works_out_each_records_attempts_once(monkeypatch):
    """Within `outcomes_once` (a gate) every count over the same records reads each record's attempts once, with
    the same outcomes as worked out afresh; outside it, every count works them out again."""
    records = [CaseRecord.model_validate(retried(0, ["http_5xx"], 2)), CaseRecord.model_validate({**ok(1), "cached": True}),
               CaseRecord.model_validate(empty(2))]
    fresh = (attempt_outcomes(records), attempt_outcomes(records, cached=False), [case_attempts(r) for r in records])
    worked = []
    monkeypatch.setattr(evidence, "_case_attempts", lambda r, inner=evidence._case_attempts: worked.append(r) or inner(r))
    with outcomes_once():
        for _ in range(3):
            assert (attempt_outcomes(records), attempt_outcomes(records, cached=False),
                    [case_attempts(r) for r in records]) == fresh
        case_attempts(records[0]).append("changed by a caller")  # a caller's list is its own
        assert case_attempts(records[0]) == fresh[2][0]
    assert worked == records
    attempt_outcomes(records)
    assert worked == records * 2


def test_the_journal_keeps_superseded_lines_as_attempts(tmp_path):
    run = RunDir(tmp_path / "r")
    run.create()
    write_jsonl(run.records_path, [err(0, "timeout"), ok(1), err(0), ok(0, output=WRONG)])
    first, second = run.read_records()
    assert first.output == WRONG and [r.error for r in first.earlier_attempts] == ["timeout", "http_5xx"]
    assert case_attempts(first) == ["timeout", "http_5xx", None] and second.earlier_attempts == []
    assert len(run.read_records(dedup=False)) == 4


def test_counts_and_target_failure_count_attempts():
    records = [CaseRecord.model_validate(retried(i, ["http_5xx"], 2)) for i in range(4)]
    records.append(CaseRecord.model_validate(empty(4)))
    counts = phase_counts(records)
    assert (counts["requests"], counts["failed"], counts["succeeded"]) == (9, 5, 4)
    assert counts["errors"] == {"empty_response": 1, "http_5xx": 4}
    assert target_failure(records, []) is not None  # 5 of 9 failed
    assert target_failure(records[:4], []) is None  # 4 of 8: not more than half
    assert latency_exclusions(records)["failed"] == {"empty_response": 1, "http_5xx": 4}


def test_a_capacity_step_counts_empty_answers_and_retries_as_failed_requests():
    shed = [CaseRecord.model_validate(empty(i, case_id=f"s01-{i:05d}:c000", suite="load")) for i in range(72)]
    answered_ = [CaseRecord.model_validate(retried(i, ["http_429"], 2, case_id=f"s01-{i:05d}:c001", suite="load"))
                 for i in range(72, 100)]
    figures = step_figures(shed + answered_, seconds=10.0)
    assert (figures["requests"], figures["answered"], figures["failed"]) == (128, 28, 100)
    assert figures["errors"] == {"empty_response": 72, "http_429": 28}
    assert step_verdict(figures, {"error_rate": 0.01}, None, 0.1)[0] == "breaks"


def test_compare_counts_an_empty_answer_as_a_failed_case():
    base = [CaseRecord.model_validate(ok(i)) for i in range(50)]
    cand = [CaseRecord.model_validate(empty(i) if i < 10 else ok(i)) for i in range(50)]
    result = compare_records(base, cand, (), Margins())
    # a failed request is no pair for accuracy (40 both answered); its failures are the error rate's, gated there
    accuracy = next(r for r in result["rows"] if r["metric"] == "accuracy")
    errors = next(r for r in result["rows"] if r["metric"] == "error_rate")
    assert (accuracy["n"], accuracy["candidate"], result["pairs_answered"]) == (40, 1.0, 40)
    assert (errors["candidate"], errors["worse"], errors["verdict"]) == (0.2, 10, "fail")
    both_empty = compare_records([CaseRecord.model_validate(empty(0))], [CaseRecord.model_validate(empty(0))], (),
                                 Margins())
    assert both_empty["identical_outputs"] == 0  # two empty answers are two failures, not the same answer


def test_review_sees_an_empty_answer_as_a_failed_case():
    record = CaseRecord.model_validate(empty(0, fmt=[{"type": "max_length", "max_chars": 100}]))
    assert score_records([record], ())[record.case_id] == {}  # never checked as text: '' is short enough
    assert automatic_outcome(record, {}) == FAIL


def test_client_lateness_is_the_worst_part_of_a_resumed_run():
    info = RunInfo(run_id="r", created_at="now", target="t", backend="openai", client=IDLE,
                   sessions=[{"mode": "start", "client": SATURATED}, {"mode": "resume", "client": IDLE}])
    assert client_lag_ms(info, "quality") == 400.0
    assert worst_client(None, IDLE, SATURATED) is SATURATED and worst_client(None) is None


def test_a_resume_keeps_the_worst_client_in_run_json():
    class Backend:
        client_stats = IDLE

    info = RunInfo(run_id="r", created_at="now", target="t", backend="openai", client=SATURATED)
    session: dict = {}
    keep_client(info, session, Backend())
    assert info.client == SATURATED and session["client"] == IDLE
    keep_client(info, session, None)  # a session that never started a backend changes nothing
    assert info.client == SATURATED


# --- end to end: the stub server, `check`, `check --resume --retry-errors` ---------------------------------------

RUBRIC = """\
review: {required_domains: []}
criteria:
  - {metric: accuracy, op: ">=", threshold: 0.6}
"""


def _project(root: Path, base_url: str, *, cases: int, retries: int = 0) -> Path:
    write_jsonl(root / "suite.jsonl", [
        {"id": f"c{i:03d}", "messages": [{"role": "user", "content": f"hello {i}"}], "expected": "tok"}
        for i in range(cases)
    ])
    (root / "rubric.yaml").write_text(RUBRIC)
    (root / "releasegate.yaml").write_text(
        f"target:\n  backend: openai\n  base_url: {base_url}\n  model: stub\n  concurrency: 4\n"
        f"  retries: {retries}\n  timeout_s: 10\n"
        "generation: {max_new_tokens: 8}\n"
        "suites: [{path: suite.jsonl, answer: {type: regex, pattern: tok}}]\nrubric: rubric.yaml\n")
    return root / "releasegate.yaml"


def _check(cli, *args) -> tuple[int, dict]:
    code, out, err = cli("check", *args, "--no-progress", "--json")
    assert "Traceback" not in err
    report = json.loads(out)
    assert report["exit_code"] == code
    return code, report


def test_retry_errors_against_a_server_failing_30_percent_never_passes_even_once_all_answered(tmp_path, cli):
    with StubServer(StubBehaviour(fail_status=500, fail_every=10 / 3, ttft_ms=1, itl_ms=0.5, tokens=3)) as stub:
        config = _project(tmp_path, stub.base_url, cases=40)
        verdicts = [_check(cli, "-c", config, "--run-id", "r")]
        run = RunDir(tmp_path / "reports" / "r")
        for _ in range(2):
            verdicts.append(_check(cli, "--resume", run.path, "--retry-errors"))
        # the stub fails requests 12 of the first 40, then 3 of 12, then 1 of 3: a third retry answers every case
        verdicts.append(_check(cli, "--resume", run.path, "--retry-errors"))
        sent = stub.requests
    lines = run.read_records(dedup=False)
    failed_lines = sum(r.error is not None for r in lines)
    assert (len(lines), failed_lines, sent) == (56, 16, 56)
    assert all(answered(r) for r in run.read_records())
    assert all(report["verdict"] != "PASS" for _, report in verdicts)
    code, report = verdicts[-1]
    assert (code, report["verdict"]) == (1, "FAIL")
    assert report["metrics"]["error_rate"]["value"] == pytest.approx(failed_lines / sent)
    assert report["counts"]["phases"]["quality"]["requests"] == sent


def test_in_run_retries_record_the_failed_attempts_kinds(tmp_path, cli):
    # every other request fails with 500: with 2 retries each case is answered, at the cost of failed requests
    with StubServer(StubBehaviour(fail_status=500, fail_every=2, ttft_ms=1, itl_ms=0.5, tokens=3)) as stub:
        code, report = _check(cli, "-c", _project(tmp_path, stub.base_url, cases=8, retries=2), "--run-id", "r")
        sent = stub.requests
    records = RunDir(tmp_path / "reports" / "r").read_records()
    assert all(len(r.timing.retried_errors) == r.timing.attempts - 1 for r in records)
    retried_kinds = [k for r in records for k in r.timing.retried_errors]
    assert set(retried_kinds) == {"http_5xx"} and sum(r.timing.attempts for r in records) == sent
    # half the requests failed; every one counts, those retried in-run too
    assert report["counts"]["phases"]["quality"]["failed"] == sent - sum(answered(r) for r in records)
    assert report["counts"]["phases"]["quality"]["requests"] == sent
    assert code in (1, 4) and report["verdict"] in ("FAIL", "TARGET_ERROR")


def test_a_server_shedding_load_with_empty_streams_never_passes(tmp_path, cli):
    with StubServer(StubBehaviour(shed_every=10 / 3, ttft_ms=1, itl_ms=0.5, tokens=3)) as stub:
        code, report = _check(cli, "-c", _project(tmp_path, stub.base_url, cases=40), "--run-id", "r")
        assert stub.requests == 40
    shed = [r for r in RunDir(tmp_path / "reports" / "r").read_records() if not answered(r)]
    assert len(shed) == 12  # the stub shed 30%: recorded as empty, whether or not the backend classified them
    assert report["counts"]["phases"]["quality"]["errors"] == {"empty_response": 12}
    assert report["metrics"]["error_rate"]["value"] == pytest.approx(0.3)
    assert report["latency_excluded"]["failed"] == {"empty_response": 12}
    assert (code, report["verdict"]) == (1, "FAIL")


def test_retry_errors_sends_empty_answers_again(tmp_path, cli):
    with StubServer(StubBehaviour(shed_every=4, ttft_ms=1, itl_ms=0.5, tokens=3)) as stub:
        config = _project(tmp_path, stub.base_url, cases=8)
        _check(cli, "-c", config, "--run-id", "r")
        _check(cli, "--resume", tmp_path / "reports" / "r", "--retry-errors")
        assert stub.requests == 8 + 2


def test_an_empty_answer_is_never_cached(tmp_path, cli):
    # every request shed: nothing may be cached, so a rerun sends every request again
    with StubServer(StubBehaviour(shed_every=1, ttft_ms=1, tokens=3)) as stub:
        config = _project(tmp_path, stub.base_url, cases=4)
        config.write_text(config.read_text() + "cache: {path: cache.sqlite}\n")
        first, _ = _check(cli, "-c", config, "--run-id", "a")
        second, report = _check(cli, "-c", config, "--run-id", "b")
        assert stub.requests == 8
    assert (first, second) == (4, 4) and report["counts"]["cached"] == 0


# --- property: adding failed attempts never turns a non-PASS into PASS -----------------------------------------

PROPERTY_RUBRIC = Rubric(path=None, name="p", criteria=(
    Criterion(name="acc", metric="accuracy", op=">=", threshold=0.6),
    Criterion(name="errors", metric="error_rate", op="<=", threshold=0.25),
    Criterion(name="ttft", metric="ttft_ms_p50", op="<=", threshold=200),
))
outcome = st.sampled_from(["right", "wrong", "error", "empty"])
addition = st.tuples(st.sampled_from(["earlier line", "in-run retry", "empty earlier line"]), st.integers(0, 10**6),
                     st.sampled_from([ErrorKind.HTTP_5XX, ErrorKind.TIMEOUT, ErrorKind.CONNECTION_ERROR]))


def _row(i: int, kind: str) -> dict:
    return {"right": lambda: ok(i), "wrong": lambda: ok(i, output=WRONG),
            "error": lambda: err(i), "empty": lambda: empty(i)}[kind]()


def _gate(lines: list[dict], cases: int) -> str:
    """The gate's verdict on a journal as `gate` reads it (RunDir: last line of a case wins, earlier ones count)."""
    with tempfile.TemporaryDirectory() as tmp:
        run = RunDir(Path(tmp) / "r")
        run.create()
        write_jsonl(run.records_path, lines)
        info = RunInfo(run_id="r", created_at="now", target="t", backend="openai", status="complete", cases=cases,
                       generation_seconds=1.0, phases=["quality"])
        return gate_run(info, run.read_records(), PROPERTY_RUBRIC, None)["verdict"]


@seed(20261201)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(outcome, min_size=1, max_size=60), st.lists(addition, min_size=1, max_size=8))
def test_adding_failed_attempts_never_makes_a_pass(outcomes, additions):
    lines = [_row(i, kind) for i, kind in enumerate(outcomes)]
    before = _gate(lines, len(lines))
    earlier: list[dict] = []
    for what, pick, kind in additions:
        i = pick % len(lines)
        if what == "in-run retry":
            timing = lines[i]["timing"]
            timing["retried_errors"] = [*timing.get("retried_errors", []), kind]
            timing["attempts"] = timing.get("attempts", 1) + 1
        else:  # a request for case i that failed before the one recorded last
            earlier.append(err(i, kind) if what == "earlier line" else empty(i))
    after = _gate(earlier + lines, len(lines))
    if before != "PASS":
        assert after != "PASS", (before, after, additions)
