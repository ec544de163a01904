"""The composition matrix's meetings of three (`releasegate.testing.composition_meetings`): a run that stops when
decided, against a baseline, met with a guard, with double-labelled human review and with served variants. Each
runs on fixtures with a known truth: all good PASS (and the run stops before its last case: its early decision is
what is met), with one part set to fail FAIL (every variant's verdict, for served variants), or `validate` refuses
the meeting in one line naming its keys."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from releasegate.testing import composition as mx
from releasegate.testing.composition_meetings import MEETINGS
from test_composition import decide_features, stub  # noqa: F401  # the matrix's shared stub fixture


def _params():
    out = []
    for meeting in MEETINGS:
        key, name = frozenset(meeting.features), "-".join(meeting.features)
        if key in mx.REFUSED:
            out.append(pytest.param(meeting, "refused", id=f"{name}-refused"))
            continue
        for bad in meeting.bad:
            mode = bad or "good"
            wrong = mx.WRONG.get((key, mode))
            marks = [pytest.mark.xfail(strict=True, reason=f"gives {wrong[0]}: {wrong[1]}")] if wrong else []
            out.append(pytest.param(meeting, mode, marks=marks, id=f"{name}-{mode}"))
    return out


def test_the_meetings_cover_a_stopping_run_against_a_baseline_with_a_guard_variants_and_two_reviewers():
    met = {frozenset(m.features) - {"stopping", "baseline"} for m in MEETINGS
           if {"stopping", "baseline"} <= set(m.features)}
    assert met >= {frozenset({"guard"}), frozenset({mx.SERVED}), frozenset({"review"})}
    assert mx.PARTS["review"].rubric(False)["review"]["labels_per_case"] == 2
    assert all(name in mx.PARTS for m in MEETINGS for name in m.features)
    assert all(None in m.bad and len(m.bad) > 1 for m in MEETINGS)


def _asked(report: dict) -> list[tuple[int, int]]:
    """(cases asked, cases planned) of the run, or of each variant's run."""
    reports = [report]
    if "variants" in report:
        reports = [json.loads((Path(v["run_dir"]) / "report.json").read_text()) for v in report["variants"]]
    out = []
    for r in reports:
        rows = next(s["rows"] for s in r["sections"] if s["feature"] == "stopping")
        asked = next(row["value"] for row in rows if row["label"] == "cases asked")
        found = re.match(r"(\d+) of (\d+)", asked)
        assert found, asked
        out.append((int(found.group(1)), int(found.group(2))))
    return out


@pytest.mark.slow  # each a baseline run and a stopping run (labelled, or one per variant) against the stub
@pytest.mark.parametrize(("meeting", "mode"), _params())
def test_meeting(meeting, mode, stub, cli, tmp_path):  # noqa: F811
    if mode == "refused":
        keys, why = mx.REFUSED[frozenset(meeting.features)]
        verdict, message, _ = decide_features(tmp_path, cli, stub, meeting.features, None, meeting.adjust,
                                                   meeting.wrong_every)
        lines = [line for line in message.splitlines() if line.strip()]
        assert verdict == "REFUSED" and len(lines) == 1 and all(k in lines[0] for k in keys), message
        return
    bad = None if mode == "good" else mode
    verdict, reason, report = decide_features(tmp_path, cli, stub, meeting.features, bad, meeting.adjust,
                                               meeting.wrong_every)
    expected = "PASS" if bad is None else "FAIL"
    assert verdict == expected, f"{' x '.join(meeting.features)} ({bad or 'all good'}): {verdict}: {reason}"
    if bad is None and meeting.stops_early:
        assert all(asked < planned for asked, planned in _asked(report)), _asked(report)


@pytest.mark.slow  # a baseline run and a labelled stopping run against the stub
def test_a_stopping_run_held_to_its_end_by_a_guard_says_so(stub, cli, tmp_path):  # noqa: F811
    meeting = next(m for m in MEETINGS if "guard" in m.features)
    verdict, reason, report = decide_features(tmp_path, cli, stub, meeting.features, None, meeting.adjust,
                                              meeting.wrong_every)
    assert verdict == "PASS", reason
    (asked, planned), = _asked(report)
    rows = next(s["rows"] for s in report["sections"] if s["feature"] == "stopping")
    assert asked < planned or any("kept the run going" in row["value"] for row in rows), rows
