"""Memory flat in the number of cases: what the gate and the reports hold for a run does not grow with a
per-case temporary they could do without (bench/memory.py measures the process's peak RSS at 1,000 and 100,000
cases; these tests hold the structure that keeps it flat)."""

from __future__ import annotations

import csv
import dataclasses
import inspect
import io
import re
import tracemalloc

import numpy as np

import releasegate.stats.cluster_bounds as cluster_bounds
from releasegate.record.records import RunDir
from releasegate.report import render
from releasegate.report.view import RunView
from releasegate.stats.cluster_bounds import cluster_bootstrap
from test_false_pass import WRONG, Run, err, ok


def _groups(n: int, seed: int = 1) -> list[list[float]]:
    rng = np.random.default_rng(seed)
    return [list(rng.exponential(4.0, size=int(rng.integers(1, 6)))) for _ in range(n)]


def test_the_itl_bootstrap_drawn_in_blocks_gives_the_bounds_of_one_draw(monkeypatch):
    """Resamples are drawn a block at a time; the blocks draw the same stream, so the bounds are the same
    whatever the block size (one resample a block, a few, or all at once)."""
    groups = _groups(300)
    whole = cluster_bootstrap(groups, 95)
    for rows in (1, 7, 300 * 13):  # block sizes in group draws: 1 resample, a few, 13 at a time
        monkeypatch.setattr(cluster_bounds, "_DRAWS_AT_ONCE", rows)
        assert cluster_bootstrap(groups, 95) == whole
    monkeypatch.setattr(cluster_bounds, "_DRAWS_AT_ONCE", 1000 * 300)
    assert cluster_bootstrap(groups, 95) == whole
    assert whole is not None and whole[0] < whole[1]


def test_the_itl_bootstrap_never_holds_a_resamples_by_requests_array():
    """1000 resamples of 10,000 requests: one int64 array of every draw would be 80 MB; the peak stays a
    fraction of it (the blocks' arrays and the gaps themselves)."""
    groups = _groups(10_000)
    tracemalloc.start()
    try:
        bounds = cluster_bootstrap(groups, 99)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert bounds is not None
    assert peak < 1000 * 10_000 * 8 / 4, f"peak {peak / 1e6:.0f} MB"


def test_the_reports_read_case_rows_one_at_a_time_and_the_page_lists_a_capped_few(tmp_path, cli, monkeypatch):
    """RunView.cases() yields rows (report.csv writes each, report.html keeps the ones it lists); the page lists
    the failing cases first, in the run's order, up to its cap, and counts the rest."""
    import releasegate.report.html as html_report

    records = [ok(i) for i in range(30)]
    records[25] = ok(25, output=WRONG)
    records[12] = err(12)
    path = Run(records).build(tmp_path)
    assert cli("gate", path)[0] == 1
    view = RunView.load(RunDir(path))
    assert inspect.isgenerator(view.cases())
    monkeypatch.setattr(html_report, "MAX_CASE_ROWS", 4)
    page = render(RunDir(path), "html")
    listed = re.findall(r'<div class="id">([^<]+)</div>', page)
    assert listed == ["c000", "c001", "c012", "c025"]  # both failing cases, then the first passing, in run order
    assert "(2 of 30 failing)" in page and "26 passing cases are not listed here" in page
    rows = list(csv.reader(io.StringIO(render(RunDir(path), "csv"))))
    assert [r[0] for r in rows[1:]] == [f"c{i:03d}" for i in range(30)]  # report.csv keeps every case


def test_a_journal_holds_each_equal_spec_tag_and_score_once_and_reads_the_same(tmp_path):
    """Records of one suite share their answer spec, format checks, tags and a passing case's scores: each equal
    value is held once; a value that differs stays its own, and every record reads as written."""
    records = [ok(i) for i in range(20)] + [ok(20, tags={"task": "other"}), err(21)]
    path = Run(records).build(tmp_path)
    read = RunDir(path).read_records()
    assert len({id(r.answer) for r in read}) == 1 and len({id(r.format) for r in read}) == 1
    assert len({id(r.tags) for r in read}) == 2 and read[20].tags == {"task": "other"}
    fields = ("case_id", "answer", "format", "tags", "output", "error")
    assert [[r.model_dump(mode="json")[k] for k in fields] for r in read] == [[w[k] for k in fields] for w in records]


