"""records.jsonl walked as a stream (`record.journal_stream`): the records `RunDir.read_records` gives, by the
same rules, and the report read alone (`RunView.load` with no scored run) holds no list of the run's records."""

from __future__ import annotations

import json

import pytest

from releasegate.errors import InputError
from releasegate.record.journal_stream import JournalStream
from releasegate.record.records import RunDir
from releasegate.report import render
from releasegate.report.view import RunView
from releasegate.scorers import scored_run
from test_false_pass import WRONG, Run, err, ok


def _same(path) -> list:
    read = RunDir(path).read_records()
    walked = list(JournalStream(path).records())
    assert [r.model_dump() for r in walked] == [r.model_dump() for r in read]
    assert [[e.model_dump() for e in r.earlier_attempts] for r in walked] == \
        [[e.model_dump() for e in r.earlier_attempts] for r in read]
    return walked


def test_a_stream_gives_the_records_read_records_gives_retries_and_torn_line_included(tmp_path):
    """A case sent three times (two failures, then an answer) is given once, at its first place, with its two
    failed lines as earlier attempts (the second with the first as its own); a torn last line is left out."""
    records = [ok(0), err(1), ok(2), err(1, "timeout"), ok(3), ok(1)]
    path = Run(records).build(tmp_path)
    with (path / "records.jsonl").open("a") as fh:
        fh.write(json.dumps(ok(4))[:40])  # a kill mid-line
    walked = _same(path)
    assert [r.case_id for r in walked] == ["c000", "c001", "c002", "c003"]
    assert [e.error for e in walked[1].earlier_attempts] == ["http_5xx", "timeout"]
    assert [e.error for e in walked[1].earlier_attempts[1].earlier_attempts] == ["http_5xx"]
    assert walked[1].output is not None and not walked[0].earlier_attempts


def test_a_stream_keeps_stored_scores_only_from_a_journal_as_sealed(tmp_path):
    """Stored scores count only while the journal is as the run sealed it: a journal with no seal gives every
    record with `scored_with` cleared, like read_records."""
    rows = [{**ok(i), "scored_with": "f" * 64} for i in range(3)]
    path = Run(rows).build(tmp_path)
    assert all(r.scored_with is None for r in _same(path))


def test_a_corrupt_line_is_refused_naming_it_and_a_line_appended_later_is_not_given(tmp_path):
    path = Run([ok(0), ok(1)]).build(tmp_path)
    stream = JournalStream(path)
    with (path / "records.jsonl").open("a") as fh:  # appended after the journal was checked
        fh.write(json.dumps(ok(2)) + "\n")
    assert [r.case_id for r in stream.records()] == ["c000", "c001"]
    with (path / "records.jsonl").open("a") as fh:
        fh.write('{"case_id": 3}\n' + json.dumps(ok(4)) + "\n")
    with pytest.raises(InputError, match="corrupt record") as caught:
        JournalStream(path)
    assert caught.value.line == 4
    (path / "records.jsonl").unlink()
    with pytest.raises(InputError, match="no records.jsonl"):
        JournalStream(path)


def test_a_report_read_alone_walks_the_journal_and_renders_what_the_gate_wrote(tmp_path, cli):
    """`releasegate report` reads the records as a stream (the view holds no list of them) and renders every
    format byte for byte as the gate that held the records did."""
    records = [ok(i) for i in range(20)]
    records[7] = ok(7, output=WRONG)
    records[11] = err(11)
    path = Run(records + [ok(11)]).build(tmp_path)  # c011 failed, then answered on a retry
    assert cli("gate", path)[0] in (0, 1)
    alone = RunView.load(RunDir(path))
    assert alone.stream is not None and alone.records == [] and alone.scores == {}
    held = RunView.load(RunDir(path), scored=scored_run(RunDir(path), alone.stream.forbidden, alone.stream.verdicts))
    assert held.stream is None and len(held.records) == 20
    for fmt in ("csv", "html", "md", "junit", "json"):
        assert render(alone, fmt) == render(held, fmt) == (path / f"report.{'junit.xml' if fmt == 'junit' else fmt}").read_bytes().decode()
    assert [row.case_id for row in alone.cases()] == [f"c{i:03d}" for i in range(20)]
    assert alone.latency_samples() == held.latency_samples() and alone.prefill_decode() == held.prefill_decode()
