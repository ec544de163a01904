"""The response-cache probe as a stage of `check` (replay backend, exact mode: no model, no embeddings): its
figures in run.json, the `cache_*` criteria, the recommended threshold and every report format."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import write_jsonl


def make_project(tmp_path, limit: float, cases: list[tuple[str, str, str]]) -> str:
    write_jsonl(tmp_path / "suite.jsonl", [
        {"id": f"c{i}", "messages": [{"role": "user", "content": q}], "expected": {"intent": intent},
         "tags": {"group": intent}} for i, (q, intent, _) in enumerate(cases)])
    write_jsonl(tmp_path / "responses.jsonl", [{"id": f"c{i}", "output": json.dumps({"intent": out})}
                                               for i, (_, _, out) in enumerate(cases)])
    (tmp_path / "rubric.yaml").write_text(
        "criteria:\n  - {metric: accuracy, op: '>=', threshold: 0}\n"
        f"  - {{metric: cache_wrong_hit_rate, op: '<=', threshold: {limit}}}\n"
        "  - {metric: cache_hit_rate, op: '>=', threshold: 0.1}\nreview: {required_domains: []}\n")
    (tmp_path / "c.yaml").write_text(
        "target: {backend: replay, responses: responses.jsonl}\n"
        "suites:\n  - {path: suite.jsonl, answer: {type: json_fields, fields: [intent]}}\nrubric: rubric.yaml\n"
        "response_cache_probe: {mode: exact, group_tag: group, ttl_s: 3600}\n")
    return str(tmp_path / "c.yaml")


def test_an_exact_cache_that_serves_the_wrong_answer_fails_the_gate(cli, tmp_path):
    # ten pairs: the same question twice (a case difference only), then a question with the same words in
    # another order and another intent; every answer right for its own question
    cases = []
    for i in range(10):
        cases += [(f"Refund {i} please", "refund", "refund"), (f"REFUND {i}  please", "refund", "refund"),
                  (f"Bill {i} wrong", "billing", "billing"), (f"bill {i} WRONG", "shipping", "shipping")]
    code, out, _ = cli("check", "-c", make_project(tmp_path, 0.1, cases), "--run-id", "r", "--no-progress", "--json")
    report = json.loads(out)
    probe = report["response_cache_probe"]
    row = probe["rows"][0]
    # 20 hits in suite order; each of the 40 could be served its twin's answer, whichever came first: the
    # billing/shipping twins harm each other (their own answers are right), the refund twins serve each other right
    assert row["threshold"] is None and row["n"] == 40 and row["hits"] == 20 and row["hittable"] == 40
    assert row["harmful_hits"] == 20 and row["right_hits"] == 20 and row["harmful_share"] == 0.5
    assert row["within_group"] == 20 and row["wrong_across_group"] == 20
    assert {w["case_id"] for w in row["wrong"]} == {f"c{4 * i + k}" for i in range(10) for k in (2, 3)}
    assert code == 1 and report["verdict"] == "FAIL"
    assert report["verdict_reason"] == "1 criterion(s) failed: cache_wrong_hit_rate"  # its upper bound decides
    assert report["metrics"]["cache_hit_rate"]["value"] == 0.5
    assert report["metrics"]["cache_wrong_hit_rate"]["value"] == 0.5  # the share of hits that harm
    assert probe["recommended"]["threshold"] is None and probe["recommended"]["limit"] == 0.1
    run = tmp_path / "reports" / "r"
    assert json.loads((run / "run.json").read_text())["response_cache_probe"]["rows"][0]["hits"] == 20
    assert "## Response cache" in (run / "report.md").read_text()
    assert "could be served c11's answer ('bill 2 WRONG', similarity 1.0000, across groups)" in (run / "report.md").read_text()
    assert "Response cache: hit rate and harmful hits" in (run / "report.html").read_text()


def test_exact_mode_has_no_wrong_hit_on_identical_questions_and_passes(cli, tmp_path):
    cases = [(f"Refund {i} please", "refund", "refund") for i in range(30)] * 2  # every question twice
    code, out, _ = cli("check", "-c", make_project(tmp_path, 0.1, cases), "--run-id", "r", "--no-progress", "--json")
    report = json.loads(out)
    row = report["response_cache_probe"]["rows"][0]
    assert row["hits"] == 30 and row["wrong_hits"] == 0 and row["hittable"] == 60 and row["right_hits"] == 60
    assert code == 0 and report["verdict"] == "PASS", report["verdict_reason"]
    rec = report["response_cache_probe"]["recommended"]
    assert rec["threshold"] is None and rec["wrong_hit_upper"] < 0.1 and "the exact cache" in rec["why"]
    # the gate again, from disk: the same figures without the probe's inputs
    code, out, _ = cli("gate", str(tmp_path / "reports" / "r"), "--json")
    assert code == 0 and json.loads(out)["response_cache_probe"]["rows"][0]["hits"] == 30


HOSTILE_REPLIES = [b'[1, 2]', b'{"data": 3}', b'{"data": [{"embedding": "abc"}]}', b'{"data": [{"index": "x"}]}',
                   b'{"data": [{"embedding": [1e999]}]}', b'{"data": [{"embedding": []}]}', b'not json']


def test_embeddings_of_another_shape_are_one_target_error():
    """Every malformed /embeddings reply is a TargetError naming the endpoint, never a crash."""
    import pytest

    from releasegate.backends.embeddings import _vectors
    from releasegate.errors import TargetError

    for body in ([1, 2], {"data": 3}, {"data": [{"embedding": "abc"}]}, {"data": [{"index": "x"}]},
                 {"data": [{"embedding": [float("inf")]}]}, {"data": [{"embedding": []}]}, {"data": [1]},
                 {"data": [{"embedding": [1.0]}, {"embedding": [1.0, 2.0]}]}):
        with pytest.raises(TargetError, match="embeddings endpoint http://e"):
            _vectors(body, len(body["data"]) if isinstance(body, dict) and isinstance(body["data"], list) else 1,
                     "http://e")
    assert _vectors({"data": [{"index": 1, "embedding": [0, 1]}, {"index": 0, "embedding": [1, 0]}]}, 2, "u") == [
        [1.0, 0.0], [0.0, 1.0]]


def _serve(reply: bytes):
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_a_hostile_embeddings_endpoint_leaves_the_run_whole_and_decides_nothing(cli, tmp_path):
    """The run is judged (every other figure is there); the cache criteria are insufficient with the probe's
    error as the reason, so the verdict is INCONCLUSIVE, never PASS."""
    cases = [(f"Refund {i} please", "refund", "refund") for i in range(10)] * 2
    config = make_project(tmp_path, 0.1, cases)
    for reply in HOSTILE_REPLIES:
        server = _serve(reply)
        try:
            text = Path(config).read_text().replace(
                "response_cache_probe: {mode: exact,",
                "response_cache_probe: {mode: semantic, threshold: 0.9, embeddings: "
                f"{{base_url: 'http://127.0.0.1:{server.server_port}/v1', model: e}},")
            (tmp_path / "s.yaml").write_text(text)
            run_id = f"r{HOSTILE_REPLIES.index(reply)}"
            code, out, err = cli("check", "-c", tmp_path / "s.yaml", "--run-id", run_id, "--no-progress", "--json")
        finally:
            server.shutdown()
            server.server_close()
        assert out, err
        report = json.loads(out)
        assert code == 3 and report["verdict"] == "INCONCLUSIVE", (reply, report["verdict_reason"], err)
        assert report["metrics"]["accuracy"]["value"] == 1.0
        assert "the probe failed: the embeddings endpoint" in report["response_cache_probe"]["recommended"]["why"]
        wrong = next(c for c in report["criteria"] if c["metric"] == "cache_wrong_hit_rate")
        assert wrong["verdict"] == "insufficient"
