"""Human tables without a terminal (a CI log): rich then takes its width from COLUMNS, else 80. At COLUMNS=80 no
name or number is cut to '…' or broken across lines: every criterion, metric, slice and variant name and every
formatted number of the JSON output appears whole, on its row's line (or the line under a name too long to share
one), and the reasons read as sentences, not as a narrow strip. At COLUMNS=200 the tables stay whole and bordered,
one line per row."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from rich.console import Console

from conftest import run_subprocess, write_jsonl
from releasegate.report import format_value
from releasegate.report.formatting import format_threshold
from releasegate.report.matrix import matrix_table

NARROW, WIDE = {"COLUMNS": "80"}, {"COLUMNS": "200"}
LONG_NAME = "accuracy_of_the_customer_support_intent_and_priority_fields"
RUBRIC = f"""\
name: long names
criteria:
  - {{name: {LONG_NAME}, metric: accuracy, op: ">=", threshold: 0.9}}
  - {{metric: accuracy, op: ">=", threshold: 0.95, confidence: 0.95, slice: {{domain: customer_support}}}}
  - {{name: format compliance of escalated tickets, metric: format_compliance, op: ">=", threshold: 0.99, min_samples: 50}}
  - {{metric: forbidden_rate, op: "<=", threshold: 0.0}}
  - {{metric: ttft_ms_p95, op: "<=", threshold: 0.000012345}}
forbidden: forbidden.yaml
"""
RIGHT = {"intent": "billing", "priority": "high"}
WRONG = {"intent": "shipping", "priority": "low"}
DOMAINS = ("customer_support", "international_shipping_and_customs_escalations")


def _project(project: Path, wrong: int, n: int = 30) -> Path:
    """The project with n cases in two domains (one with a long name), the first `wrong` answered wrong."""
    suite = [{"id": f"c{i:02d}", "prompt": f"ticket {i}", "expected": RIGHT, "tags": {"domain": DOMAINS[i % 2]}}
             for i in range(n)]
    write_jsonl(project / "suites/example.jsonl", suite)
    write_jsonl(project / "responses.jsonl",
                [{"id": f"c{i:02d}", "output": json.dumps(WRONG if i < wrong else RIGHT)} for i in range(n)])
    (project / "rubrics/example.yaml").write_text(RUBRIC)
    return project / "releasegate.yaml"


def _human(args, env, code: int | tuple[int, ...]) -> tuple[dict, str]:
    """Run with --json, stdout and stderr piped: the JSON, and the human text (on stderr)."""
    proc = run_subprocess(*args, "--json", env=env)
    assert proc.returncode in ((code,) if isinstance(code, int) else code), proc.stderr
    return json.loads(proc.stdout), proc.stderr


def _card(lines: list[str], n: int, starts: list[int]) -> str:
    """The card of the row named on line n: its indented 'column: value' lines up to the next row's name."""
    end = next((m for m in starts if m > n), len(lines))
    return "\n".join(line for line in lines[n + 1:end] if line.startswith("  ") and ": " in line)


def _assert_whole(text: str, rows: dict[str, list[str]], width: int | None = None) -> None:
    """No '…' anywhere; each row's name whole, and every cell of it whole, on the name's line or the next (a narrow
    table puts a long name on a line of its own, its cells under it), or, where the table is shown as cards (a
    row's name, then one 'column: value' line a cell), in its own card."""
    assert "…" not in text, text
    lines = text.splitlines() + [""]
    starts = sorted(n for n, line in enumerate(lines) for name in rows if line.strip().startswith(name))
    for name, cells in rows.items():
        at = [n for n, line in enumerate(lines) if name in line]
        assert at, f"{name!r} not whole in:\n{text}"
        for cell in cells:
            assert any(cell in lines[n] or cell in lines[n + 1] or cell in _card(lines, n, starts) for n in at), \
                f"{cell!r} of {name!r} not in:\n{text}"
    if width is not None:
        # one-line statements and a path wrapped onto a line of its own (one word no width can break) may run long
        table = [line for line in lines if not line.startswith(("human review:", "verdict:", "requests:", "run record:", "warning:"))
                 and " " in line.strip().rstrip(",)")]
        assert all(len(line.rstrip()) <= width for line in table), text


def _words(text: str) -> str:
    return " ".join(text.split())


def _criteria_rows(report: dict) -> dict[str, list[str]]:
    return {c["name"]: [format_value(c["value"]), format_threshold(c), str(c["n"]), c["verdict"]]
            for c in report["criteria"]}


