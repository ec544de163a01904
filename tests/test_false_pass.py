"""The false-PASS corpus: hand-built run directories, each judged by `releasegate gate` with the verdict and exit
code it must get. Every one of them once said PASS (or exit 0) where it must not; the first is the control that
shows a healthy run still passes.

A run directory here is what `check` would leave: run.json, records.jsonl, load.jsonl, rubric.yaml, reviews.jsonl
and, for a baseline, a second run directory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import comparison_verdict, gate_run
from releasegate.cli import main
from releasegate.decision.verdicts import EXIT_CODES
from releasegate.gate.paired_comparison import compare_records
from releasegate.inputs.rubric import Criterion, Rubric
from releasegate.pipeline.matrix import matrix_verdict
from releasegate.record.records import CaseRecord, RunDir, RunInfo, Timing, Tokens
from releasegate.record.review_labels import LabelEdit
from releasegate.record.review_outcome import output_hash

RIGHT = '{"intent": "billing"}'
WRONG = '{"intent": "refund"}'
ANSWER = {"type": "json_fields", "fields": ["intent"]}
NO_REVIEW = {"required_domains": []}


def ok(i: int, *, output: str = RIGHT, ttft: float = 50.0, tags: dict | None = None, tokens: int | None = 10,
       itl: list[float] | None = None, case_id: str | None = None, suite: str = "s", fmt: list | None = None) -> dict:
    return CaseRecord(
        case_id=case_id or f"c{i:03d}", suite=suite, tags=tags or {"task": "t"}, input={"prompt": f"p{i}"},
        expected={"intent": "billing"}, answer=ANSWER, format=fmt or [{"type": "json"}], output=output,
        tokens=Tokens(input=5, output=tokens), timing=Timing(ttft_ms=ttft, tpot_ms=5.0, e2e_ms=ttft + 45, itl_ms=itl),
    ).model_dump(mode="json")


def err(i: int, kind: str = "http_5xx", *, case_id: str | None = None, suite: str = "s", tags: dict | None = None) -> dict:
    return CaseRecord(
        case_id=case_id or f"c{i:03d}", suite=suite, tags=tags or {"task": "t"}, input={"prompt": f"p{i}"},
        expected={"intent": "billing"}, answer=ANSWER, format=[{"type": "json"}], output=None, error=kind,
        error_message=f"{kind} on request {i}",
    ).model_dump(mode="json")


def load_ok(i: int, **kw) -> dict:
    kw.setdefault("case_id", f"load-{i:05d}:c{i % 10:03d}")
    return ok(i, suite="load", tags={"phase": "load"}, **kw)


def load_err(i: int, kind: str = "stream_interrupted") -> dict:
    return err(i, kind, case_id=f"load-{i:05d}:c{i % 10:03d}", suite="load", tags={"phase": "load"})


def lenient(**extra) -> dict:
    """A rubric every healthy record above passes."""
    return {"name": "corpus", "criteria": [{"metric": "accuracy", "op": ">=", "threshold": 0.8}],
            "review": NO_REVIEW, **extra}


@dataclass
class Run:
    """A run directory to build: run.json fields, journals, rubric, labels."""

    records: list[dict]
    rubric: dict = field(default_factory=lenient)
    load: list[dict] | None = None
    status: str = "complete"
    cases: int | None = None
    phases: list[str] | None = None
    load_phase: dict | None = None
    generation_seconds: float = 10.0
    labels: list[tuple[str, str]] = field(default_factory=list)
    """(case id, 'approve' | 'reject'), given on the recorded output."""
    baseline: list[dict] | None = None
    client: dict | None = None
    """The client's lateness over the quality phase (run.json `client`)."""
    leakage: dict | None = None
    """The leakage probe's figures (run.json `leakage`)."""

    def build(self, root: Path) -> Path:
        root.mkdir(parents=True, exist_ok=True)
        rubric = dict(self.rubric)
        if self.baseline is not None:
            base = RunDir(root / "baseline")
            base.create()
            _journal(base.path / "records.jsonl", self.baseline)
            rubric["baseline"] = {"run": str(base.path)}
        run = RunDir(root / "run")
        run.create()
        phases = self.phases or (["quality", "load"] if self.load is not None else ["quality"])
        load_phase = self.load_phase
        if load_phase is None and self.load is not None:
            load_phase = {"profile": "closed loop", "seconds": 10.0, "requests": len(self.load), "cut_short": None}
        info = RunInfo(run_id="run", created_at="2026-12-01T00:00:00+00:00", status=self.status, target="corpus",
                       backend="openai", cases=len(self.records) if self.cases is None else self.cases,
                       generation_seconds=self.generation_seconds, load_phase=load_phase, phases=phases,
                       client=self.client, leakage=self.leakage)
        run.write_info(info)
        _journal(run.records_path, self.records)
        if self.load is not None:
            _journal(run.path / "load.jsonl", self.load)
        (run.path / "rubric.yaml").write_text(yaml.safe_dump(rubric), encoding="utf-8")
        outputs = {r["case_id"]: r["output"] for r in self.records}
        if self.labels:
            _journal(run.path / "reviews.jsonl", [_label(cid, label, outputs[cid]) for cid, label in self.labels])
        return run.path


