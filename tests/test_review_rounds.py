"""Double labelling and adjudication, end to end on real files: `review.labels_per_case: 2` exports one copy per
reviewer, counts a case once two reviewers agree, reports their agreement (Cohen's kappa, hand-counted), keeps
review pending on a disagreement until an adjudicator, whose label decides, labels it."""

from __future__ import annotations

import csv
import io
import json
from fractions import Fraction
from pathlib import Path

import pytest

from releasegate.record.review_labels import LabelEdit, awaiting_adjudication, case_labels
from releasegate.review.agreement import reviewer_agreement
from test_review import RUBRIC, review_project, snapshot  # noqa: F401  (review_project: a fixture)

DOUBLE = RUBRIC.replace("  min_approval: 0.75\n", "  min_approval: 0.75\n  labels_per_case: 2\n")
ALICE_REJECTS, BOB_REJECTS = {"cs-0", "cs-1"}, {"cs-1", "cs-2"}  # agree on cs-1, disagree on cs-0 and cs-2


@pytest.fixture
def run_dir(review_project: Path, cli) -> Path:  # noqa: F811
    (review_project / "rubrics" / "example.yaml").write_text(DOUBLE)
    code, _, err = cli("check", "-c", review_project / "releasegate.yaml", "--run-id", "r", "--no-progress")
    assert code == 3, err
    return review_project / "reports" / "r"


def rows_of(path: Path) -> list[dict]:
    with path.open(encoding="utf-8-sig", newline="") as fh:
        return list(csv.DictReader(fh))


def fill(source: Path, target: Path, reviewer: str, rejects: set[str], **cells) -> Path:
    """The CSV at `source` with every row labelled by `reviewer`: reject for the case ids in `rejects`."""
    rows = rows_of(source)
    for row in rows:
        rejected = row["case_id"] in rejects
        row.update(label="reject" if rejected else "approve", reason="not safe" if rejected else "fine",
                   reviewer=reviewer, **cells)
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(rows)
    target.write_bytes(buf.getvalue().encode("utf-8-sig"))
    return target


def gate(cli, run: Path, *extra: str) -> tuple[int, dict, str]:
    code, out, err = cli("gate", run, "--json", *extra)
    return code, json.loads(out), err


