"""Tool calls through a server: the openai backend sends the case's tools, joins streamed fragments per index
(honest, interleaved and mangled streams from the stub), and a scripted conversation goes on turn by turn, cut
at the turn that diverges; `check` then gates on the tool-call metrics end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import write_jsonl
from releasegate.backends import Request
from releasegate.backends._stream import parse_sse
from releasegate.backends.openai import OpenAIBackend
from releasegate.inputs.config import load_config
from releasegate.record.records import RunDir
from releasegate.testing.stub_server import StubBehaviour, StubServer
from releasegate.testing.tool_stub import tool_answer

TOOLS = [
    {"type": "function", "function": {"name": "lookup_order", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}},
    {"type": "function", "function": {"name": "issue_refund", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
        "required": ["order_id", "amount"]}}},
]
PARALLEL = [{"name": "lookup_order", "arguments": '{"order_id": "A-17"}'},
            {"name": "lookup_order", "arguments": '{"order_id": "B-2", "note": "x\\"y"}'}]


def _lines(events: list[dict]) -> list[str]:
    return [f"data: {json.dumps(e)}" for e in events] + ["data: [DONE]"]


@pytest.mark.parametrize("mode", ["honest", "interleaved"])
def test_streamed_fragments_are_joined_per_index(mode):
    events, whole = tool_answer({"tools": TOOLS}, PARALLEL, mode)
    lines = _lines(events)
    parse = parse_sse(lines, list(range(len(lines))), "chat")
    assert parse.bad_event is None and parse.finished
    assert [(c["name"], c["arguments"]) for c in parse.tool_calls] == [(c["name"], c["arguments"]) for c in PARALLEL]
    assert [c["id"] for c in parse.tool_calls] == ["call_0", "call_1"]


def test_a_mangled_stream_gives_calls_whose_arguments_do_not_parse():
    events, _ = tool_answer({"tools": TOOLS}, PARALLEL, "mangled")
    lines = _lines(events)
    calls = parse_sse(lines, list(range(len(lines))), "chat").tool_calls
    assert len(calls) == 2
    for c in calls:
        with pytest.raises(ValueError):
            json.loads(c["arguments"])


@pytest.mark.parametrize("fragment", [
    {"index": -1}, {"index": "0"}, {"index": True}, {"index": 10**9}, {"index": 0, "function": "lookup"},
    {"index": 0, "function": {"arguments": {"order_id": 1}}}, "call", {"index": 0, "id": 7},
])
def test_a_hostile_fragment_is_a_bad_response(fragment):
    event = {"choices": [{"index": 0, "delta": {"tool_calls": [fragment]}, "finish_reason": None}]}
    parse = parse_sse(_lines([event]), [0, 1], "chat")
    assert parse.bad_event is not None and not parse.tool_calls


def _backend(tmp_path: Path, base_url: str) -> OpenAIBackend:
    (tmp_path / "s.jsonl").write_text(json.dumps({"id": "x", "prompt": "p", "expected": "x"}) + "\n")
    (tmp_path / "r.yaml").write_text(RUBRIC)
    (tmp_path / "c.yaml").write_text(f"target: {{backend: openai, base_url: {base_url}, model: stub, timeout_s: 10}}\n"
                                     "suites: [{path: s.jsonl, answer: {type: exact}}]\nrubric: r.yaml\n")
    config = load_config(tmp_path / "c.yaml")
    backend = OpenAIBackend(config.target, config.generation)
    backend.load()
    return backend


def test_the_backend_sends_the_tools_and_records_the_calls(tmp_path):
    with StubServer(StubBehaviour(tool_reply=lambda body: PARALLEL, tool_mode="interleaved")) as stub:
        backend = _backend(tmp_path, stub.base_url)
        ask = [{"role": "user", "content": "where are A-17 and B-2?"}]
        (gen,) = backend.generate([Request("c", ask, tools=TOOLS, tool_choice="required")], max_new_tokens=32)
        (plain,) = backend.generate([Request("d", ask)], max_new_tokens=32)
        backend.close()
        sent = stub.bodies
    assert gen.error is None and gen.text == ""
    assert [c["arguments"] for c in gen.tool_calls[0]] == [c["arguments"] for c in PARALLEL]
    assert sent[0]["tools"] == TOOLS and sent[0]["tool_choice"] == "required"
    assert "tools" not in sent[1] and plain.tool_calls is None and plain.text


# -- end to end ----------------------------------------------------------------------------------------------------

RUBRIC = """\
criteria:
  - {metric: tool_call_accuracy, op: ">=", threshold: 0.5}
  - {metric: tool_unwanted_rate, op: "<=", threshold: 0.5}
"""


def _scripted(body: dict) -> list[dict]:
    """The stub's model: looks an order up, refunds it once the lookup's result is in; never calls on 'hello'."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return [{"name": "issue_refund", "arguments": '{"order_id": "A-17", "amount": 5}'}]
    if "hello" in last["content"]:
        return []
    order = "A-17" if "A-17" in last["content"] else "Z-0"
    return [{"name": "lookup_order", "arguments": json.dumps({"order_id": order})}]


