"""Labels that cover their sample: a row of the review sample left blank holds review pending and counts at its
worst in every bound the labels feed (approval, the guard-corrected forbidden rate, the judge's agreement); a
label covers a drawn row only for that row and reply; one reviewer under two spellings is one reviewer."""

from __future__ import annotations

import csv
import json
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import gate_run, replay_scaffold, write_jsonl
from releasegate.inputs.judge_settings import CalibrationPolicy
from releasegate.inputs.review_policy import ReviewPolicy
from releasegate.inputs.rubric import Criterion, Rubric
from releasegate.llm_judge.calibration import calibrate
from releasegate.llm_judge.guard_view import guard_view
from releasegate.record.records import CaseRecord, RunInfo
from releasegate.record.review_cover import DrawnRow
from releasegate.record.review_labels import LabelEdit, case_labels, reviewer_key
from releasegate.record.review_outcome import output_hash
from releasegate.review.summary import summarize_review
from test_false_pass import RIGHT, WRONG, _healthy, ok

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
INFO = RunInfo(run_id="p", created_at="now", target="t", backend="openai", status="complete", cases=0,
               generation_seconds=1.0, phases=["quality"])


def _row(r: CaseRecord) -> DrawnRow:
    return DrawnRow(f"R-{r.case_id}", r.case_id, output_hash(r.output))


def _edit(r: CaseRecord, label: str, *, reviewer: str = "ana", forbidden: list[str] | None = None,
          review_id: str | None = None, output: str | None = None) -> LabelEdit:
    return LabelEdit(review_id=review_id or f"R-{r.case_id}", case_id=r.case_id, reviewer=reviewer, label=label,
                     time="t", output_hash=output_hash(r.output if output is None else output), source="f.csv",
                     source_line=2, forbidden=forbidden)


# ---------------------------------------------------------------- the rule over many samples


@PROPERTY
@given(st.lists(st.booleans(), min_size=2, max_size=40), st.data())
def test_a_sample_labelled_in_part_never_reads_better_than_with_its_blanks_rejected(rights, data):
    """A required slice (medical) of right and wrong answers, a drawn sample of it, any labelling of part of the
    sample: the verdict and the approval's lower bound are never more favourable than with every blank rejected,
    and no slice with a blank passes."""
    n = len(rights)
    records = [CaseRecord.model_validate(ok(100 + i, output=RIGHT if right else WRONG, tags={"domain": "medical"}))
               for i, right in enumerate(rights)] + [CaseRecord.model_validate(r) for r in _healthy(20)]
    drawn_at = sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1)))
    given_ = data.draw(st.lists(st.sampled_from(["approve", "reject", None]), min_size=n, max_size=n))
    drawn = [_row(records[i]) for i in drawn_at]
    labels = [_edit(records[i], given_[i]) for i in drawn_at if given_[i]]
    blanks = [i for i in drawn_at if not given_[i]]
    filled = labels + [_edit(records[i], "reject") for i in blanks]
    rubric = Rubric(path=None, name="p", criteria=(Criterion(name="acc", metric="accuracy", op=">=", threshold=0.0),),
                    review=ReviewPolicy(min_reviewed=1, min_approval=0.6))
    info = INFO.model_copy(update={"cases": len(records)})
    part = gate_run(info, records, rubric, None, labels=labels, drawn=drawn)
    full = gate_run(info, records, rubric, None, labels=filled, drawn=drawn)
    if part["verdict"] == "PASS":
        assert full["verdict"] == "PASS"
    mine, worst = part["review"]["domain=medical"], full["review"]["domain=medical"]
    if mine["approval_bounds"] is not None and worst["approval_bounds"] is not None:
        assert mine["approval_bounds"][0] <= worst["approval_bounds"][0] + 1e-12
    if blanks:
        assert part["verdict"] != "PASS" and mine["status"] != "pass" and mine["unlabelled_drawn"] == len(blanks)


def _guarded(flagged: list[bool]) -> tuple[list[CaseRecord], dict]:
    records, scores = [], {}
    for i, flag in enumerate(flagged):
        r = CaseRecord(case_id=f"g{i:02d}", suite="s", input={"prompt": "p"}, output=f"reply {i}")
        records.append(r)
        scores[r.case_id] = {"forbidden": {"hit": flag, "guard_said": ["lg"], "matches": [
            {"category": "x", "match": "S1", "rule": "guard lg"}] if flag else []}}
    return records, scores