def _journal(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _label(case_id: str, label: str, output: str | None) -> dict:
    return LabelEdit(review_id=f"R-{case_id}", case_id=case_id, reviewer="ana", label=label, time="2026-12-01T00:00:00Z",
                     output_hash=output_hash(output), source="review.csv", source_line=2).model_dump()


def _healthy(n: int = 100) -> list[dict]:
    return [ok(i) for i in range(n)]


def _medical(n_fail: int, n: int = 10) -> list[dict]:
    """n medical cases, the first n_fail answered wrong, among 90 other right answers."""
    medical = [ok(100 + i, output=WRONG if i < n_fail else RIGHT, tags={"domain": "medical"}) for i in range(n)]
    return _healthy(90) + medical


def _leak_row(which: str, i: int, cand: bool | None = False, base: bool | None = False, cand_ll: float | None = -1.0,
              base_ll: float | None = -1.0) -> dict:
    """One leakage record as the probe records it: whether each arm's continuation repeated it, and its score."""
    return {"id": f"{which}-{i}", "set": which, "sha256": f"{i:064x}", "head": "", "tail": "",
            "cand": {"extracted": cand, "ll": cand_ll}, "base": {"extracted": base, "ll": base_ll}}


def _leakage(train: list[dict], heldout_n: int = 40) -> dict:
    """Figures of a probe whose held-out records neither arm repeated (scores spread as a model's would be)."""
    heldout = [_leak_row("heldout", i, cand_ll=-1.0 - (i % 7) * 0.1) for i in range(heldout_n)]
    return {"records": train + heldout, "membership": None, "personal_values": 0, "base": "the adapter disabled"}


def _leak_rubric(metric: str, threshold: float, confidence: float | None = 0.95) -> dict:
    limit = {"metric": metric, "op": "<=", "threshold": threshold, **({"confidence": confidence} if confidence else {})}
    return lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.8}, limit])


# the candidate's probe died on the first 20 of 40 training records (the ones it might have repeated)
_CUT_EXTRACTION = _leakage([_leak_row("train", i, cand=None if i < 20 else False) for i in range(40)])
# the base gave no log-likelihood for the 10 training records the candidate is surest of
_CUT_MEMBERSHIP = _leakage([_leak_row("train", i, cand_ll=-0.1 if i < 10 else -1.0 - (i % 7) * 0.1,
                                      base_ll=None if i < 10 else -1.0) for i in range(40)])