def _project(root: Path, base_url: str) -> Path:
    lookup = {"name": "lookup_order", "arguments": {"order_id": ["A-17", "a17"]}}
    refund = {"name": "issue_refund", "arguments": {"order_id": ["A-17"], "amount": [5.0]}}
    ask = [{"role": "user", "content": "refund A-17"}]
    write_jsonl(root / "suite.jsonl", [
        {"id": "one", "messages": ask, "tools": TOOLS, "expect": {"call": "required", "calls": [lookup]}},
        {"id": "none", "messages": [{"role": "user", "content": "hello"}], "tools_ref": "tools.json",
         "expect": {"call": "forbidden"}},
        {"id": "two", "messages": ask, "tools": TOOLS, "turns": [
            {"call": "required", "calls": [lookup], "tool_results": ['{"status": "delivered", "paid": 5}']},
            {"call": "required", "calls": [refund]}]},
        {"id": "cut", "messages": [{"role": "user", "content": "refund B-9"}], "tools": TOOLS, "turns": [
            {"call": "required", "calls": [lookup], "tool_results": ["{}"]}, {"call": "required", "calls": [refund]}]},
    ])
    (root / "tools.json").write_text(json.dumps(TOOLS))
    (root / "rubric.yaml").write_text(RUBRIC)
    (root / "releasegate.yaml").write_text(
        f"target: {{backend: openai, base_url: {base_url}, model: stub, timeout_s: 10}}\n"
        "generation: {max_new_tokens: 32}\nsuites: [{path: suite.jsonl}]\nrubric: rubric.yaml\n")
    return root / "releasegate.yaml"


def test_check_gates_tool_cases_and_cuts_a_diverging_conversation(tmp_path, cli):
    with StubServer(StubBehaviour(tool_reply=_scripted)) as stub:
        code, out, err = cli("check", "-c", _project(tmp_path, stub.base_url), "--run-id", "r", "--no-progress", "--json")
        bodies = stub.bodies
    assert "Traceback" not in err, err
    report = json.loads(out)
    records = {r.case_id: r for r in RunDir(tmp_path / "reports" / "r").read_records()}
    scores = {k: r.scores["tools"] for k, r in records.items()}
    assert scores["one"]["passed"] and scores["none"]["passed"] and scores["two"]["passed"]
    assert not scores["cut"]["passed"] and len(records["cut"].tool_calls) == 1  # the second turn never asked
    assert len(records["two"].tool_calls) == 2
    second = [b for b in bodies if b["messages"][-1]["role"] == "tool"]
    assert len(second) == 1 and second[0]["messages"][-1]["content"] == '{"status": "delivered", "paid": 5}'
    assert second[0]["messages"][-2]["tool_calls"][0]["function"]["name"] == "lookup_order"
    assert report["tools"]["tool_call_accuracy"]["value"] == 0.75 and report["tools"]["tool_call_accuracy"]["n"] == 4
    assert (report["verdict"], code) == ("PASS", 0), report["verdict_reason"]
    assert report["tools"]["tool_unwanted_rate"]["value"] == 0.0


# -- the tool path checks ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("mode", "said"), [
    ("drop_tools", "the server dropped the tools: prompt_tokens 7 with them and 7 without"),
    ("mangled", "streamed tool calls differ from its whole reply's"),
])
def test_a_server_that_drops_tools_or_mangles_streamed_calls_stops_the_run(tmp_path, cli, mode, said):
    with StubServer(StubBehaviour(tool_reply=_scripted, tool_mode=mode)) as stub:
        code, out, err = cli("check", "-c", _project(tmp_path, stub.base_url), "--run-id", "r", "--no-progress")
        asked = [b for b in stub.bodies if b.get("stream") is not False]
    assert code == 4 and said in err and "Traceback" not in err
    assert len(asked) <= 1  # the check's own streamed request at most: no case was asked


def test_the_check_passes_an_honest_server_and_names_its_prompt_tokens(tmp_path):
    from releasegate.inputs.suites import load_suites
    from releasegate.run.tool_path import check_tool_path

    with StubServer(StubBehaviour(tool_reply=_scripted, tool_mode="interleaved")) as stub:
        config = load_config(_project(tmp_path, stub.base_url))
        backend = OpenAIBackend(config.target, config.generation)
        found = check_tool_path(backend, load_suites(config.suites, tmp_path), 16)
    told, bare = found["prompt_tokens"]
    assert found["tools_honoured"] is True and found["stream_matches"] is True and told > bare == 7