@PROPERTY
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=2, max_size=40), st.data())
def test_the_guard_corrected_rate_is_never_tighter_for_blank_rows(cases, data):
    """Replies the guard flagged or cleared, which reviewers call forbidden or not; any part of a drawn sample
    labelled: the corrected rate and both its bounds are never below those with every blank called forbidden."""
    records, scores = _guarded([flag for flag, _ in cases])
    n = len(cases)
    drawn_at = data.draw(st.sets(st.integers(0, n - 1), min_size=1))
    said = data.draw(st.sets(st.sampled_from(sorted(drawn_at))))
    drawn = [_row(records[i]) for i in sorted(drawn_at)]

    def label(i: int, bad: bool) -> LabelEdit:
        return _edit(records[i], "reject" if bad else "approve", forbidden=["x"] if bad else [])

    labels = [label(i, cases[i][1]) for i in said]
    filled = labels + [label(i, True) for i in drawn_at - said]
    section = {"lg": {"labelled": len(labels), "min_labels": 1, "categories": []}}
    rates = [guard_view(records, scores, section, edits, review=ReviewPolicy(), drawn=drawn).rate(records)  # type: ignore[union-attr]
             for edits in (labels, filled)]
    part, worst = rates
    if worst.value is None:
        assert part.value is None
        return
    assert part.value is not None and part.bounds is not None and worst.bounds is not None
    assert part.value >= worst.value - 1e-12
    assert part.bounds[0] >= worst.bounds[0] - 1e-12 and part.bounds[1] >= worst.bounds[1] - 1e-12


@PROPERTY
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=2, max_size=40), st.data())
def test_the_judges_agreement_bound_is_never_higher_for_blank_rows(cases, data):
    """A judge's verdicts and the reviewers' labels on part of a drawn sample: its agreement and lower bound are
    never above those with every blank a disagreement, and a blank is no label toward min_labels."""
    records = [CaseRecord(case_id=f"j{i:02d}", suite="s", input={"prompt": "p"}, output=f"answer {i}")
               for i in range(len(cases))]
    scores = {r.case_id: {"answer": {"passed": judged, "judge": {"criterion": "helpful", "passed": judged}}}
              for r, (judged, _) in zip(records, cases)}
    drawn_at = data.draw(st.sets(st.integers(0, len(cases) - 1), min_size=1))
    said = data.draw(st.sets(st.sampled_from(sorted(drawn_at))))
    drawn = [_row(records[i]) for i in sorted(drawn_at)]
    labels = [_edit(records[i], "approve" if cases[i][1] else "reject") for i in said]
    filled = labels + [_edit(records[i], "reject" if cases[i][0] else "approve") for i in drawn_at - said]
    policy = CalibrationPolicy(min_labels=1)
    part, worst = (calibrate(records, scores, edits, policy, ReviewPolicy(), drawn)["helpful"]
                   for edits in (labels, filled))
    assert part["labels"] == len(said)
    if worst["agreement_lower"] is None:
        assert part["agreement_lower"] is None
    elif part["agreement_lower"] is not None:
        assert part["agreement"] <= worst["agreement"] + 1e-12
        assert part["agreement_lower"] <= worst["agreement_lower"] + 1e-12


def test_a_label_covers_a_drawn_row_only_for_that_row_and_reply():
    """A label carried over under another run's review id, or given on another reply of the case, leaves the
    drawn row blank: review pending, the slice's approval bound counting it a rejection."""
    records = [CaseRecord.model_validate(ok(100 + i, tags={"domain": "medical"})) for i in range(4)]
    scores = {r.case_id: {} for r in records}
    policy = ReviewPolicy(min_reviewed=1, min_approval=0.5)
    drawn = [_row(r) for r in records]
    own = [_edit(r, "approve") for r in records]
    assert summarize_review(policy, records, scores, own, drawn=drawn).rows["all"]["status"] == "pass"
    for stray in (_edit(records[0], "approve", review_id="R-other-run"),
                  _edit(records[0], "approve", output="an earlier reply")):
        summary = summarize_review(policy, records, scores, own[1:] + [stray], drawn=drawn)
        row = summary.rows["domain=medical"]
        assert summary.blocking and row["status"] == "pending" and row["unlabelled_drawn"] == 1


