"""Human review: sampler, label store, summary, the CSV round trip on real files (pandas, the csv module), and the
CSV opened by a real spreadsheet (Debian's LibreOffice Calc, headless)."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import openpyxl
import pandas as pd
import pytest

from conftest import replay_scaffold, write_jsonl
from releasegate.inputs.review_policy import Quota
from releasegate.record.records import CaseRecord, RunDir
from releasegate.record.review_labels import parse_label
from releasegate.record.review_outcome import output_hash
from releasegate.review import (
    COLUMNS,
    LabelEdit,
    ReviewPolicy,
    SamplePolicy,
    case_labels,
    choose_sample,
    cohen_kappa,
    neutralise,
    summarize_review,
    unneutralise,
)
from releasegate.scorers import score_record

HYPERLINK = '=HYPERLINK("http://example.invalid","x")'
DDE = "+cmd|' /C calc'!A0"
LONG = "Grüße aus 東京 🚀\nsecond line\r\nthird line, \"quoted\", with a comma\n" + "long text " * 4000  # 40,000+ chars
RIGHT = {"intent": "billing", "priority": "high"}


# ---------------------------------------------------------------- a project with domains on the replay backend

RUBRIC = """\
name: review test gate
criteria:
  - {metric: accuracy, op: ">=", threshold: 0.5}
review:
  min_reviewed: 4
  min_approval: 0.75
  sample:
    stratify_by: [domain]
    per_slice: 2
    quotas: [{slice: {domain: web}, n: 3}]
    audit: 0.1
"""


def _cases() -> list[tuple[str, str, str]]:
    """(case id, domain, output): customer_support 8 (one valid-format wrong answer), medical 5, web 3 hostile or
    awkward outputs, general 8."""
    good, wrong = json.dumps(RIGHT), json.dumps({"intent": "billing", "priority": "low"})
    out = [(f"cs-{i}", "customer_support", wrong if i == 7 else good) for i in range(8)]
    out += [(f"med-{i}", "medical", good) for i in range(5)]
    out += [("web-0", "web", HYPERLINK), ("web-1", "web", DDE), ("web-2", "web", LONG)]
    return out + [(f"gen-{i}", "general", good) for i in range(8)]


@pytest.fixture
def review_project(tmp_path: Path) -> Path:
    replay_scaffold(tmp_path)
    (tmp_path / "rubrics" / "example.yaml").write_text(RUBRIC)
    suite = [{"id": cid, "prompt": f"ticket {cid}", "expected": RIGHT, "tags": {"domain": domain}} for cid, domain, _ in _cases()]
    write_jsonl(tmp_path / "suites" / "example.jsonl", suite)
    write_jsonl(tmp_path / "responses.jsonl", [{"id": cid, "output": output} for cid, _, output in _cases()])
    return tmp_path


@pytest.fixture
def run_dir(review_project: Path, cli) -> Path:
    code, _, err = cli("check", "-c", review_project / "releasegate.yaml", "--run-id", "r", "--no-progress")
    assert code == 3, err  # automatic criteria pass; customer_support and medical need review
    return review_project / "reports" / "r"


def snapshot(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.is_file()}


def report(run: Path) -> dict:
    return json.loads((run / "report.json").read_text())


def outcomes(run: Path) -> dict[str, str]:
    """Case id -> its automatic outcome, from the run's review sample (the CSV shows none: blind review)."""
    return {item["case_id"]: item["outcome"] for item in json.loads((run / "review_sample.json").read_text())["items"]}


def read_rows(path: Path) -> list[dict]:
    with path.open(encoding="utf-8-sig", newline="") as fh:
        return list(csv.DictReader(fh))


def at(name: str, starts: list[int], i: int) -> str:
    """Where import names data row i (0-based): its line, and its spreadsheet row where the two differ."""
    row = (i if i >= 0 else len(starts) + i) + 2
    return f"{name}:{starts[i]}" + (f" (spreadsheet row {row})" if row != starts[i] else "") + ":"