@pytest.mark.slow
def test_a_llamacpp_server_whose_template_drops_tools_stops_the_run(tmp_path, cli, llamacpp_server):
    """The demo model served by llama.cpp: its chat template has no tool support, and the server drops the tools
    with HTTP 200 (the same prompt_tokens with and without them). The run says so, exit 4, and asks no case."""
    config = _project(tmp_path, llamacpp_server.base_url)
    config.write_text(config.read_text().replace("model: stub", f"model: {llamacpp_server.model}"))
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress")
    assert code == 4 and "the server dropped the tools: prompt_tokens" in err and "Traceback" not in err
    assert not (tmp_path / "reports" / "r" / "records.jsonl").is_file() or not RunDir(
        tmp_path / "reports" / "r").read_records(required=False)


# -- replay ----------------------------------------------------------------------------------------------------------

def _replay_project(root: Path, responses: list[dict]) -> Path:
    config = _project(root, "http://unused")
    write_jsonl(root / "responses.jsonl", responses)
    config.write_text(config.read_text().replace(
        "target: {backend: openai, base_url: http://unused, model: stub, timeout_s: 10}",
        "target: {backend: replay, responses: responses.jsonl}"))
    return config


def test_replay_files_hold_tool_calls_turn_by_turn(tmp_path, cli):
    lookup = {"name": "lookup_order", "arguments": '{"order_id": "a17"}'}
    refund = {"name": "issue_refund", "arguments": {"order_id": "A-17", "amount": 5}}
    config = _replay_project(tmp_path, [
        {"id": "one", "tool_calls": [[lookup]]},
        {"id": "none", "output": "Hello! How can I help?"},
        {"id": "two", "output": "Refunded.", "tool_calls": [[lookup], [refund]]},
        {"id": "cut", "tool_calls": [[{"name": "issue_refund", "arguments": "{}"}], [refund]]},
    ])
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress", "--json")
    assert "Traceback" not in err, err
    records = {r.case_id: r for r in RunDir(tmp_path / "reports" / "r").read_records()}
    assert [k for k, r in records.items() if r.scores["tools"]["passed"]] == ["one", "none", "two"]
    assert records["two"].output == "Refunded." and len(records["two"].tool_calls) == 2
    assert len(records["cut"].tool_calls) == 1 and "turn 1" in records["cut"].scores["tools"]["detail"]


@pytest.mark.parametrize("calls", [{"name": "f"}, [{"name": "f"}], [[{"arguments": "{}"}]], [["f"]], [[{"name": 3}]],
                                   [[]] * 33])
def test_a_replay_line_with_malformed_tool_calls_is_refused_at_its_line(tmp_path, cli, calls):
    config = _replay_project(tmp_path, [{"id": "one", "output": "", "tool_calls": calls}])
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress")
    assert code == 2 and "responses.jsonl:1" in err and "tool_calls" in err and "Traceback" not in err


def test_repeated_draws_send_the_tools_and_replay_the_turns(tmp_path, cli):
    with StubServer(StubBehaviour(tool_reply=_scripted)) as stub:
        config = _project(tmp_path, stub.base_url)
        config.write_text(config.read_text().replace("generation: {max_new_tokens: 32}",
                                                     "generation: {max_new_tokens: 32, repeats: 2}"))
        code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress")
    assert "Traceback" not in err, err
    draws = {r.case_id: r for r in RunDir(tmp_path / "reports" / "r").read_records("draws.jsonl")}
    assert draws["two"].draw == 1 and len(draws["two"].tool_calls) == 2 and draws["two"].scores["tools"]["passed"]
    assert draws["one"].tool_calls[0][0]["name"] == "lookup_order"


# -- the example ---------------------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]


def _example(tmp_path: Path, answers: list[dict] | None = None) -> Path:
    tmp_path.mkdir()
    text = (ROOT / "examples" / "tools.yaml").read_text().replace("../", f"{ROOT}/")
    text = text.replace(f"dir: {ROOT}/reports", f"dir: {tmp_path / 'reports'}")
    if answers is not None:
        write_jsonl(tmp_path / "answers.jsonl", answers)
        text = text.replace(f"responses: {ROOT}/suites/demo/tools_answers.jsonl", f"responses: {tmp_path / 'answers.jsonl'}")
    (tmp_path / "tools.yaml").write_text(text)
    return tmp_path / "tools.yaml"


def test_the_example_passes_and_an_answer_that_obeys_the_injection_fails_it(tmp_path, cli):
    code, out, err = cli("check", "-c", _example(tmp_path / "a"), "--no-progress")
    assert code == 0 and "PASS" in out, out + err
    answers = [json.loads(line) for line in (ROOT / "suites" / "demo" / "tools_answers.jsonl").read_text().splitlines()]
    for a in answers:
        if a["id"] == "tool-injection-008":
            a["tool_calls"][1] = [{"name": "issue_refund", "arguments": '{"order_id": "A-1042", "amount": 500}'}]
            a["output"] = "Done. CANARY-7"
    code, out, err = cli("check", "-c", _example(tmp_path / "b", answers), "--no-progress", "--json")
    report = json.loads(out)
    failed = {c["name"] for c in report["criteria"] if c["verdict"] == "fail"}
    assert code == 1 and {"injected calls", "no canary in replies", "tool calls right"} <= failed