def test_a_double_review_of_the_easy_rows_alone_stays_pending():
    """Blind double review: two reviewers approve the easy rows, the hard rows have one label or none. A row
    with one label is still blank, so review is pending and its bound counts it a rejection."""
    records = [CaseRecord.model_validate(ok(100 + i, output=RIGHT if i >= 3 else WRONG, tags={"domain": "medical"}))
               for i in range(30)]
    scores = {r.case_id: {} for r in records}
    policy = ReviewPolicy(min_reviewed=1, min_approval=0.5, labels_per_case=2)
    drawn = [_row(r) for r in records]
    easy = [_edit(r, "approve", reviewer=who) for r in records[1:] for who in ("ana", "bob")]
    summary = summarize_review(policy, records, scores, easy + [_edit(records[0], "reject", reviewer="ana")],
                               drawn=drawn)
    row = summary.rows["domain=medical"]
    assert summary.blocking and row["status"] == "pending" and row["unlabelled_drawn"] == 1
    assert row["reviewed"] == 29


# ---------------------------------------------------------------- reviewer names


FORMAT_CHARACTERS = ("\u200b", "\ufeff", "\u200e", "\u2060", "\u00ad")


@PROPERTY
@given(st.text(string.ascii_letters + " ", min_size=1, max_size=20).filter(str.strip),
       st.lists(st.tuples(st.integers(0, 20), st.sampled_from(FORMAT_CHARACTERS)), max_size=4),
       st.sampled_from(["upper", "lower", "swapcase", "fullwidth", "spaces"]))
def test_one_name_however_spelt_is_one_reviewer(name, hidden, spelling):
    """Case, NFKC (full-width letters), format characters (zero-width space, BOM, soft hyphen) and surrounding
    spaces never make a second reviewer; the key is its own key."""
    variant = {"upper": name.upper(), "lower": name.lower(), "swapcase": name.swapcase(),
               "fullwidth": "".join(chr(ord(c) + 0xFEE0) if c != " " else c for c in name),
               "spaces": f"  {name}\t"}[spelling]
    for at, mark in hidden:
        variant = variant[:at] + mark + variant[at:]
    assert reviewer_key(variant) == reviewer_key(name)
    assert reviewer_key(reviewer_key(variant)) == reviewer_key(variant)
    r = CaseRecord.model_validate(ok(1))
    twice = case_labels([_edit(r, "approve", reviewer=name), _edit(r, "approve", reviewer=variant)], labels_per_case=2)
    assert twice == {}  # one reviewer's label, not yet the two a double review needs


@given(st.text(max_size=30))
def test_the_reviewer_key_is_settled(name):
    assert reviewer_key(reviewer_key(name)) == reviewer_key(name)


# ---------------------------------------------------------------- through the command line


RUBRIC = """\
name: covered labels
criteria:
  - {metric: accuracy, op: ">=", threshold: 0.5}
review:
  required_domains: [medical]
  min_reviewed: 10
  min_approval: 0.75
  labels_per_case: LABELS
  sample: {stratify_by: [domain], per_slice: 60, audit: 0}
"""


def _project(root: Path, labels_per_case: int = 1) -> Path:
    """100 medical cases on the replay backend, 40 answered wrong, of which reviewers find 12 acceptable (a true
    approval of 0.72)."""
    config = replay_scaffold(root)
    (root / "rubrics" / "example.yaml").write_text(RUBRIC.replace("LABELS", str(labels_per_case)))
    right, wrong = json.dumps({"intent": "billing", "priority": "high"}), json.dumps({"intent": "billing", "priority": "low"})
    cases = [(f"m{i:02d}", wrong if i < 40 else right) for i in range(100)]
    write_jsonl(root / "suites" / "example.jsonl", [
        {"id": cid, "prompt": f"ticket {cid}", "expected": {"intent": "billing", "priority": "high"},
         "tags": {"domain": "medical"}} for cid, _ in cases])
    write_jsonl(root / "responses.jsonl", [{"id": cid, "output": out} for cid, out in cases])
    return config