def test_two_reviewers_agree_disagree_and_the_adjudicator_decides(run_dir, cli, tmp_path):
    code, out, err = cli("review", "export", run_dir)
    assert code == 0, err
    one, two = run_dir / "review_queue.1.csv", run_dir / "review_queue.2.csv"
    assert one.is_file() and two.is_file() and not (run_dir / "review_queue.csv").exists()
    assert one.read_bytes() == two.read_bytes()  # the same cases, each reviewer labels their own copy
    assert "copy 1 of 2" in (run_dir / "review_queue.1.instructions.txt").read_text()
    assert not any(c.startswith("auto_") for c in rows_of(one)[0])  # blind by default
    cases = len(rows_of(one))

    assert cli("review", "import", run_dir, fill(one, tmp_path / "alice.csv", "alice", ALICE_REJECTS))[0] == 0
    code, report, err = gate(cli, run_dir)
    assert code == 3 and report["review"]["domain=customer_support"]["reviewed"] == 0  # one label is no label yet

    assert cli("review", "import", run_dir, fill(two, tmp_path / "bob.csv", "bob", BOB_REJECTS))[0] == 0
    code, report, err = gate(cli, run_dir)
    every = report["review"]["all"]
    assert code == 3 and report["verdict"] == "NEEDS_REVIEW" and every["status"] == "pending"
    assert every["awaiting_adjudication"] == 2 and report["review"]["domain=customer_support"]["status"] == "pending"
    # the hand count: (alice, bob) approve/approve n-3, approve/reject 1 (cs-2), reject/approve 1 (cs-0), reject/reject 1
    agree = every["reviewer_agreement"]
    assert agree["table"] == {"approve/approve": cases - 3, "approve/reject": 1, "reject/approve": 1, "reject/reject": 1}
    assert agree["cases"] == cases and agree["agreed"] == cases - 2 and agree["agreement"] == (cases - 2) / cases
    po, p = Fraction(cases - 2, cases), Fraction(cases - 2, cases)  # both approve cases-2 of cases
    pe = p * p + (1 - p) * (1 - p)
    assert agree["kappa"] == pytest.approx(float((po - pe) / (1 - pe)), abs=1e-12)
    line = " ".join(err.split())
    assert "PENDING: 2 disagreement(s) await adjudication; next: releasegate review export" in line
    assert "--adjudication" in line and "label(s) missing" not in line
    code, out, _ = cli("review", "status", run_dir)
    line = " ".join(out.split())
    assert code == 0 and f"reviewers agree on {cases - 2} of {cases} double-labelled cases" in line
    assert "2 disagreement(s) await adjudication: releasegate review export" in line
    code, waived, _ = gate(cli, run_dir, "--allow-pending")
    assert code != 3 and waived["obligations"]["review_waived"]  # waived, and said so

    code, out, err = cli("review", "export", run_dir, "--adjudication")
    assert code == 0, err
    adjudication = run_dir / "review_adjudication.csv"
    rows = rows_of(adjudication)
    assert sorted(r["case_id"] for r in rows) == ["cs-0", "cs-2"] and {r["round"] for r in rows} == {"adjudication"}
    assert all(sorted(r["labels_given"].splitlines()) == ["approve: fine", "reject: not safe"] for r in rows)
    assert "alice" not in adjudication.read_text("utf-8-sig") and "bob" not in adjudication.read_text("utf-8-sig")

    before = snapshot(run_dir)
    code, _, err = cli("review", "import", run_dir, fill(adjudication, tmp_path / "self.csv", "Alice", set()))
    assert code == 2 and "the adjudicator must be someone else" in err and snapshot(run_dir) == before
    code, _, err = cli("review", "import", run_dir, fill(adjudication, tmp_path / "r.csv", "carol", set(), round="2"))
    assert code == 2 and "leave the round column as exported" in err and snapshot(run_dir) == before
    agreed = fill(one, tmp_path / "agreed.csv", "carol", set(), round="adjudication")  # rows nobody disputes
    code, _, err = cli("review", "import", run_dir, agreed)
    assert code == 2 and "its reviewers do not disagree (nothing to adjudicate)" in err and snapshot(run_dir) == before

    # carol approves cs-0 (alice rejected it) and rejects cs-2 (alice approved it): her label decides both
    assert cli("review", "import", run_dir, fill(adjudication, tmp_path / "carol.csv", "carol", {"cs-2"}))[0] == 0
    code, report, err = gate(cli, run_dir)
    support = report["review"]["domain=customer_support"]
    assert report["review"]["all"]["awaiting_adjudication"] == 0 and support["reviewed"] == 8
    assert support["rejected"] == 2 and support["approved"] == 6  # cs-1 (both), cs-2 (carol); cs-0 approved by carol
    assert code == 0 and report["verdict"] == "PASS", report["review"]  # 6 of 8 whole: 0.75 reaches min_approval
    assert f"reviewers agree on {cases - 2} of {cases} double-labelled cases" in " ".join(err.split())
    assert "reviewers agree on" in (run_dir / "report.md").read_text()
    code, _, err = cli("review", "export", run_dir, "--adjudication", "--force")
    assert code == 2 and "no case awaits adjudication" in err


def test_one_reviewer_labelling_both_copies_is_one_label(run_dir, cli, tmp_path):
    cli("review", "export", run_dir)
    for copy in (1, 2):
        source = run_dir / f"review_queue.{copy}.csv"
        assert cli("review", "import", run_dir, fill(source, tmp_path / f"{copy}.csv", "alice", set()))[0] == 0
    code, report, err = gate(cli, run_dir)
    assert code == 3 and report["review"]["all"]["reviewed"] == 0 and report["review"]["all"]["reviewer_agreement"] is None


