"""Kappa is never shown alone: wherever a report, a table or a line shows it, the raw agreement and the prevalence
that explain it stand beside it ("kappa 0.00 at 94.8% agreement, 97% of labels 'pass'")."""

from __future__ import annotations

import json

from releasegate.review.agreement import kappa_figures, kappa_words, reviewer_agreement
from test_review import exported, review_project, run_dir, write_rows  # noqa: F401  (the fixtures)


def test_high_agreement_with_one_label_nearly_everywhere_is_kappa_zero_and_says_why():
    # 58 cases: both say pass on 55, the automatic verdict alone says fail on 2, the reviewer alone rejects 1
    pairs = [(True, True)] * 55 + [(False, True)] * 2 + [(True, False)]
    figures = kappa_figures(pairs)
    assert round(figures["kappa"], 2) == -0.02 and round(figures["kappa_agreement"], 3) == 0.948
    words = kappa_words(**{k.replace("kappa_", ""): v for k, v in figures.items()})
    assert words == "kappa -0.02 at 94.8% agreement, 97% of labels 'pass'"
    assert kappa_words(0.5, 0.8, 0.1, yes="approve", no="reject", short=True) == "0.50 (80.0% agree, 90% reject)"
    assert kappa_words(None, 1.0, 1.0) == "kappa undefined at 100.0% agreement, 100% of labels 'pass'"
    assert kappa_words(0.42, None, None) == "kappa 0.42"  # a report from before: nothing made up
    assert kappa_figures([]) == {"kappa": None, "kappa_agreement": None, "kappa_prevalence": None}
    both = reviewer_agreement([("approve", "approve")] * 9 + [("approve", "reject")])
    assert both["prevalence"] == 0.95


def test_every_place_that_shows_the_review_kappa_shows_agreement_and_prevalence(run_dir, cli, exported):  # noqa: F811
    path = run_dir.parent / "all.csv"
    write_rows(path, exported)  # every row approved: the automatic verdict's few failures are all the disagreement
    code, out, err = cli("review", "import", run_dir, path)
    assert code == 0, err
    row = json.loads(cli("review", "status", run_dir, "--json")[1])
    row = row["slices"]["all"] if "slices" in row else row["rows"]["all"] if "rows" in row else row["all"]
    assert row["kappa_agreement"] is not None and row["kappa_prevalence"] > 0.5
    cell = f"{row['kappa']:.2f} ({row['kappa_agreement']:.1%} agree, {row['kappa_prevalence']:.0%} pass)"
    code, out, err = cli("review", "status", run_dir)
    assert code == 0 and cell.replace(" ", "") in out.replace(" ", "").replace("\n", ""), out  # the table's cell
    assert cli("gate", run_dir)[0] == 0
    md, html = (run_dir / "report.md").read_text(), (run_dir / "report.html").read_text()
    assert cell in md and cell in html
    assert f"kappa {row['kappa']:.2f} at {row['kappa_agreement']:.1%} agreement, " in md  # the headline's words
    report = json.loads((run_dir / "report.json").read_text())
    assert report["review"]["all"]["kappa_prevalence"] == row["kappa_prevalence"]


def test_the_judge_calibration_table_and_its_min_kappa_reason_say_agreement_and_prevalence():
    from releasegate.record.report_sections import JudgeCalibration, JudgeSection
    from releasegate.report.judge_section import calibration_table

    row = JudgeCalibration(labels=20, agree=19, agreement=0.95, agreement_sample=0.95, agreement_lower=0.8,
                           kappa=0.0, kappa_prevalence=0.975, calibrated=False)
    columns, rows = calibration_table(JudgeSection(calibration={"tone": row}))
    assert rows[0][columns.index("kappa")] == "0.00 (95.0% agree, 98% pass)"