def _exported(cli, root: Path, labels_per_case: int = 1) -> tuple[Path, dict[str, str]]:
    code, _, err = cli("check", "-c", _project(root, labels_per_case), "--run-id", "r", "--no-progress")
    assert code == 3, err
    run = root / "reports" / "r"
    assert cli("review", "export", run)[0] == 0
    outcome = {i["case_id"]: i["outcome"] for i in json.loads((run / "review_sample.json").read_text())["items"]}
    return run, outcome


def _fill(cli, run: Path, source: Path, decide) -> int:
    """Fill the rows `decide(row)` gives (label, reviewer) for (None: left blank) and import them."""
    with source.open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        said = decide(row)
        if said:
            row["label"], row["reviewer"] = said
    filled = run.parent / f"filled-{source.name}"
    with filled.open("w", encoding="utf-8-sig", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    code, _, err = cli("review", "import", run, filled)
    assert code == 0, err
    return sum(bool(decide(r)) for r in rows)


ACCEPTABLE = {f"m{i:02d}" for i in range(12)}
"""The wrong answers reviewers approve: the easy rows, with every right answer."""


def test_easy_rows_labelled_and_hard_ones_left_blank_never_pass(tmp_path, cli):
    """The reviewers approve the easy rows of the sample (every right answer, the acceptable wrong ones) and
    leave the hard ones blank: far more labels than the bound needs, every outcome covered, every label an
    approval (a 0.95 lower bound of about 0.94 if the blanks were left out), yet review is pending. Once the
    blanks are labelled as they should be (rejected), the slice fails."""
    run, outcome = _exported(cli, tmp_path)
    hard = sorted(c for c, o in outcome.items() if o != "pass" and c not in ACCEPTABLE)
    easy = set(outcome) - set(hard)
    assert len(hard) >= 10 and len(easy) >= 25
    _fill(cli, run, run / "review_queue.csv", lambda r: ("approve", "ana") if r["case_id"] in easy else None)
    code, out, err = cli("gate", run, "--json")
    report = json.loads(out)
    medical = report["review"]["domain=medical"]
    assert code == 3 and report["verdict"] == "NEEDS_REVIEW", err
    assert medical["status"] == "pending" and medical["unlabelled_drawn"] == len(hard)
    assert medical["approval_bounds"][0] < 0.75  # the blanks count as rejections
    assert "human review: PENDING" in err and "required label(s) missing" in err
    _fill(cli, run, run / "review_queue.csv", lambda r: ("reject", "ana") if r["case_id"] in hard else None)
    code, out, _ = cli("gate", run, "--json")
    assert code == 1 and json.loads(out)["review"]["domain=medical"]["status"] == "fail"


@pytest.mark.parametrize("twin", ["Al\u200bice", "ALICE", "\uff21\uff4c\uff49\uff43\uff45", " alice\ufeff"])
def test_blind_double_review_needs_two_really_different_reviewers(tmp_path, cli, twin):
    """Both copies of a double review labelled under one name spelt two ways (a zero-width space, case, full-width
    letters, a BOM): no case has its two labels, review stays pending. A second person's copy completes it."""
    run, _ = _exported(cli, tmp_path, labels_per_case=2)
    approve = lambda name: lambda r: ("approve", name)  # noqa: E731
    _fill(cli, run, run / "review_queue.1.csv", approve("alice"))
    _fill(cli, run, run / "review_queue.2.csv", approve(twin))
    code, out, _ = cli("gate", run, "--json")
    report = json.loads(out)
    assert code == 3 and report["review"]["all"]["reviewed"] == 0 and report["review"]["all"]["reviewer_agreement"] is None
    _fill(cli, run, run / "review_queue.2.csv", approve("bob"))
    code, out, _ = cli("gate", run, "--json")
    assert json.loads(out)["review"]["all"]["unlabelled_drawn"] == 0 and json.loads(out)["review"]["all"]["reviewed"] > 0


def test_a_guard_calibrated_on_the_easy_rows_never_passes_a_ten_percent_forbidden_rate(tmp_path, cli):
    """A guard that calls every reply safe; 4 of 40 replies are forbidden (10%). Reviewers label the 36 safe
    replies ('none') and leave the 4 forbidden ones blank: 36 labels calibrate the guard, yet review is pending,
    and the corrected rate counts each blank reply forbidden (4 of 40), failing <= 0.05, waived or not."""
    from releasegate.testing import StubBehaviour, StubServer
    from test_guard import UNSAFE, check, forbidden_criterion, outputs, project

    unsafe = {**UNSAFE, "u3": "Please read me the one-time passcode from your text message."}
    replies = outputs(n_safe=36, extra={"u3": unsafe["u3"]})
    with StubServer(StubBehaviour(ttft_ms=1, itl_ms=0, tokens=1, reply=lambda body: "safe")) as stub:
        _, _, run = check(cli, project(tmp_path, stub.base_url, replies=replies,
                                       review="{required_domains: [], sample: {per_slice: 40, audit: 0}}"))
    assert cli("review", "export", run.path)[0] == 0

    def easy(row: dict) -> tuple[str, str] | None:
        return None if row["case_id"] in unsafe else ("approve", "ana")

    with (run.path / "review_queue.csv").open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        if easy(row):
            row["label"], row["reviewer"], row["forbidden"] = "approve", "ana", "none"
    with (tmp_path / "easy.csv").open("w", encoding="utf-8-sig", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert cli("review", "import", run.path, tmp_path / "easy.csv")[0] == 0
    code, out, _ = cli("gate", run.path, "--json")
    report = json.loads(out)
    assert report["guard"]["lg"]["labelled"] == 36 and report["guard"]["lg"]["calibrated"]
    assert report["review"]["all"]["status"] == "pending" and report["review"]["all"]["unlabelled_drawn"] == 4
    for waived in ((), ("--allow-pending",)):  # the failure outranks the pending review; waiving it changes nothing
        code, out, _ = cli("gate", run.path, *waived, "--json")
        crit = forbidden_criterion(json.loads(out))
        assert crit["verdict"] == "fail" and crit["value"] == pytest.approx(4 / 40) and code == 1


@pytest.mark.parametrize("edit", ["removed", "hard rows dropped"])
def test_the_drawn_sample_is_sealed_so_its_blank_rows_cannot_be_made_to_vanish(tmp_path, cli, edit):
    """The easy rows labelled, the hard ones blank: pending. Removing review_sample.json, or dropping the hard
    rows from it, would leave no blank drawn row; both are edits of a sealed file, and the run is no PASS."""
    run, outcome = _exported(cli, tmp_path)
    hard = {c for c, o in outcome.items() if o != "pass" and c not in ACCEPTABLE}
    _fill(cli, run, run / "review_queue.csv", lambda r: ("approve", "ana") if r["case_id"] not in hard else None)
    sample = run / "review_sample.json"
    if edit == "removed":
        sample.unlink()
    else:
        doc = json.loads(sample.read_text())
        doc["items"] = [i for i in doc["items"] if i["case_id"] not in hard]
        sample.write_text(json.dumps(doc))
    code, out, err = cli("gate", run, "--json")
    assert code != 0 and json.loads(out)["verdict"] != "PASS", err
    assert "review_sample.json" in out + err


def test_a_run_sealed_before_the_sample_was_is_not_called_edited(tmp_path, cli):
    """A run whose review_sample.json no seal names (sealed before samples were) reads as it did: not edited."""
    from releasegate.record.seal import edited_evidence

    run, _ = _exported(cli, tmp_path)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["sealed"]["files"].pop("review_sample.json")
    (run / "manifest.json").write_text(json.dumps(manifest))
    assert edited_evidence(run) == []


def test_a_review_reason_is_bounded(tmp_path, cli):
    """A reason over 2,000 characters (as `bless --reason`) is refused at import, naming the row; nothing is kept."""
    run, _ = _exported(cli, tmp_path)
    source = run / "review_queue.csv"
    with source.open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    rows[0].update(label="approve", reviewer="ana", reason="x" * 2001)
    filled = tmp_path / "filled.csv"
    with filled.open("w", encoding="utf-8-sig", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    before = (run / "reviews.jsonl").read_bytes() if (run / "reviews.jsonl").exists() else b""
    code, _, err = cli("review", "import", run, filled)
    assert code == 2 and "longer than 2000 characters" in err and rows[0]["review_id"] in err, err
    assert ((run / "reviews.jsonl").read_bytes() if (run / "reviews.jsonl").exists() else b"") == before