CORPUS: dict[str, tuple[Run, str]] = {
    # the control: a healthy, complete run passes
    "healthy run": (Run(_healthy()), "PASS"),
    # load-phase failures reach the gate: 24 of 60 load requests failed (dropped streams, stalls)
    "load failures, no error criterion": (
        Run(_healthy(), load=[load_ok(i) for i in range(36)] + [load_err(i, "stall_timeout") for i in range(36, 60)]),
        "FAIL"),
    "load failures, quality-only error criterion passes but overall fails": (
        Run(_healthy(), rubric=lenient(criteria=[
            {"metric": "accuracy", "op": ">=", "threshold": 0.8},
            {"metric": "error_rate", "op": "<=", "threshold": 0.05}]),
            load=[load_ok(i) for i in range(36)] + [load_err(i) for i in range(36, 60)]),
        "FAIL"),
    # killed during the load phase: status still 'running', no load.jsonl
    "killed in the load phase": (Run(_healthy(), status="running", phases=["quality", "load"]), "INCONCLUSIVE"),
    "interrupted": (Run(_healthy(), status="interrupted"), "INCONCLUSIVE"),
    "failed status": (Run(_healthy(), status="failed"), "INCONCLUSIVE"),
    "cases missing": (Run(_healthy(60), cases=100), "INCONCLUSIVE"),
    "no records at all": (Run([], cases=0), "INCONCLUSIVE"),
    "planned load phase never ran": (Run(_healthy(), phases=["quality", "load"]), "INCONCLUSIVE"),
    "load.jsonl shorter than the load phase": (
        Run(_healthy(), load=[load_ok(i) for i in range(30)],
            load_phase={"profile": "closed loop", "seconds": 5.0, "requests": 60}), "INCONCLUSIVE"),
    "load phase cut short": (
        Run(_healthy(), load=[load_ok(i) for i in range(30)],
            load_phase={"profile": "open loop", "seconds": 5.0, "requests": 30,
                        "cut_short": "30 of 60 planned requests were never sent"}), "INCONCLUSIVE"),
    # allow_insufficient with every request timed out
    "all timed out, allow_insufficient": (
        Run([err(i, "timeout") for i in range(50)], rubric=lenient(allow_insufficient=True)), "TARGET_ERROR"),
    "nothing decided, allow_insufficient": (
        Run(_healthy(), rubric=lenient(allow_insufficient=True, criteria=[
            {"metric": "accuracy", "op": ">=", "threshold": 0.8, "min_samples": 1000}])), "INCONCLUSIVE"),
    # a P95 bound from one success among 99 errors
    "P95 at 95% from n=1 (99 errors)": (
        Run([ok(0, ttft=20.0)] + [err(i) for i in range(1, 100)], rubric=lenient(criteria=[
            {"metric": "ttft_ms_p95", "op": "<=", "threshold": 200, "confidence": 0.95}])), "TARGET_ERROR"),
    "P95 at 95% from n=2": (
        Run(_healthy(2), rubric=lenient(criteria=[
            {"metric": "ttft_ms_p95", "op": "<=", "threshold": 200, "confidence": 0.95}])), "INCONCLUSIVE"),
    "P95 at 95% from n=40 (bound needs 59)": (
        Run(_healthy(40), rubric=lenient(criteria=[
            {"metric": "ttft_ms_p95", "op": "<=", "threshold": 200, "confidence": 0.95}])), "INCONCLUSIVE"),
    "P99 at 95% from n=250 (bound needs 299)": (
        Run(_healthy(250), rubric=lenient(criteria=[
            {"metric": "ttft_ms_p99", "op": "<=", "threshold": 200, "confidence": 0.95}])), "INCONCLUSIVE"),
    # 1000 gaps of one request are one request, not 1000 samples
    "ITL P95 at 95% from one request": (
        Run([ok(0, itl=[5.0] * 1000)], rubric=lenient(criteria=[
            {"metric": "itl_ms_p95", "op": "<=", "threshold": 50, "confidence": 0.95}])), "INCONCLUSIVE"),
    # baseline comparison that compares nothing
    "baseline with no shared case": (
        Run(_healthy(), baseline=[ok(i, case_id=f"other-{i}") for i in range(50)]), "INCONCLUSIVE"),
    # a traffic-log id equal to a suite case id must not replace that case's score
    "load id collides with a quality case": (
        Run([ok(i, output=WRONG if i < 30 else RIGHT) for i in range(100)],
            load=[load_ok(i, case_id=f"c{i:03d}") for i in range(60)]), "FAIL"),
    # latency_from both: tokens of both phases over the seconds of both phases
    "throughput from both phases": (
        Run(_healthy(10), generation_seconds=10.0, load=[load_ok(i) for i in range(100)],
            load_phase={"profile": "closed loop", "seconds": 100.0, "requests": 100},
            rubric=lenient(latency_from="both", criteria=[
                {"metric": "accuracy", "op": ">=", "threshold": 0.8},
                {"metric": "output_tokens_per_s", "op": ">=", "threshold": 50}])), "FAIL"),
    # a typo in required_slices must not drop the review requirement
    "required slice matches no case": (
        Run(_healthy(), rubric=lenient(review={"required_domains": [], "required_slices": [{"task": "shiftd"}]})),
        "INCONCLUSIVE"),
    # labels only on auto-passed cases say nothing about a slice that failed 90%
    "approval from passed cases only": (
        Run(_medical(9), rubric=lenient(review={"min_reviewed": 1}), labels=[("c109", "approve")]),
        "NEEDS_REVIEW"),  # labels on the failed cases would decide it; never a PASS
    "approval over every outcome": (
        Run(_medical(9), rubric=lenient(review={"min_reviewed": 2}),
            labels=[("c109", "approve"), ("c100", "reject")]), "FAIL"),
    "required review pending": (Run(_medical(0), rubric=lenient(review={"min_reviewed": 2})), "NEEDS_REVIEW"),
    "label on another output does not count": (
        Run(_medical(0), rubric=lenient(review={"min_reviewed": 1}), labels=[]), "NEEDS_REVIEW"),
    # max_tokens cannot be checked without a token count
    "max_tokens with unknown token counts": (
        Run([ok(i, tokens=None, fmt=[{"type": "max_length", "max_tokens": 50}]) for i in range(100)],
            rubric=lenient(criteria=[{"metric": "format_compliance", "op": ">=", "threshold": 0.9}])), "INCONCLUSIVE"),
    # every request fails: the target could not be run
    "every request 5xx": (Run([err(i, "http_5xx") for i in range(100)]), "TARGET_ERROR"),
    "every request 429 after retries": (Run([err(i, "http_429") for i in range(100)]), "TARGET_ERROR"),
    "server died mid-run": (
        Run(_healthy(40) + [err(i, "connection_error") for i in range(40, 100)]), "TARGET_ERROR"),
    # no error criterion at 42% failed requests
    "42% failed, no error criterion": (
        Run(_healthy(58) + [err(i, "http_5xx") for i in range(58, 100)],
            rubric=lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.5}])), "FAIL"),
    "criterion on a slice with no case": (
        Run(_healthy(), rubric=lenient(criteria=[
            {"metric": "accuracy", "op": ">=", "threshold": 0.8, "slice": {"task": "nope"}}])), "INCONCLUSIVE"),
    # the client's event loop, not the target, set the latency: a TTFT it inflated fails nothing, a TPOT it may
    # have deflated (gaps read late are stamped together) passes nothing
    "client saturated in the load phase": (
        Run(_healthy(), load=[load_ok(i, ttft=100.0) for i in range(60)],
            load_phase={"profile": "closed loop", "seconds": 10.0, "requests": 60,
                        "client": {"loop_lag_ms": {"p50": 8.0, "p99": 35.0, "max": 60.0, "n": 900}, "cpu_share": 1.0}},
            rubric=lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.8},
                                     {"metric": "ttft_ms_p95", "op": "<=", "threshold": 90}])), "INCONCLUSIVE"),
    "client saturated in the quality phase": (
        Run([ok(i, ttft=100.0) for i in range(100)],
            client={"loop_lag_ms": {"p50": 2.0, "p99": 40.0, "max": 50.0, "n": 500}, "cpu_share": 0.99},
            rubric=lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.8},
                                     {"metric": "tpot_ms_p50", "op": "<=", "threshold": 10}])), "INCONCLUSIVE"),
    # the openai client's send stamp comes late under load: its TTFT can be too short, so a pass decides nothing
    "openai client saturated, TTFT pass": (
        Run(_healthy(), load=[load_ok(i, ttft=100.0) for i in range(60)],
            load_phase={"profile": "closed loop", "seconds": 10.0, "requests": 60,
                        "client": {"client": "openai", "loop_lag_ms": {"p50": 30.0, "p99": 600.0, "max": 700.0,
                                                                       "n": 900}, "cpu_share": 0.9}},
            rubric=lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.8},
                                     {"metric": "ttft_ms_p95", "op": "<=", "threshold": 150}])), "INCONCLUSIVE"),
    # a record an arm did not answer may be the one it would have repeated: never left out as clean
    "leakage: the candidate's probe died on half the training records": (
        Run(_healthy(), leakage=_CUT_EXTRACTION, rubric=_leak_rubric("extraction_rate_delta", 0.25)), "INCONCLUSIVE"),
    "leakage: the same, decided on its point value": (
        Run(_healthy(), leakage=_CUT_EXTRACTION, rubric=_leak_rubric("extraction_rate_delta", 0.25, None)),
        "INCONCLUSIVE"),
    "leakage: one unanswered record of 200 still decides": (
        Run(_healthy(), leakage=_leakage([_leak_row("train", i, cand=None if i == 0 else False) for i in range(100)], 100),
            rubric=_leak_rubric("extraction_rate_delta", 0.1)), "PASS"),
    "leakage: records with no log-likelihood on the base left out": (
        Run(_healthy(), leakage=_CUT_MEMBERSHIP, rubric=_leak_rubric("membership_auc", 0.75)), "INCONCLUSIVE"),
    # the server died after the suites: no leakage continuation or template answered, the suites' answers clean
    "leakage: personal data searched in the suites' answers only": (
        Run(_healthy(), leakage={**_leakage([_leak_row("train", i, cand=None) for i in range(40)]), "templates": 20,
                                 "personal_values": 30, "probe_answers": {"cand": {"answers": 0, "hits": 0}},
                                 "run_answers": {"answers": 100, "hits": 0}},
            rubric=_leak_rubric("pii_regurgitation_rate", 0.05)), "INCONCLUSIVE"),
    "latency criteria on a load phase that never ran": (
        Run(_healthy(), rubric=lenient(latency_from="load", criteria=[
            {"metric": "ttft_ms_p50", "op": "<=", "threshold": 200}])), "INCONCLUSIVE"),
}