def write_rows(path: Path, rows: list[dict], columns=COLUMNS, *, encoding="utf-8-sig", delimiter=",") -> list[int]:
    """Write rows as a spreadsheet would; return the physical line each data row starts on."""
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=list(columns), delimiter=delimiter, lineterminator="\r\n", extrasaction="ignore")
    writer.writeheader()
    starts, line = [], 2
    for row in rows:
        before = buf.tell()
        writer.writerow(row)
        starts.append(line)
        written = buf.getvalue()[before:]
        line += written.count("\n")
    path.write_bytes(buf.getvalue().encode(encoding))
    return starts


def label_all(rows: list[dict], decide) -> list[dict]:
    """Fill label/reason/reviewer of every row with decide(row) -> label."""
    for row in rows:
        row.update(label=decide(row), reason="checked by hand", reviewer="alice")
    return rows


# ---------------------------------------------------------------- the round trip


def test_round_trip_through_pandas_moves_the_gate_from_needs_review_to_pass(run_dir, cli):
    assert report(run_dir)["verdict"] == "NEEDS_REVIEW"
    assert report(run_dir)["review"]["all"]["status"] == "pending"
    code, _, err = cli("review", "export", run_dir)
    assert code == 0, err
    queue = run_dir / "review_queue.csv"
    assert queue.read_bytes().startswith(b"\xef\xbb\xbf") and (run_dir / "review_queue.instructions.txt").is_file()

    frame = pd.read_csv(queue, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    assert tuple(frame.columns) == tuple(c for c in COLUMNS if not c.startswith("auto_")) and (frame["label"] == "").all()
    auto = outcomes(run_dir)  # joined back by case id: the reviewer never saw it
    frame["label"] = ["Approve" if auto[v] == "pass" else "reject" for v in frame["case_id"]]
    frame["reason"] = "looked at it"
    frame["reviewer"] = "alice"
    filled = run_dir.parent / "filled.csv"
    frame.to_csv(filled, index=False, encoding="utf-8-sig")

    code, out, err = cli("review", "import", run_dir, filled)
    assert code == 0, err
    assert f"imported {len(frame)} label(s)" in out
    code, out, err = cli("gate", run_dir, "--json")
    gated = json.loads(out)
    assert code == 0 and gated["verdict"] == "PASS", gated["review"]
    review = gated["review"]
    assert review["domain=customer_support"]["required"] and review["domain=customer_support"]["status"] == "pass"
    assert review["domain=medical"]["status"] == "pass" and review["all"]["status"] == "pass"
    # 0.75 at 0.95 needs 9 labels all approving: each required slice (8 and 5 cases) is labelled whole
    assert review["all"]["needed"] == 13 and review["all"]["coverage"] == 1.0
    assert review["domain=web"]["required"] is False and review["domain=web"]["status"] == "optional"
    assert review["all"]["kappa"] == pytest.approx(1.0)  # the labels followed the automatic verdicts
    names = {c["name"]: c["verdict"] for c in gated["criteria"]}
    assert names["human approval[domain=customer_support]"] == "pass" and names["human approval"] == "pass"
    assert "human review: pass" in err
    page = (run_dir / "report.html").read_text()
    section = page[page.index('<section id="review">'):page.index('<section id="cases">')]
    assert "domain=customer_support" in section and "approval" in section and "kappa" in section


def test_round_trip_through_the_csv_module_fails_on_low_approval(run_dir, cli):
    cli("review", "export", run_dir)
    rows = read_rows(run_dir / "review_queue.csv")
    label_all(rows, lambda r: "reject" if r["slice"] == "domain=customer_support" else "approve")
    write_rows(run_dir.parent / "filled.csv", rows)
    code, _, err = cli("review", "import", run_dir, run_dir.parent / "filled.csv")
    assert code == 0, err
    code, out, _ = cli("gate", run_dir, "--json")
    gated = json.loads(out)
    assert code == 1 and gated["verdict"] == "FAIL"
    failed = [c for c in gated["criteria"] if c["verdict"] == "fail"]
    assert [c["name"] for c in failed][0] == "human approval[domain=customer_support]"
    assert failed[0]["value"] == 0.0 and gated["review"]["domain=customer_support"]["status"] == "fail"
    assert "human approval" in (run_dir / "report.md").read_text()


def test_partial_review_stays_pending_and_allow_pending_passes(run_dir, cli):
    cli("review", "export", run_dir)
    rows = read_rows(run_dir / "review_queue.csv")
    for row in rows:  # only the medical slice is reviewed
        if row["slice"] == "domain=medical":
            row.update(label="yes", reviewer="bob")
    write_rows(run_dir.parent / "part.csv", rows)
    assert cli("review", "import", run_dir, run_dir.parent / "part.csv")[0] == 0
    code, out, err = cli("gate", run_dir, "--json")
    gated = json.loads(out)
    assert code == 3 and gated["verdict"] == "NEEDS_REVIEW"
    assert gated["review"]["domain=medical"]["status"] == "pass"
    assert gated["review"]["domain=customer_support"]["status"] == "pending"
    assert "8 required label(s) missing (domain=customer_support 0/8)" in err
    code, out, _ = cli("gate", run_dir, "--allow-pending", "--json")
    assert code == 0 and json.loads(out)["review"]["all"]["status"] == "pending (allowed)"
    assert "PENDING (allowed by --allow-pending)" in (run_dir / "report.md").read_text()
    assert "Required human review is still pending" in (run_dir / "report.html").read_text()


def test_export_keeps_text_intact_and_formulas_inert(run_dir, cli):
    cli("review", "export", run_dir)
    raw = (run_dir / "review_queue.csv").read_bytes().decode("utf-8-sig")
    rows = {r["case_id"]: r for r in csv.DictReader(io.StringIO(raw, newline=""))}
    assert set(rows) >= {"web-0", "web-1", "web-2"}  # the quota takes every web case
    assert rows["web-0"]["output"] == "'" + HYPERLINK
    assert rows["web-1"]["output"] == "'+cmd|'' /C calc'!A0"  # the apostrophe after | too (a cell under '|')
    assert rows["web-2"]["output"] == LONG  # newlines (LF and CRLF), quotes, commas, 40,000+ characters kept
    for row in rows.values():
        for value in row.values():
            assert not value.startswith(("=", "+", "-", "@", "\t", "\r")), value
        assert row["review_id"].startswith("R-") and row["output_hash"].startswith("sha256:")
        assert row["label"] == row["reason"] == row["reviewer"] == ""
    assert not any(name.startswith("auto_") for name in rows["web-0"])  # blind review: no automatic verdict shown
    assert rows["web-0"]["input"] == "ticket web-0" and json.loads(rows["web-0"]["expected"]) == RIGHT


def test_export_is_stable_and_resample_needs_asking(run_dir, cli):
    cli("review", "export", run_dir)
    first = (run_dir / "review_queue.csv").read_bytes()
    sample = (run_dir / "review_sample.json").read_bytes()
    assert cli("review", "export", run_dir)[0] == 0
    assert (run_dir / "review_queue.csv").read_bytes() == first and (run_dir / "review_sample.json").read_bytes() == sample
    code, _, err = cli("review", "export", run_dir, "--seed", "7")
    assert code == 2 and "--resample" in err
    code, out, _ = cli("review", "export", run_dir, "--seed", "7", "--resample", "--json")
    assert code == 0 and json.loads(out)["seed"] == 7


def test_corrected_file_replaces_the_reviewers_labels_and_keeps_scores(run_dir, cli):
    records = (run_dir / "records.jsonl").read_bytes()
    cli("review", "export", run_dir)
    rows = label_all(read_rows(run_dir / "review_queue.csv"), lambda r: "reject")
    write_rows(run_dir.parent / "first.csv", rows)
    assert cli("review", "import", run_dir, run_dir.parent / "first.csv")[0] == 0
    assert cli("gate", run_dir)[0] == 1
    auto = outcomes(run_dir)
    label_all(rows, lambda r: "approve" if auto[r["case_id"]] == "pass" else "reject")
    write_rows(run_dir.parent / "corrected.csv", rows)
    code, out, _ = cli("review", "import", run_dir, run_dir.parent / "corrected.csv", "--json")
    result = json.loads(out)
    changed = sum(auto[r["case_id"]] == "pass" for r in rows)
    assert code == 0 and result["imported"] == changed and result["unchanged"] == len(rows) - changed
    assert cli("gate", run_dir)[0] == 0
    lines = (run_dir / "reviews.jsonl").read_text().splitlines()
    assert len(lines) == len(rows) + changed  # append-only: the first labels are still there
    first = LabelEdit.model_validate_json(lines[0])
    assert first.reviewer == "alice" and first.reason == "checked by hand" and first.time and first.source == "first.csv"
    assert (run_dir / "records.jsonl").read_bytes() == records  # automatic scores never touched


def test_several_reviewers_any_rejection_rejects(run_dir, cli):
    cli("review", "export", run_dir)
    rows = [r for r in read_rows(run_dir / "review_queue.csv") if r["slice"] in ("domain=customer_support", "domain=medical")]
    label_all(rows, lambda r: "approve")
    write_rows(run_dir.parent / "alice.csv", rows)
    target = next(r for r in rows if r["slice"] == "domain=customer_support")
    bob = [{**target, "label": "reject", "reason": "tone is wrong", "reviewer": "bob"}]
    write_rows(run_dir.parent / "bob.csv", bob)
    assert cli("review", "import", run_dir, run_dir.parent / "alice.csv")[0] == 0
    assert cli("review", "import", run_dir, run_dir.parent / "bob.csv")[0] == 0
    code, out, _ = cli("review", "status", run_dir, "--json")
    status = json.loads(out)["domain=customer_support"]
    assert code == 0 and status["rejected"] == 1 and status["disagreements"] == 1 and status["approved"] == status["reviewed"] - 1


def test_semicolon_csv_and_reviewer_option(run_dir, cli):
    cli("review", "export", run_dir)
    rows = read_rows(run_dir / "review_queue.csv")
    for row in rows:
        row["label"] = "approve"
    write_rows(run_dir.parent / "semi.csv", rows, delimiter=";")  # Excel in many locales
    code, _, err = cli("review", "import", run_dir, run_dir.parent / "semi.csv", "--reviewer", "carol")
    assert code == 0, err
    assert {json.loads(line)["reviewer"] for line in (run_dir / "reviews.jsonl").read_text().splitlines()} == {"carol"}


# ---------------------------------------------------------------- malformed CSVs: exit 2, the line, nothing written


def assert_refused(cli, run_dir: Path, csv_path: Path, *expected: str) -> str:
    before = snapshot(run_dir)
    code, _, err = cli("review", "import", run_dir, csv_path)
    assert code == 2, err
    for text in expected:
        assert text in err, (text, err)
    assert "nothing was imported" in err and "Traceback" not in err
    assert snapshot(run_dir) == before
    return err


@pytest.fixture
def exported(run_dir, cli) -> list[dict]:
    assert cli("review", "export", run_dir)[0] == 0
    return label_all(read_rows(run_dir / "review_queue.csv"), lambda r: "approve")


def test_wrong_encoding_names_the_line(run_dir, cli, exported):
    path = run_dir.parent / "latin1.csv"
    rows = [r for r in exported if r["case_id"] != "web-2"]  # no text latin-1 cannot hold
    starts = write_rows(path, rows, encoding="latin-1")
    rows[3]["reason"] = "très bien"
    write_rows(path, rows, encoding="latin-1")
    assert_refused(cli, run_dir, path, f"latin1.csv:{starts[3]}:", "not UTF-8", "CSV UTF-8")


def test_utf16_is_refused(run_dir, cli, exported):
    path = run_dir.parent / "utf16.csv"
    write_rows(path, exported[:2], encoding="utf-16")
    assert_refused(cli, run_dir, path, "utf16.csv:1:", "UTF-16")


def test_missing_columns(run_dir, cli, exported):
    path = run_dir.parent / "cols.csv"
    write_rows(path, exported, columns=[c for c in COLUMNS if c not in ("reviewer", "output_hash")])
    assert_refused(cli, run_dir, path, "cols.csv:1:", "missing column(s): output_hash, reviewer")


def test_edited_output_names_its_line(run_dir, cli, exported):
    path = run_dir.parent / "edited.csv"
    i = next(i for i, r in enumerate(exported) if r["case_id"] == "web-0")
    exported[i]["output"] = "'" + HYPERLINK.replace("invalid", "evil")
    starts = write_rows(path, exported)
    assert_refused(cli, run_dir, path, at("edited.csv", starts, i), "output was edited since export")


def test_row_from_another_export(run_dir, cli, exported):
    path = run_dir.parent / "other.csv"
    exported[1]["output_hash"] = "sha256:" + "0" * 64
    starts = write_rows(path, exported)
    assert_refused(cli, run_dir, path, at("other.csv", starts, 1), "output_hash is not this run's")


def test_duplicated_review_id(run_dir, cli, exported):
    path = run_dir.parent / "dup.csv"
    starts = write_rows(path, [*exported, exported[0]])
    assert_refused(cli, run_dir, path, at("dup.csv", starts, -1), f"duplicated (first on line {starts[0]})")


def test_every_problem_is_listed_with_its_line(run_dir, cli, exported):
    path = run_dir.parent / "many.csv"
    exported[0]["review_id"] = "R-000000000000"
    exported[1]["label"] = "maybe"
    exported[2]["reviewer"] = " "
    exported[3].update(label="", reason="forgot the label")
    starts = write_rows(path, exported)
    err = assert_refused(cli, run_dir, path, at("many.csv", starts, 0) + " unknown review id 'R-000000000000'",
                         at("many.csv", starts, 1), "invalid label 'maybe'", at("many.csv", starts, 2),
                         "without a reviewer", at("many.csv", starts, 3), "a reason but no label", "3 more problem(s)")
    assert err.count("many.csv:") == 5  # four listed, and the error line repeats the first


def test_every_problem_of_every_row_in_one_pass_the_first_ten_named(run_dir, cli, exported):
    """Three problems in each row but the last, whose forbidden category the rubric does not name (found before
    only once the others were fixed): one import names the first ten with line and spreadsheet row, counts the
    rest, imports nothing, and the run still waits for review."""
    path = run_dir.parent / "all.csv"
    for row in exported[:-1]:
        row.update(label="maybe", reviewer=" ", reason="x" * 2001)
    exported[-1]["forbidden"] = "not_a_category"
    starts = write_rows(path, exported)
    total = 3 * (len(exported) - 1) + 1
    assert total > 10
    err = assert_refused(cli, run_dir, path, at("all.csv", starts, 0) + " " + exported[0]["review_id"] + ": invalid label",
                         "the reason is longer than 2000", "without a reviewer", at("all.csv", starts, 3),
                         f"{total - 10} more problem(s) not listed (the first 10 are above)")
    listed = [line for line in err.splitlines() if not line.startswith("error:") and "all.csv:" in line
              and "not listed" not in line]
    assert len(listed) == 10 and [line.count(exported[i // 3]["review_id"]) for i, line in enumerate(listed)] == [1] * 10
    assert err.count(f"all.csv:{starts[0]}") == 4  # the row's three problems, and the error line that repeats its first
    exported = label_all(exported, lambda r: "approve")
    for row in exported[:-1]:
        row.update(reason="fine")
    write_rows(path, exported)
    err = assert_refused(cli, run_dir, path, at("all.csv", starts, len(exported) - 1),
                         "forbidden 'not_a_category' is not a forbidden category of the rubric")
    assert "more problem" not in err
    assert cli("gate", run_dir)[0] == 3


def test_broken_quoting_in_the_header_names_line_1(run_dir, cli, exported):
    path = run_dir.parent / "header.csv"
    write_rows(path, exported[:2])
    text = path.read_text(encoding="utf-8-sig")
    path.write_text(text.replace(",", ',"', 1), encoding="utf-8")  # a stray quote opens the second column
    assert_refused(cli, run_dir, path, "header.csv:1:", "malformed CSV")


def test_import_before_export_and_broken_quoting(run_dir, cli, exported, tmp_path):
    path = run_dir.parent / "broken.csv"
    write_rows(path, exported[:2])
    path.write_bytes(path.read_bytes() + b'"R-1234567890,"unterminated\r\n')
    assert_refused(cli, run_dir, path, "broken.csv:", "malformed CSV")
    (run_dir / "review_sample.json").unlink()
    code, _, err = cli("review", "import", run_dir, path)
    assert code == 2 and "review export" in err


def test_review_policy_is_validated_with_its_line(review_project, cli):
    rubric = review_project / "rubrics" / "example.yaml"
    rubric.write_text(RUBRIC.replace("min_approval: 0.75", "min_approval: 1.5"))
    code, _, err = cli("validate", "-c", review_project / "releasegate.yaml")
    assert code == 2 and "example.yaml:6" in err and "review.min_approval" in err


# ---------------------------------------------------------------- units: sampler, labels, summary, neutralising


def rec(case_id: str, domain: str, *, right: bool = True, suite: str = "s") -> CaseRecord:
    output = json.dumps(RIGHT if right else {"intent": "refund", "priority": "high"})
    return CaseRecord(case_id=case_id, suite=suite, tags={"domain": domain}, input={"prompt": "p"}, expected=RIGHT,
                      answer={"type": "json_fields"}, format=[{"type": "json"}], output=output)


def scored(records):
    return {r.case_id: score_record(r, ()) for r in records}


def test_sampler_is_seeded_stratified_and_order_free():
    records = [rec(f"a{i}", "customer_support", right=i % 10) for i in range(40)]
    records += [rec(f"b{i}", "general", right=i % 10) for i in range(40)] + [rec("c0", "legal")]
    policy = ReviewPolicy(min_reviewed=6, min_approval=0.5, sample=SamplePolicy(per_slice=3, stratify_by=("domain",), audit=0.05,
                                                              quotas=(Quota({"domain": "general"}, 5),)))
    sample = choose_sample("run", records, scored(records), policy)
    again = choose_sample("run", list(reversed(records)), scored(records), policy)
    assert [i.case_id for i in sample.items] == [i.case_id for i in again.items]
    other = choose_sample("run", records, scored(records), policy, seed=1)
    assert {i.case_id for i in other.items} != {i.case_id for i in sample.items}
    per = {d: [i for i in sample.items if i.stratum == f"domain={d}"] for d in ("customer_support", "general", "legal")}
    why = lambda items: sorted(i.sampled_as for i in items)  # noqa: E731
    assert [i.case_id for i in per["legal"]] == ["c0"]  # required, but has one case
    cs = [i for i in per["customer_support"] if i.sampled_as != "audit"]
    assert why(cs) == ["required"] * 3 + ["stratum"] * 3  # topped up to min_reviewed=6
    assert sample.required == ["domain=customer_support", "domain=legal"]
    assert sum(i.sampled_as == "quota" for i in per["general"]) == 2  # 3 from the stratum, quota 5
    assert sum(i.sampled_as == "audit" for i in sample.items) == 5  # ceil(0.05 * 81)
    assert len({i.review_id for i in sample.items}) == len(sample.items)


def test_sampler_oversamples_failures():
    records = [rec(f"x{i:02d}", "general", right=i >= 4) for i in range(40)]  # 4 wrong answers in 40
    forced = ReviewPolicy(sample=SamplePolicy(per_slice=4, audit=0, oversample={"fail": 1e9, "borderline": 1e9}))
    items = choose_sample("run", records, scored(records), forced).items
    assert sorted(i.case_id for i in items) == ["x00", "x01", "x02", "x03"]
    default = ReviewPolicy(sample=SamplePolicy(per_slice=4, audit=0))
    picked = [sum(i.outcome != "pass" for i in choose_sample("run", records, scored(records), default, seed=s).items)
              for s in range(200)]
    assert sum(picked) / 200 > 0.7  # uniform draws would average 0.4 failures; weight 3 gives about 1


def edit(case_id: str, reviewer: str, label: str, *, right: bool = True) -> LabelEdit:
    return LabelEdit(review_id="R-" + case_id, case_id=case_id, reviewer=reviewer, label=label, time="t",
                     output_hash=output_hash(rec(case_id, "", right=right).output), source="f.csv", source_line=2)


def test_disagreement_rule_and_latest_label_wins():
    labels = case_labels([edit("a", "alice", "reject"), edit("a", "Alice ", "approve"), edit("a", "bob", "approve"),
                          edit("b", "alice", "approve"), edit("b", "bob", "reject")])
    assert labels["a"].label == "approve" and not labels["a"].disagreement and labels["a"].approvals == 2
    assert labels["b"].label == "reject" and labels["b"].disagreement


def test_cohen_kappa_hand_computed():
    pairs = [(True, True)] * 20 + [(True, False)] * 5 + [(False, True)] * 10 + [(False, False)] * 15
    assert cohen_kappa(pairs) == pytest.approx(0.4)  # po 0.7, pe 0.5
    assert cohen_kappa([(True, True)] * 3) is None and cohen_kappa([]) is None


def test_approval_is_weighted_by_automatic_outcome():
    records = [rec(f"p{i}", "medical") for i in range(10)] + [rec(f"f{i}", "medical", right=False) for i in range(2)]
    edits = [edit("p0", "a", "approve"), edit("p1", "a", "reject"),
             edit("f0", "a", "reject", right=False), edit("f1", "a", "reject", right=False)]
    policy = ReviewPolicy(min_reviewed=4, min_approval=0.1)
    summary = summarize_review(policy, records, scored(records), edits)
    row = summary.rows["domain=medical"]
    assert row["approval_sample"] == pytest.approx(0.25)
    assert row["approval"] == pytest.approx((10 * 0.5 + 2 * 0.0) / 12)  # each group weighted by its size
    assert row["status"] == "pass" and row["coverage"] == 1.0 and summary.pending == 0
    assert row["kappa"] == pytest.approx(cohen_kappa([(True, True), (True, False), (False, False), (False, False)]))
    assert row["approval_bounds"][0] >= 0.1  # the 8 unlabelled passes estimated from 2 labels, 1 approving
    short = summarize_review(ReviewPolicy(min_reviewed=5, min_approval=0.1), records, scored(records), edits)
    assert short.pending == 1 and short.blocking and short.rows["domain=medical"]["status"] == "pending"
    loose = ReviewPolicy(min_reviewed=5, min_approval=0.1)
    assert not summarize_review(loose, records, scored(records), edits, allow_pending=True).blocking
    # at 0.9 its labels already show a failure: no more labels can make it pass
    strict = summarize_review(ReviewPolicy(min_reviewed=5), records, scored(records), edits)
    assert strict.rows["domain=medical"]["status"] == "fail" and strict.rows["domain=medical"]["approval_bounds"][1] < 0.9
    off = summarize_review(ReviewPolicy(required_domains=()), records, scored(records), [])
    assert off.rows["all"]["status"] == "not required" and not off.results and not off.blocking
    stale = [edit("f0", "a", "approve")]  # given on another output than the record's now
    assert summarize_review(policy, records, scored(records), stale).rows["domain=medical"]["reviewed"] == 0


@pytest.mark.parametrize("text", [HYPERLINK, DDE, "-2+3", "@SUM(A1)", "\tx", "\rx", "'quoted", "''", "'=x", "plain", ""])
def test_neutralise_is_undone_exactly(text):
    assert unneutralise(neutralise(text)) == text
    assert not neutralise(text).startswith(("=", "+", "-", "@", "\t", "\r"))


def test_label_words():
    assert [parse_label(w) for w in ("Approve", " yes ", "TRUE", "1", "REJECT", "no", "0", "maybe", "")] == [
        "approve", "approve", "approve", "approve", "reject", "reject", "reject", None, None]


def test_rubric_snapshot_keeps_the_review_policy(run_dir):
    from releasegate.inputs.rubric import load_rubric

    policy = load_rubric(run_dir / "rubric.yaml").review
    assert policy.min_reviewed == 4 and policy.sample.quotas == (Quota({"domain": "web"}, 3),)
    assert policy.required_domains == ("customer_support", "medical", "legal")
    assert RunDir(run_dir).read_info().run_id == "r"


# ---------------------------------------------------------------- a real spreadsheet: LibreOffice Calc

CSV_IMPORT = "CSV:44,34,76,1"  # comma, double quote, UTF-8, from line 1; Calc evaluates formulas by default
CSV_EXPORT = "csv:Text - txt - csv (StarCalc):44,34,76,1"


@pytest.fixture
def soffice() -> str:
    path = shutil.which("soffice")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("LibreOffice is not installed; .ci/run installs it with `make libreoffice`")
        pytest.skip("LibreOffice (soffice) is not installed (make libreoffice, or apt-get install libreoffice-calc-nogui)")
    return path


def convert(soffice: str, source: Path, to: str, tmp_path: Path) -> Path:
    """Open `source` in Calc as CSV and save it in the format `to`; return the new file."""
    out = tmp_path / f"converted-{to.split(':')[0]}"
    cmd = [soffice, f"-env:UserInstallation={(tmp_path / 'lo-profile').as_uri()}", "--headless", f"--infilter={CSV_IMPORT}",
           "--convert-to", to, "--outdir", str(out), str(source)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    target = out / f"{source.stem}.{to.split(':')[0]}"
    assert proc.returncode == 0 and target.is_file(), proc.stdout + proc.stderr
    return target


def cells(xlsx: Path) -> list[list[openpyxl.cell.Cell]]:
    return [list(row) for row in openpyxl.load_workbook(xlsx).active.iter_rows()]


def test_no_cell_becomes_a_formula_in_calc(soffice, run_dir, cli, tmp_path):
    assert cli("review", "export", run_dir)[0] == 0
    rows = cells(convert(soffice, run_dir / "review_queue.csv", "xlsx", tmp_path))
    header = [c.value for c in rows[0]]
    assert header[0] == "review_id"  # the BOM is not part of the first cell
    assert [c.coordinate for row in rows for c in row if c.data_type == "f"] == []
    output = {row[header.index("case_id")].value: row[header.index("output")].value for row in rows[1:]}
    assert output["web-0"] == "'" + HYPERLINK and output["web-1"] == neutralise(DDE)  # shown as text, nothing to run
    expected = {row[header.index("case_id")].value: row[header.index("expected")].value for row in rows[1:]}
    assert json.loads(expected["web-0"]) == {"intent": "billing", "priority": "high"}  # text, not split or a number
    assert "東京 🚀\nsecond line" in output["web-2"]  # UTF-8 and the line break inside the cell survive


def test_the_same_cells_unneutralised_would_be_formulas(soffice, tmp_path):
    """The control: without the apostrophe Calc does evaluate them, so the test above can fail."""
    raw = tmp_path / "raw.csv"
    with raw.open("w", encoding="utf-8-sig", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\r\n").writerows([["output"], [HYPERLINK], ["=1+1"]])
    rows = cells(convert(soffice, raw, "xlsx", tmp_path))
    assert [c.data_type for row in rows[1:] for c in row] == ["f", "f"]


def test_a_file_saved_by_calc_imports_and_gates(soffice, run_dir, cli, tmp_path):
    cli("review", "export", run_dir)
    auto = outcomes(run_dir)
    rows = label_all(read_rows(run_dir / "review_queue.csv"), lambda r: "approve" if auto[r["case_id"]] == "pass" else "reject")
    filled = tmp_path / "filled.csv"
    write_rows(filled, rows)
    saved = convert(soffice, filled, CSV_EXPORT, tmp_path)  # Calc rewrites quoting, line ends, long cells
    code, out, err = cli("review", "import", run_dir, saved)
    assert code == 0, err
    assert cli("gate", run_dir)[0] == 0
