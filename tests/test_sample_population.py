"""A stratified `sample:` suite gates the source it was drawn from: each case stands for its stratum's rows, so an
equal-allocation sample that over-draws a rare, easy stratum cannot pass a bar its source misses. With
`estimate: sample` the verdict says it describes the sample only."""

from __future__ import annotations

import json

import pytest

from conftest import write_jsonl
from releasegate.inputs.sampling import draw
from releasegate.record.metrics import compute_metric, stratum_counts
from releasegate.record.records import CaseRecord, Stratum

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

from test_suite_sources import _config  # noqa: E402

COMMON, RARE = 950, 50
PER_STRATUM = 45
RIGHT_COMMON = 34  # of the 45 common cases drawn: 75.6% right, as the common rows are (75%)
RUBRIC = """\
name: population gate
criteria:
  - {metric: accuracy, op: ">=", threshold: 0.85}
review: {required_domains: []}
"""


def _source(project) -> list[str]:
    """1,000 rows, a rare one every 20th; write them as CSV and the answers as a replay file: of the sampled
    common rows the first 34 right, of the others 75%; every rare row right. Return the sampled ids."""
    kinds = ["rare" if i % 20 == 19 else "common" for i in range(COMMON + RARE)]
    ids = [f"t{i:04d}" for i in range(len(kinds))]
    pd.DataFrame({"ticket_id": ids, "text": [f"ticket {i}" for i in ids], "label": ["billing"] * len(ids),
                  "kind": kinds}).to_csv(project / "tickets.csv", index=False)
    order = draw(pd.factorize(pd.Series(kinds))[0], {"per_stratum": PER_STRATUM, "seed": 3}).tolist()
    sampled_common = [ids[i] for i in order if kinds[i] == "common"]
    right = set(sampled_common[:RIGHT_COMMON]) | {cid for cid, kind in zip(ids, kinds) if kind == "rare"}
    others = [cid for cid, kind in zip(ids, kinds) if kind == "common" and cid not in sampled_common]
    right |= {cid for n, cid in enumerate(others) if n % 4}
    write_jsonl(project / "responses.jsonl",
                [{"id": cid, "output": "billing" if cid in right else "refund"} for cid in ids])
    return [ids[i] for i in order]


def _check(project, cli, run_id: str, extra: str = ""):
    (project / "rubrics" / "example.yaml").write_text(RUBRIC)
    entry = ("  - name: tickets\n    source: {path: tickets.csv}\n"
             "    columns: {id: ticket_id, prompt: text, expected: label, tags: [kind]}\n"
             f"    answer: {{type: exact}}\n    sample: {{per_stratum: {PER_STRATUM}, seed: 3, by: [kind]{extra}}}\n")
    code, _, err = cli("check", "-c", _config(project, entry), "--run-id", run_id, "--no-progress")
    run = project / "reports" / run_id
    return code, json.loads((run / "report.json").read_text()), run, err


def test_an_equal_allocation_sample_is_gated_as_its_source(project, cli):
    sampled = _source(project)
    code, report, run, err = _check(project, cli, "weighted")
    records = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]
    assert [r["case_id"] for r in records] == sampled and len(records) == 2 * PER_STRATUM
    assert {r["stratum"]["name"]: r["stratum"]["population"] for r in records} == {"kind=common": COMMON,
                                                                                    "kind=rare": RARE}
    plain = sum(r["output"] == "billing" for r in records) / len(records)
    assert plain == pytest.approx((RIGHT_COMMON + PER_STRATUM) / 90) and plain > 0.85  # the sample alone passes
    accuracy = report["metrics"]["accuracy"]
    weighted = (COMMON * RIGHT_COMMON / PER_STRATUM + RARE) / (COMMON + RARE)
    assert accuracy["value"] == pytest.approx(weighted) and round(accuracy["value"], 3) == 0.768
    assert "population-weighted" in accuracy["note"]
    assert report["verdict"] == "FAIL" and code == 1, err


def test_estimate_sample_describes_the_sample_only(project, cli):
    _source(project)
    code, report, _, err = _check(project, cli, "plain", ", estimate: sample")
    assert report["metrics"]["accuracy"]["value"] == pytest.approx((RIGHT_COMMON + PER_STRATUM) / 90)
    assert report["verdict"] == "PASS" and code == 0, err
    assert "describe the sample only" in report["verdict_reason"]


def test_a_weighted_bound_uses_the_effective_n(project, cli):
    """Kish's effective n of the 950/50 design is about 50, not 90: a 0.95 bound on 0.768 cannot show >= 0.7."""
    _source(project)
    (project / "rubrics").mkdir(exist_ok=True)
    code, report, _, _ = _check(project, cli, "bound")
    bounds = report["metrics"]["accuracy"]["bounds"]
    assert bounds[0] < 0.7 < bounds[1]


def _case(i: int, stratum: str, population: int, right: bool, tags: dict) -> CaseRecord:
    return CaseRecord(case_id=f"c{i}", suite="s", tags=tags, input={"prompt": "p"}, expected="a",
                      answer={"type": "exact"}, output="a" if right else "b",
                      stratum=Stratum(name=stratum, population=population))


def test_a_slice_across_strata_is_weighted_by_the_runs_strata():
    """A slice estimates its share of each stratum from the whole run's cases of the stratum (a domain
    estimate): 10 cases of a 1,000-row stratum, 5 of them in the slice, stand for 500 slice rows, not 1,000."""
    from releasegate.scorers import score_records

    big = [_case(i, "k=big", 1000, i < 5, {"t": "x" if i % 2 else "y"}) for i in range(10)]
    small = [_case(10 + i, "k=small", 10, True, {"t": "x"}) for i in range(10)]
    records = big + small
    scores = score_records(records, ())
    strata = stratum_counts(records)
    chosen = [r for r in records if r.tags["t"] == "x"]
    value = compute_metric("accuracy", chosen, scores, {"strata": strata}).value
    # x: big odd ids 1, 3 right of 1, 3, 5, 7, 9 (each 100 rows), every small case (1 row each)
    assert value == pytest.approx((2 * 100 + 10) / (5 * 100 + 10))
    whole = compute_metric("accuracy", records, scores, {"strata": strata}).value
    assert whole == pytest.approx((5 * 100 + 10) / 1010)
    unsampled = [r.model_copy(update={"stratum": None}) for r in records]
    assert compute_metric("accuracy", unsampled, scores, {}).value == pytest.approx(15 / 20)