def test_records_read_share_pydantic_bookkeeping_and_stay_records_of_their_own(tmp_path):
    """Every record read shares one set of fields set and one private-attribute dict (its timing and tokens
    theirs): none is made per record. Each still reads, changes, copies and pickles as a record of its own, and
    a retried case keeps its earlier attempts to itself."""
    import pickle

    from releasegate.record.records import CaseRecord

    records = [ok(i) for i in range(5)] + [err(5), ok(5)]  # c005 failed, then was sent again and answered
    path = Run(records).build(tmp_path)
    read = RunDir(path).read_records()
    assert len(read) == 6
    for part in (lambda r: r, lambda r: r.timing, lambda r: r.tokens):
        assert len({id(part(r).__pydantic_fields_set__) for r in read}) == 1
    assert len({id(r.__pydantic_private__) for r in read[:5]}) == 1
    assert [r.case_id for r in read[5].earlier_attempts] == ["c005"] and read[5].earlier_attempts[0].error
    assert all(r.earlier_attempts == [] for r in read[:5])
    fresh = [CaseRecord.model_validate(w) for w in records[:5]]
    assert [r.model_dump() for r in read[:5]] == [f.model_dump() for f in fresh] and read[:5] == fresh
    read[0].output, read[0].timing.ttft_ms = "changed", 1.0  # one record changed, the others as read
    assert read[1].output == records[1]["output"] and read[1].timing.ttft_ms == records[1]["timing"]["ttft_ms"]
    copy = read[2].model_copy(update={"error_message": "x"})
    assert copy.error_message == "x" and read[2].error_message is None
    again = pickle.loads(pickle.dumps(read[3]))
    assert again == read[3] and again.earlier_attempts == []
    assert CaseRecord.model_validate_json(read[4].model_dump_json()) == read[4]


def test_gate_writes_report_csv_a_row_at_a_time_with_the_text_render_gives(tmp_path, cli, monkeypatch):
    """report.csv grows with the cases: `check` and `gate` write it as its rows are made (`ReportFormat.chunks`),
    never rendering it whole, and the file is the text `render` gives."""
    import dataclasses

    import releasegate.report.formats as formats

    path = Run([ok(i) for i in range(12)] + [ok(12, output=WRONG), err(13)]).build(tmp_path)
    fmt = formats.REGISTRY["csv"]
    assert fmt.chunks is not None

    def whole(*args, **kwargs):
        raise AssertionError("report.csv rendered whole")

    monkeypatch.setitem(formats.REGISTRY, "csv", dataclasses.replace(fmt, render=whole))
    assert cli("gate", path)[0] == 1
    monkeypatch.setitem(formats.REGISTRY, "csv", fmt)
    written = (path / "report.csv").read_bytes()
    assert written == render(RunDir(path), "csv").encode("utf-8")
    assert written.count(b"\r\n") == 15 and b"c013" in written


def test_the_gate_holds_each_input_packed_and_reads_it_as_written(tmp_path):
    """A scored run's records hold their inputs packed (`record.held`): each reads as the journal has it, a new
    dict each time, and the record copies, dumps and pickles as the one read from the journal."""
    import pickle

    from releasegate.record.held import HeldRecord
    from releasegate.scorers import scored_run

    path = Run([ok(i) for i in range(6)] + [ok(6, output=WRONG)]).build(tmp_path)
    plain = RunDir(path).read_records()
    held = scored_run(RunDir(path), ()).records
    assert all(type(r) is HeldRecord and type(r.__dict__["input"]) is bytes for r in held)
    assert [r.input for r in held] == [r.input for r in plain] and held[0].input is not held[0].input
    assert [r.model_dump_json() for r in held] == [r.model_dump_json() for r in plain]
    assert [r.model_dump() for r in held] == [r.model_dump() for r in plain]
    copy = held[1].model_copy(update={"output": "x"})
    assert copy.input == plain[1].input and copy.output == "x" and held[1].output == plain[1].output
    assert held[2].model_copy(update={"input": {"prompt": "p"}}).input == {"prompt": "p"}
    assert pickle.loads(pickle.dumps(held[3])).input == plain[3].input
    assert held[4].unpacked() == plain[4]


def test_the_gate_holds_inter_token_gaps_as_doubles_and_reads_them_as_written(tmp_path):
    """A streamed answer's gaps (the one part of a record that grows with the answer) are held as an array of the
    same doubles, dumped as the list the journal has, and pooled into the same percentile."""
    from array import array

    from releasegate.record.metrics import compute_metric
    from releasegate.scorers import scored_run
    from releasegate.stats.intervals import percentile, pooled_percentile

    rng = np.random.default_rng(3)
    gaps = [[float(x) for x in rng.exponential(7.0, size=int(rng.integers(1, 40)))] for _ in range(30)]
    path = Run([ok(i, itl=g) for i, g in enumerate(gaps)] + [ok(30, itl=[])]).build(tmp_path)
    plain = RunDir(path).read_records()
    held = scored_run(RunDir(path), ()).records
    assert all(type(r.timing.__dict__["itl_ms"]) is array for r in held[:30]) and held[30].timing.itl_ms == []
    assert [list(r.timing.itl_ms) for r in held] == [r.timing.itl_ms for r in plain]
    assert [r.model_dump_json() for r in held] == [r.model_dump_json() for r in plain]
    assert held[5].unpacked() == plain[5] and type(held[5].unpacked().timing.itl_ms) is list
    for q in (0, 50, 95, 99, 100):
        assert pooled_percentile([r.timing.itl_ms for r in held], q) == percentile([x for g in gaps for x in g], q)
    many = [array("d", rng.exponential(7.0, size=500)) for _ in range(300)]  # past the list's size: numpy's sort
    for q in (0, 50, 95, 99, 100):
        assert pooled_percentile(many, q) == percentile([x for g in many for x in g], q)
    assert pooled_percentile([[], []], 50) is None
    scores = {r.case_id: {} for r in held}
    assert compute_metric("itl_ms_p95", held, scores, {}) == compute_metric("itl_ms_p95", plain, scores, {})