# the label case above is built with a label on a different output (the case was regenerated since)
_STALE = CORPUS["label on another output does not count"][0]


@pytest.mark.parametrize("name", list(CORPUS))
def test_corpus_verdicts(name, tmp_path, capsys):
    run, expected = CORPUS[name]
    path = run.build(tmp_path)
    if run is _STALE:
        stale = _label("c100", "approve", "an output the run no longer has")
        (path / "reviews.jsonl").write_text(json.dumps(stale) + "\n", encoding="utf-8")
    code = main(["gate", str(path), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == expected, (name, report["verdict"], report.get("verdict_reason"))
    assert code == EXIT_CODES[expected] == report["exit_code"]
    assert report["verdict_reason"]
    saved = json.loads((path / "report.json").read_text())
    assert saved["verdict"] == expected  # every format is written from the same report


def test_the_corpus_is_big_enough():
    assert len(CORPUS) >= 25 and sum(v != "PASS" for _, v in CORPUS.values()) >= 25


def test_validate_refuses_a_required_slice_that_matches_nothing(tmp_path, cli, project):
    rubric = project / "rubrics" / "example.yaml"
    data = yaml.safe_load(rubric.read_text())
    data["review"] = {**(data.get("review") or {}), "required_slices": [{"task": "shiftd"}]}
    rubric.write_text(yaml.safe_dump(data))
    code, _, err_text = cli("validate", "-c", project / "releasegate.yaml")
    assert code == 2 and "review.required_slices[0]" in err_text and "matches no case" in err_text


def test_compare_with_no_shared_case_is_inconclusive(tmp_path, cli):
    a = Run(_healthy(20)).build(tmp_path / "a")
    b = Run([ok(i, case_id=f"x{i}") for i in range(20)]).build(tmp_path / "b")
    code, out, _ = cli("compare", a, b, "--json")
    assert code == 3 and json.loads(out)["verdict"] == "INCONCLUSIVE"


def test_compare_with_nothing_judged_is_inconclusive():
    bare = [CaseRecord(case_id=f"c{i}", suite="s", input={"prompt": "p"}, error="timeout") for i in range(5)]
    result = compare_records(bare, bare, ())
    assert result["shared_cases"] == 5 and comparison_verdict(result) == "INCONCLUSIVE"


def test_matrix_exits_on_the_worst_variant():
    row = {"verdict": "PASS", "quality_verdict": "pass"}
    assert matrix_verdict([row, {**row, "verdict": "FAIL"}]) == "FAIL"
    assert matrix_verdict([row, {**row, "quality_verdict": "insufficient"}]) == "INCONCLUSIVE"
    assert matrix_verdict([row, {**row, "verdict": "TARGET_ERROR"}]) == "TARGET_ERROR"
    assert matrix_verdict([]) == "INCONCLUSIVE"
    assert matrix_verdict([row, row]) == "PASS"


def test_gate_with_another_rubric_agrees_across_formats(tmp_path, cli):
    """`gate --rubric X`: the per-case tables of every format are scored with X's forbidden rules."""
    path = Run(_healthy(20)).build(tmp_path)
    strict = tmp_path / "strict.yaml"
    strict.write_text(yaml.safe_dump(lenient(forbidden=[{"category": "billing", "phrases": ["billing"]}])))
    code, _, _ = cli("gate", path, "--rubric", strict)
    (whatif,) = (path / "whatif").iterdir()  # another policy than the run's: its reports go beside the run's own
    report = json.loads((whatif / "report.json").read_text())
    # the run's own rubric, judging it again from its records, passes it too: the what-if may exit 0
    assert code == 0 and report["metrics"]["forbidden_rate"]["value"] == 1.0
    assert report["judged_by"]["recorded_verdict"] == "PASS" and report["judged_by"]["whatif_verdict"] == "PASS"
    csv_text = (whatif / "report.csv").read_text()
    assert csv_text.count("forbidden") >= 20  # every case's row says why it failed, as report.json does
    assert "forbidden: billing" in (whatif / "report.html").read_text()


# --- property: losing evidence never turns a non-PASS into PASS ---------------------------------------------

INFO = RunInfo(run_id="p", created_at="now", target="t", backend="openai", status="complete", cases=0,
               generation_seconds=1.0, phases=["quality"])


def _rubric() -> Rubric:
    return Rubric(path=None, name="p", criteria=(
        Criterion(name="acc", metric="accuracy", op=">=", threshold=0.9),
        Criterion(name="ttft", metric="ttft_ms_p95", op="<=", threshold=100, confidence=0.95),
    ))


def _records(outcomes: list[tuple[bool, bool, float]]) -> list[CaseRecord]:
    out = []
    for i, (answered, right, ttft) in enumerate(outcomes):
        row = ok(i, output=RIGHT if right else WRONG, ttft=ttft) if answered else err(i)
        out.append(CaseRecord.model_validate(row))
    return out


def _verdict(records, info, labels=()) -> str:
    return gate_run(info.model_copy(update={"cases": info.cases or len(records)}), records, _rubric(), None,
                     labels=list(labels))["verdict"]


outcome = st.tuples(st.booleans(), st.booleans(), st.floats(min_value=1, max_value=300))
mutation = st.sampled_from(["drop", "error", "incomplete", "kill"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(outcome, min_size=0, max_size=90), st.lists(st.tuples(mutation, st.integers(0, 10**6)), max_size=4))
def test_losing_evidence_never_makes_a_pass(outcomes, mutations):
    records = _records(outcomes)
    info = INFO.model_copy(update={"cases": len(records)})
    before = _verdict(records, info)
    for kind, seed in mutations:
        if kind == "drop" and records:
            del records[seed % len(records)]  # a case lost: the run plans more than it recorded
        elif kind == "error" and records:
            i = seed % len(records)
            records[i] = CaseRecord.model_validate(err(i, case_id=records[i].case_id))
        elif kind == "incomplete":
            info = info.model_copy(update={"status": "interrupted"})
        elif kind == "kill":
            info = info.model_copy(update={"status": "running"})
    after = _verdict(records, info)
    if before != "PASS":
        assert after != "PASS", (before, after, mutations)


def test_dropping_labels_never_makes_a_pass():
    records = [CaseRecord.model_validate(r) for r in _medical(3)]
    info = INFO.model_copy(update={"cases": len(records)})
    rubric = Rubric(path=None, name="p", criteria=(Criterion(name="acc", metric="accuracy", op=">=", threshold=0.5),))
    from releasegate.inputs.review_policy import ReviewPolicy

    rubric = Rubric(path=None, name="p", criteria=rubric.criteria, review=ReviewPolicy(min_reviewed=2))
    labels = [LabelEdit.model_validate(_label(cid, lab, next(r.output for r in records if r.case_id == cid)))
              for cid, lab in (("c100", "reject"), ("c105", "approve"))]
    full = gate_run(info, records, rubric, None, labels=labels)["verdict"]
    assert full == "FAIL"  # approval 7/10 x 1 + 3/10 x 0 = 0.7 < 0.9
    for keep in ([], labels[:1], labels[1:]):
        assert gate_run(info, records, rubric, None, labels=keep)["verdict"] != "PASS"


def test_a_client_within_its_lag_budget_still_passes(tmp_path, capsys):
    run = Run([ok(i, ttft=100.0) for i in range(100)],
              client={"loop_lag_ms": {"p50": 0.5, "p99": 4.0, "max": 9.0, "n": 500}, "cpu_share": 0.4},
              rubric=lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.8},
                                       {"metric": "ttft_ms_p50", "op": "<=", "threshold": 150}]))
    assert main(["gate", str(run.build(tmp_path)), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "PASS" and report["client_saturated"] is None


def test_a_saturated_client_leaves_an_inflated_pass_standing(tmp_path, capsys):
    """The lean client stamps its send right after the write, so a late loop only makes TTFT look worse: a TTFT
    that passes anyway is a pass."""
    run = Run([ok(i, ttft=100.0) for i in range(100)],
              client={"client": "lean", "loop_lag_ms": {"p50": 2.0, "p99": 40.0, "max": 50.0, "n": 500},
                      "cpu_share": 0.99},
              rubric=lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.8},
                                       {"metric": "ttft_ms_p50", "op": "<=", "threshold": 150}]))
    assert main(["gate", str(run.build(tmp_path)), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "PASS" and report["client_saturated"].startswith("client saturated")


def test_a_saturated_client_fails_a_criterion_its_lag_cannot_explain(tmp_path, capsys):
    """TTFT p95 of 400 ms against a 200 ms limit, the client 50 ms late (over 10% of TTFT p50): the failure stands."""
    run = Run([ok(i, ttft=400.0) for i in range(100)],
              client={"client": "lean", "loop_lag_ms": {"p50": 2.0, "p99": 50.0, "max": 60.0, "n": 500},
                      "cpu_share": 0.99},
              rubric=lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.8},
                                       {"metric": "ttft_ms_p95", "op": "<=", "threshold": 200},
                                       {"metric": "ttft_ms_p50", "op": "<=", "threshold": 380}]))
    assert main(["gate", str(run.build(tmp_path)), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    verdicts = {c["name"]: c["verdict"] for c in report["criteria"]}
    # 400 - 50 still misses 200: a real failure; 400 - 50 would meet 380: the client may explain it
    assert verdicts["ttft_ms_p95"] == "fail" and verdicts["ttft_ms_p50"] == "insufficient"
    assert report["verdict"] == "FAIL" and report["client_saturated"]