def test_a_disagreement_outside_the_required_slices_still_waits(run_dir, cli, tmp_path):
    cli("review", "export", run_dir)
    one, two = run_dir / "review_queue.1.csv", run_dir / "review_queue.2.csv"
    assert cli("review", "import", run_dir, fill(one, tmp_path / "a.csv", "alice", set()))[0] == 0
    assert cli("review", "import", run_dir, fill(two, tmp_path / "b.csv", "bob", {"web-0"}))[0] == 0
    code, report, _ = gate(cli, run_dir)
    assert code == 3 and report["review"]["all"]["awaiting_adjudication"] == 1
    assert report["review"]["domain=customer_support"]["status"] == "pass"


def edit(case_id: str, reviewer: str, label: str, *, adjudication: bool = False) -> LabelEdit:
    return LabelEdit(review_id="R-" + case_id, case_id=case_id, reviewer=reviewer, label=label, time="t",
                     output_hash="sha256:x", source="f.csv", source_line=2, adjudication=adjudication)


def test_case_labels_under_one_and_two_labels_per_case():
    edits = [edit("a", "alice", "approve"), edit("b", "alice", "approve"), edit("b", "bob", "approve"),
             edit("c", "alice", "approve"), edit("c", "bob", "reject"),
             edit("d", "alice", "reject"), edit("d", "bob", "approve"), edit("d", "carol", "approve", adjudication=True),
             edit("e", "alice", "approve"), edit("e", "bob", "reject"), edit("e", "carol", "approve", adjudication=True),
             edit("e", "dave", "reject", adjudication=True)]
    two = case_labels(edits, 2)
    assert set(two) == {"b", "d", "e"}  # a: one label; c: a disagreement awaiting its adjudicator
    assert two["d"].label == "approve" and two["d"].adjudicated and two["d"].disagreement
    assert two["e"].label == "reject"  # the latest adjudicator's label
    one = case_labels(edits, 1)
    assert one["c"].label == "reject" and one["a"].label == "approve"  # any rejection rejects
    assert one["d"].label == "approve"  # ... unless an adjudicator decided
    assert awaiting_adjudication(edits) == ["c"]


def test_reviewer_agreement_hand_counted():
    pairs = [("approve", "approve")] * 20 + [("approve", "reject")] * 5 + [("reject", "approve")] * 10 + \
        [("reject", "reject")] * 15
    agree = reviewer_agreement(pairs)
    assert agree["cases"] == 50 and agree["agreed"] == 35 and agree["agreement"] == 0.7
    assert agree["kappa"] == pytest.approx(0.4, abs=1e-12)  # po 0.7, pe 0.5*0.6 + 0.5*0.4 = 0.5
    try:
        from sklearn.metrics import cohen_kappa_score
    except ImportError:
        pass
    else:
        first, second = zip(*pairs)
        assert agree["kappa"] == pytest.approx(cohen_kappa_score(first, second), abs=1e-12)
    assert reviewer_agreement([("approve", "approve")] * 3)["kappa"] is None  # chance agreement total: undefined
    assert reviewer_agreement([]) is None


@pytest.mark.parametrize(("key", "value"), [("labels_per_case", 3), ("labels_per_case", 0), ("show_auto", '"yes"')])
def test_the_new_review_keys_are_validated_with_their_line(review_project, cli, key, value):  # noqa: F811
    rubric = review_project / "rubrics" / "example.yaml"
    rubric.write_text(RUBRIC.replace("  min_approval: 0.75\n", f"  min_approval: 0.75\n  {key}: {value}\n"))
    code, _, err = cli("validate", "-c", review_project / "releasegate.yaml")
    assert code == 2 and "example.yaml:7" in err and f"review.{key}" in err, err


def test_adjudication_takes_the_kept_sample_only(run_dir, cli):
    cli("review", "export", run_dir)
    code, _, err = cli("review", "export", run_dir, "--adjudication", "--resample")
    assert code == 2 and "drop --seed and --resample" in err
