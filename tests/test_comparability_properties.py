"""Property: changing a case's input or expected answer in one run, removing records, or adding failed attempts
never turns a non-PASS into PASS in `compare` or `servers` (a target's eligibility for the recommendation)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from releasegate.pipeline.compare import compare_runs
from releasegate.pipeline.server_ranking import eligible
from releasegate.pipeline.servers import compare_servers
from test_comparability_corpus import make
from test_false_pass import RIGHT, WRONG, Run, err, ok

MARGIN = 0.1  # shown from 16 shared cases: small runs can still PASS, so a mutation has something to break


def _records(outcomes: list[bool | None]) -> list[dict]:
    """Right, wrong or a failed request (None) per case; no timings, so only quality is compared."""
    return [err(i) if right is None else {**ok(i, output=RIGHT if right else WRONG), "timing": {}}
            for i, right in enumerate(outcomes)]


def _mutate(records: list[dict], kind: str, seed: int) -> list[dict]:
    records = [dict(r) for r in records]
    i = seed % len(records)
    if kind == "input":
        records[i]["input"] = {"prompt": f"another question {seed}"}
    elif kind == "expected":
        records[i]["expected"] = {"intent": f"other-{seed}"}
    elif kind == "drop":
        del records[i]  # the run still plans the case
    elif kind == "attempt":
        records.append(err(i, "http_5xx", case_id=records[i]["case_id"]))  # a later failed attempt
    elif kind == "wrong":
        records[i] = {**records[i], "output": WRONG}
    return records


def _verdicts(root: Path, base: list[dict], cand: list[dict], planned: int, tag: str) -> tuple[str, bool]:
    base_path = make(root / tag, "base", Run(base))
    cand_path = make(root / tag, "cand", Run(cand, cases=planned))
    rubric = root / tag / "rubric.yaml"
    margins = {"accuracy": MARGIN, "format_compliance": MARGIN, "forbidden_rate": MARGIN}
    rubric.write_text(yaml.safe_dump({"criteria": [{"metric": "accuracy", "op": ">=", "threshold": 0.5}],
                                      "baseline": {"run": str(base_path), "margins": margins}}))
    compared = compare_runs(base_path, cand_path, rubric)["verdict"]
    servers = compare_servers([base_path, cand_path], margin=MARGIN)
    return compared, eligible(servers["targets"][1])


outcome = st.sampled_from([True] * 14 + [False, None])  # mostly right: many unmutated pairs PASS
mutation = st.sampled_from(["input", "expected", "drop", "attempt", "wrong"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(outcome, min_size=16, max_size=40), st.lists(outcome, min_size=16, max_size=40),
       st.lists(st.tuples(mutation, st.integers(0, 10**6)), min_size=1, max_size=3))
def test_changing_or_losing_evidence_never_makes_a_pass(base_outcomes, cand_outcomes, mutations):
    n = min(len(base_outcomes), len(cand_outcomes))
    base, cand = _records(base_outcomes[:n]), _records(cand_outcomes[:n])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        before = _verdicts(root, base, cand, n, "before")
        mutated = cand
        for kind, seed in mutations:
            mutated = _mutate(mutated, kind, seed)
        after = _verdicts(root, base, mutated, n, "after")
    if before[0] != "PASS":
        assert after[0] != "PASS", (before, after, mutations)
    if not before[1]:
        assert not after[1], (before, after, mutations)


def test_the_property_has_passes_to_break(tmp_path):
    """The unmutated control passes both, so the property above is not vacuous."""
    records = _records([True] * 30)
    compared, recommended = _verdicts(tmp_path, records, records, 30, "control")
    assert compared == "PASS" and recommended
    assert json.dumps(records)  # plain data: the same rows build both runs


@pytest.mark.parametrize("kind", ["input", "expected", "drop", "attempt"])
def test_hiding_the_regressed_cases_never_makes_a_pass(kind, tmp_path):
    """A candidate wrong on 14 of 40 cases; each of those cases changed, dropped or retried into a failure."""
    base = _records([True] * 40)
    cand = _records([True] * 26 + [False] * 14)
    before = _verdicts(tmp_path, base, cand, 40, "before")
    assert before == ("FAIL", False)
    for i in range(26, 40):
        cand = _mutate(cand, kind, i if kind != "drop" else 26)
    after = _verdicts(tmp_path, base, cand, 40, "after")
    assert after[0] != "PASS" and not after[1], after