def test_check_and_gate_tables_fit_80_columns_and_stay_whole_at_200(project):
    config = _project(project, wrong=9)
    report, text = _human(["check", "-c", config, "--run-id", "run", "--no-progress"], NARROW, 1)
    names = [c["name"] for c in report["criteria"]]
    assert LONG_NAME in names and "accuracy[domain=customer_support]" in names
    assert {c["verdict"] for c in report["criteria"]} == {"pass", "fail", "insufficient"}
    _assert_whole(text, _criteria_rows(report), width=80)
    for c in report["criteria"]:  # the reason reads as a sentence, not folded into a narrow column
        assert not c["reason"] or _words(c["reason"]) in _words(text), (c["reason"], text)

    run = project / "reports" / "run"
    for env in (NARROW, WIDE):
        again, text = _human(["gate", run], env, 1)
        assert again["criteria"] == report["criteria"]
        _assert_whole(text, _criteria_rows(again), width=int(env["COLUMNS"]))
    assert "┃ criterion" in text  # at 200: the bordered table, every row on one line with its reason
    for c in again["criteria"]:
        assert any(c["name"] in line and format_value(c["value"]) in line and c["reason"] in line
                   for line in text.splitlines()), text


def test_compare_table_fits_80_columns(project, cli):
    config = _project(project, wrong=0)
    assert cli("check", "-c", config, "--run-id", "base", "--no-progress")[0] in (1, 3)
    _project(project, wrong=20)
    assert cli("check", "-c", config, "--run-id", "cand", "--no-progress")[0] == 1
    args = ["compare", project / "reports/base", project / "reports/cand"]
    for env in (NARROW, WIDE):
        result, text = _human(args, env, 1)
        rows = {
            r["metric"]: [f"{r['baseline']:.4g}", f"{r['candidate']:.4g}", f"{r['delta']:+.4g}", f"{r['margin']:.3g}",
                          f"[{r['interval'][0]:+.3g}, {r['interval'][1]:+.3g}]" if r["interval"] else "—",
                          f"{r['p_value']:.3g}" if r["p_value"] is not None else "—", r["verdict"]]
            for r in result["rows"]
        }
        assert "accuracy" in rows and "e-" in rows["accuracy"][5]  # a p-value in e-notation: 1.91e-06
        _assert_whole(text, rows, width=int(env["COLUMNS"]))
    assert any(all(cell in line for cell in rows["accuracy"]) for line in text.splitlines()), text  # 200: one line


def test_matrix_table_fits_80_columns(monkeypatch):
    rows = [
        {"variant": v, "batch_size": b, "accuracy": acc, "accuracy_delta": d, "accuracy_p": p, "identical_share": s,
         "ttft_ms_p95_ratio": r, "tpot_ms_p95_ratio": r and r * 1.5, "cost_per_1m_output_tokens_ratio": r,
         "quality_verdict": q, "verdict": "FAIL" if q == "fail" else "PASS", "verdict_reason": ""}
        for v, b, acc, d, p, s, r, q in [
            ("adapter", 8, 0.8333, None, None, 1.0, None, "pass"),
            ("merged", 8, 0.8333, 0.0, 1.0, 0.98, 1.0123, "pass"),
            ("int8", 16, 0.7667, -0.06667, 1.73e-05, 0.5, 12.3456, "insufficient"),
            ("speculative", 8, 0.8123, 0.0123, 0.0313, 0.3333, 0.5, "fail"),
        ]
    ]
    expected = {
        r["variant"]: [str(r["batch_size"]), format_value(r["accuracy"]), format_value(r["accuracy_p"]),
                       "—" if r["accuracy_delta"] is None else f"{r['accuracy_delta']:+.3f}", f"{r['identical_share']:.0%}",
                       *("—" if x is None else f"{x:.2f}×" for x in (r["ttft_ms_p95_ratio"], r["tpot_ms_p95_ratio"])),
                       r["quality_verdict"], r["verdict"]]
        for r in rows
    }
    for width in (80, 200):
        monkeypatch.setenv("COLUMNS", str(width))
        buf = io.StringIO()
        console = Console(file=buf, highlight=False)  # no terminal: the width comes from COLUMNS
        assert console.width == width
        console.print(matrix_table(rows))
        _assert_whole(buf.getvalue(), expected, width=width)
        assert "1.73e-05" in buf.getvalue()


def test_review_status_table_fits_80_columns(project, cli):
    config = _project(project, wrong=3, n=12)
    assert cli("check", "-c", config, "--run-id", "run", "--no-progress")[0] == 1
    run = project / "reports" / "run"
    assert cli("review", "export", run)[0] == 0
    with (run / "review_queue.csv").open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh)
        columns, queue = reader.fieldnames, list(reader)
    for i, row in enumerate(queue):  # approve most, reject some: approval and kappa get values
        row.update(label="reject" if i % 3 == 0 else "approve", reason="checked", reviewer="alice")
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(queue)
    (project / "filled.csv").write_bytes(buf.getvalue().encode("utf-8-sig"))
    assert cli("review", "import", run, project / "filled.csv")[0] == 0

    for env in (NARROW, WIDE):
        summary, text = _human(["review", "status", run], env, 0)
        assert f"domain={DOMAINS[1]}" in summary
        from releasegate.report.review import kappa_cell

        rows = {name: [row["status"], *(format_value(row[c]) for c in
                                         ("cases", "needed", "reviewed", "rejected", "approval")), kappa_cell(row)]
                for name, row in summary.items()}
        assert any(v[5] != "—" for v in rows.values()), summary  # some approval was measured
        _assert_whole(text, rows, width=int(env["COLUMNS"]))