def test_passing_cases_of_a_sealed_run_share_one_scores_dict(tmp_path):
    """Scores reused from the journal (no guard rule to add) are the record's stored scores, held once for every
    case that has them; a failing case's are its own."""
    from releasegate.record.records import CaseRecord
    from releasegate.record.seal import seal
    from releasegate.scorers import scored_run, stored_scores

    records = [CaseRecord.model_validate(ok(i) if i < 8 else ok(i, output=WRONG)) for i in range(9)]
    for r in records:
        r.scores, r.scored_with = stored_scores(r, ())
    path = Run([r.model_dump(mode="json") for r in records]).build(tmp_path)
    (path / "manifest.json").write_text("{}", encoding="utf-8")
    seal(path, "check")  # the journal as the run wrote it: its stored scores are reused
    scored = scored_run(RunDir(path), ())
    passing = [scored.scores[f"c{i:03d}"] for i in range(8)]
    assert len({id(s) for s in passing}) == 1 and passing[0]["answer"]["passed"]
    assert scored.scores["c008"] is not passing[0] and not scored.scores["c008"]["answer"]["passed"]


def test_failing_cases_past_the_kept_ones_are_counted_not_detailed():
    """report.json details the first failing cases and counts them all (`kept_failing`)."""
    from releasegate.gate.case_detail import failing_cases, kept_failing
    from releasegate.record.records import CaseRecord

    records = [CaseRecord.model_validate(ok(i, output=WRONG) if i % 2 else ok(i)) for i in range(10)]
    scores = {r.case_id: {"answer": {"passed": r.output != WRONG, "detail": ""}} for r in records}
    kept, total = kept_failing(records, scores, limit=2)
    assert total == 5 and [f["case_id"] for f in kept] == ["c001", "c003"]
    assert kept == failing_cases(records, scores, limit=2) and len(failing_cases(records, scores, limit=None)) == 5


def test_check_lets_go_of_a_handed_over_suite_before_judging(tmp_path, monkeypatch):
    """`check` on a config file (the cases read for it) empties the list of cases once they are run, before it
    judges; a caller that runs the same cases again (a matrix's variants) keeps its list whole."""
    from rich.console import Console

    import releasegate.pipeline.check as check
    from releasegate.inputs.validation import load_inputs
    from releasegate.pipeline.check_options import CheckOptions
    from releasegate.testing import StubBehaviour, StubServer

    seen: list[int] = []
    judge = check._judge
    monkeypatch.setattr(check, "_judge", lambda *a: (seen.append(len(cases)), judge(*a))[1])
    with StubServer(StubBehaviour(ttft_ms=0, itl_ms=0, tokens=2)) as stub:
        (tmp_path / "suite.jsonl").write_text("".join(
            f'{{"id": "c{i}", "messages": [{{"role": "user", "content": "q{i}"}}], "expected": "tok"}}\n'
            for i in range(5)), encoding="utf-8")
        (tmp_path / "rubric.yaml").write_text("criteria: [{metric: accuracy, op: '>=', threshold: 0.5}]\n"
                                              "review: {required_domains: []}\n", encoding="utf-8")
        (tmp_path / "c.yaml").write_text(
            f"target: {{backend: openai, base_url: '{stub.base_url}', model: stub}}\ngeneration: {{max_new_tokens: 4}}\n"
            "suites: [{path: suite.jsonl, answer: {type: regex, pattern: tok}}]\nrubric: rubric.yaml\n"
            "output: {dir: reports}\n", encoding="utf-8")
        config, rubric, cases = load_inputs(tmp_path / "c.yaml")
        options = CheckOptions(Console(file=io.StringIO()), progress=False, use_cache=False)
        check.run_check(config, rubric, cases, dataclasses.replace(options, run_id="kept"))
        assert len(cases) == 5 and seen == [5]
        check.run_check(config, rubric, cases, dataclasses.replace(options, run_id="given", hand_over_cases=True))
        assert cases == [] and seen == [5, 0]
        assert RunDir(tmp_path / "reports" / "given").read_records()[4].case_id == "c4"
