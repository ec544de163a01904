"""Unknown is unknown: cost from token counts nobody counted, and TPOT/ITL from a stream read in batches, decide
nothing; API-priced cost is never undone by a late client. Hand-built run directories judged by `gate --json`,
as in the false-PASS corpus, then the same reproductions end to end through `check` against the stub server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import write_jsonl
from releasegate.cli import main
from releasegate.decision.verdicts import EXIT_CODES
from releasegate.record.records import CaseRecord, Tokens
from releasegate.testing import StubBehaviour, StubServer
from test_false_pass import Run, lenient, ok

API = {"mode": "api", "input_usd_per_1m": 15.0, "output_usd_per_1m": 60.0}
SELF_HOSTED = {"mode": "self_hosted", "hourly_usd": 2.0}
SATURATED = {"client": "lean", "loop_lag_ms": {"p50": 40.0, "p99": 400.0, "max": 500.0, "n": 100},
             "itl_batched_share": 0.0, "itl_gaps": 900}
BATCHED = {"client": "lean", "loop_lag_ms": {"p50": 0.1, "p99": 0.5, "max": 1.0, "n": 100},
           "itl_batched_share": 0.9, "itl_gaps": 900}
CALM = {**BATCHED, "itl_batched_share": 0.02}


def counted(i: int, *, source: str, prompt: int | None, output: int | None = 10, tpot: float = 5.0,
            itl: list[float] | None = None) -> dict:
    """A healthy record whose token counts came from `source` (prompt None: not counted)."""
    row = CaseRecord.model_validate(ok(i, itl=itl))
    row = row.model_copy(update={"tokens": Tokens(input=prompt, output=output, source=source),
                                 "timing": row.timing.model_copy(update={"tpot_ms": tpot})})
    return row.model_dump(mode="json")


def cost_rubric(metric: str = "cost_per_1m_output_tokens", threshold: float = 100.0) -> dict:
    return lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.8},
                             {"metric": metric, "op": "<=", "threshold": threshold}])


def tpot_rubric(metric: str = "tpot_ms_p95", **extra) -> dict:
    return lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.8},
                             {"metric": metric, "op": "<=", "threshold": 50}], **extra)


# (run, its cost config, the verdict, the verdict of the cost/TPOT criterion)
CORPUS: dict[str, tuple[Run, dict | None, str, str]] = {
    # the server sent no usage and no tokenizer counted: 600 prompt tokens each were priced at 0 ($15, PASS)
    "api cost, no usage, no tokenizer": (
        Run([counted(i, source="chunks", prompt=None) for i in range(100)], rubric=cost_rubric()), API,
        "INCONCLUSIVE", "insufficient"),
    "api cost total, no usage, no tokenizer": (
        Run([counted(i, source="chunks", prompt=None) for i in range(100)], rubric=cost_rubric("cost_usd_total", 1.0)),
        API, "INCONCLUSIVE", "insufficient"),
    # a usage report with no prompt tokens (and nothing else to count them) is no better
    "api cost, usage without prompt tokens": (
        Run([counted(i, source="usage", prompt=None) for i in range(100)], rubric=cost_rubric()), API,
        "INCONCLUSIVE", "insufficient"),
    # target.tokenizer counted both sides: 600 x $15 + 10 x $60 per 10 output tokens = $960 per 1M: FAIL
    "api cost, no usage, tokenizer counts": (
        Run([counted(i, source="tokenizer", prompt=600) for i in range(100)], rubric=cost_rubric()), API,
        "FAIL", "fail"),
    "api cost, no usage, tokenizer counts, cheap enough": (
        Run([counted(i, source="tokenizer", prompt=20) for i in range(100)], rubric=cost_rubric()), API,
        "PASS", "pass"),
    # self-hosted cost per token divides by a throughput that counted one token per streamed chunk
    "self-hosted cost per token, chunk counts": (
        Run([counted(i, source="chunks", prompt=None) for i in range(100)], rubric=cost_rubric(threshold=1e6)),
        SELF_HOSTED, "INCONCLUSIVE", "insufficient"),
    # a saturated client does not touch a price table: the failing API cost stands
    "saturated client, failing api cost": (
        Run([counted(i, source="usage", prompt=600) for i in range(100)], rubric=cost_rubric(), client=SATURATED), API,
        "FAIL", "fail"),
    # ...while self-hosted cost per token divides by a throughput the late client may have lowered
    "saturated client, failing self-hosted cost": (
        Run([counted(i, source="usage", prompt=600) for i in range(100)], rubric=cost_rubric(threshold=1.0),
            client=SATURATED), SELF_HOSTED, "INCONCLUSIVE", "insufficient"),
    # a buffered stream: every token arrived together, TPOT near 0 "passes" any bar
    "buffered stream, tpot": (
        Run([counted(i, source="usage", prompt=5, tpot=0.01) for i in range(100)], rubric=tpot_rubric(), client=BATCHED),
        None, "INCONCLUSIVE", "insufficient"),
    "buffered stream, itl": (
        Run([counted(i, source="usage", prompt=5, tpot=0.01, itl=[0.01] * 9) for i in range(100)],
            rubric=tpot_rubric("itl_ms_p99"), client=BATCHED), None, "INCONCLUSIVE", "insufficient"),
    "buffered stream, limit raised": (
        Run([counted(i, source="usage", prompt=5, tpot=0.01) for i in range(100)],
            rubric=tpot_rubric(max_itl_batched_share=0.95), client=BATCHED), None, "PASS", "pass"),
    "stream read as sent, tpot": (
        Run([counted(i, source="usage", prompt=5) for i in range(100)], rubric=tpot_rubric(), client=CALM), None,
        "PASS", "pass"),
}


def build(run: Run, cost: dict | None, root: Path) -> Path:
    path = run.build(root)
    if cost is not None:  # run.json `cost`, as `check` writes it from the config's cost section
        info = json.loads((path / "run.json").read_text())
        (path / "run.json").write_text(json.dumps({**info, "cost": cost}))
    return path


@pytest.mark.parametrize("name", list(CORPUS))
def test_corpus_verdicts(name, tmp_path, capsys):
    run, cost, expected, criterion = CORPUS[name]
    path = build(run, cost, tmp_path)
    code = main(["gate", str(path), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == expected, (name, report["verdict"], report["verdict_reason"])
    assert code == EXIT_CODES[expected] == report["exit_code"]
    decided = report["criteria"][1]
    assert decided["verdict"] == criterion, (name, decided)


def test_unknown_cost_and_batched_stream_say_why(tmp_path, capsys):
    for name, words in (("api cost, no usage, no tokenizer", ("100 request(s) with no input token count",
                                                              "not priced at 0", "target.tokenizer")),
                        ("buffered stream, tpot", ("stream read in batches", "90%", "limit 50%"))):
        run, cost, _, _ = CORPUS[name]
        main(["gate", str(build(run, cost, tmp_path / name.replace(" ", "_"))), "--json"])
        criterion = json.loads(capsys.readouterr().out)["criteria"][1]
        said = criterion["reason"] + " " + criterion.get("note", "")
        assert all(w in said for w in words), (name, criterion)


def test_the_report_says_where_token_counts_came_from(tmp_path, capsys):
    run, cost, _, _ = CORPUS["api cost, no usage, tokenizer counts"]
    main(["gate", str(build(run, cost, tmp_path)), "--json"])
    metric = json.loads(capsys.readouterr().out)["metrics"]["cost_per_1m_output_tokens"]
    assert metric["value"] == pytest.approx((600 * 15 + 10 * 60) / 10)
    assert "counted by target.tokenizer 100" in metric["note"]


# -- end to end, through `check` against the stub server ---------------------------------------------------------

def stub_project(root: Path, base_url: str, *, rubric: str, extra: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    write_jsonl(root / "suite.jsonl", [
        {"id": f"c{i}", "messages": [{"role": "user", "content": " ".join(["tok"] * 40)}], "expected": "tok"}
        for i in range(6)])
    (root / "rubric.yaml").write_text("max_client_lag_share: 10\nreview: {required_domains: []}\ncriteria:\n"
                                      "  - {metric: error_rate, op: '<=', threshold: 0.0}\n" + rubric)
    (root / "releasegate.yaml").write_text(
        f"target:\n  backend: openai\n  base_url: {base_url}\n  model: stub\n  client: lean\n  concurrency: 3\n"
        f"  retries: 0\n  timeout_s: 10\n{extra}generation: {{max_new_tokens: 16}}\n"
        "suites: [{path: suite.jsonl, answer: {type: regex, pattern: tok}}]\nrubric: rubric.yaml\n"
        "cost: {mode: api, input_usd_per_1m: 15, output_usd_per_1m: 60}\n")
    return root / "releasegate.yaml"


def check(cli, config: Path) -> tuple[int, dict]:
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress", "--json")
    assert out.strip(), err
    return code, json.loads(out)


def word_tokenizer(path: Path) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"tok": 0, "[UNK]": 1}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    path.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(path))
    return path


def test_no_usage_api_cost_end_to_end(tmp_path, cli):
    rubric = "  - {metric: cost_per_1m_output_tokens, op: '<=', threshold: 100}\n"
    with StubServer(StubBehaviour(ttft_ms=2, itl_ms=2, tokens=4, send_usage=False)) as stub:
        blind, blind_report = check(cli, stub_project(tmp_path / "blind", stub.base_url, rubric=rubric))
        word_tokenizer(tmp_path / "counted" / "tokenizer.json")
        seen, seen_report = check(cli, stub_project(tmp_path / "counted", stub.base_url, rubric=rubric,
                                                    extra="  tokenizer: tokenizer.json\n"))
    assert blind == 3 and blind_report["verdict"] == "INCONCLUSIVE"
    assert blind_report["metrics"]["cost_per_1m_output_tokens"]["value"] is None
    # the tokenizer counts the 40-word prompt: 40 x $15 + 4 x $60 per 4 output tokens = $210 per 1M, over $100
    assert seen == 1 and seen_report["verdict"] == "FAIL"
    cost = seen_report["metrics"]["cost_per_1m_output_tokens"]
    assert cost["value"] == pytest.approx((40 * 15 + 4 * 60) / 4) and "target.tokenizer 6" in cost["note"]


def test_buffered_stream_tpot_end_to_end(tmp_path, cli):
    rubric = "  - {metric: tpot_ms_p95, op: '<=', threshold: 50}\n"
    with StubServer(StubBehaviour(ttft_ms=2, itl_ms=0, tokens=8)) as stub:  # every chunk written back to back
        code, report = check(cli, stub_project(tmp_path, stub.base_url, rubric=rubric))
    tpot = next(c for c in report["criteria"] if c["metric"] == "tpot_ms_p95")
    assert code == 3 and report["verdict"] == "INCONCLUSIVE"
    assert tpot["verdict"] == "insufficient" and "stream read in batches" in tpot["reason"]
