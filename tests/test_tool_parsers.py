"""Tool calls read from generated text by the chat template's family (Hermes/Qwen, Llama 3, Mistral), hostile
text included, and the in-process path: the demo model's template given tools renders them, one without tool
support is refused, and the calls in its answer are read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from releasegate.backends import Generation, Request
from releasegate.backends.tool_parsers import message_calls, parse_calls, read_calls, rendered_prompt, template_family
from releasegate.errors import TargetError

ROOT = Path(__file__).resolve().parents[1]
TOOLS = [{"type": "function", "function": {"name": "lookup_order", "parameters": {
    "type": "object", "properties": {"order_id": {"type": "string"}}}}}]


def _args(call: dict) -> dict:
    return json.loads(call["arguments"])


def test_hermes_qwen_tool_call_tags():
    text = ('Let me check.\n<tool_call>\n{"name": "lookup_order", "arguments": {"order_id": "A-17"}}\n</tool_call>\n'
            '<tool_call>{"name": "issue_refund", "arguments": {"order_id": "A-17", "amount": 5}}</tool_call>')
    left, calls = parse_calls(text, "hermes")
    assert left == "Let me check."
    assert [c["name"] for c in calls] == ["lookup_order", "issue_refund"] and _args(calls[1])["amount"] == 5
    # hostile: an unclosed tag, broken JSON, a name that is not a string: still calls, whose arguments fail
    _, broken = parse_calls('<tool_call>{"name": "lookup_order", "arguments": {"order_id": "A', "hermes")
    assert broken[0]["name"] == "lookup_order"
    with pytest.raises(ValueError):
        json.loads(broken[0]["arguments"])
    _, odd = parse_calls('<tool_call>{"name": 7, "arguments": {}}</tool_call>', "hermes")
    assert odd[0]["name"] == ""
    assert parse_calls("no call here <tool_", "hermes") == ("no call here <tool_", [])


def test_llama3_json_calls():
    text = '<|python_tag|>{"name": "lookup_order", "parameters": {"order_id": "A;17"}}; {"name": "x", "parameters": {}}<|eom_id|>'
    left, calls = parse_calls(text, "llama3")
    assert left == "" and [c["name"] for c in calls] == ["lookup_order", "x"]
    assert _args(calls[0]) == {"order_id": "A;17"}  # a ';' inside a string splits nothing
    assert parse_calls("The order {is} late.", "llama3") == ("The order {is} late.", [])
    _, hostile = parse_calls('{"name": "lookup_order", "parameters": {"order_id": "A\\"}', "llama3")
    assert hostile[0]["name"] == "lookup_order"
    with pytest.raises(ValueError):
        json.loads(hostile[0]["arguments"])


def test_mistral_tool_calls_token():
    left, calls = parse_calls('[TOOL_CALLS][{"name": "lookup_order", "arguments": {"order_id": "A-17"}}]</s>', "mistral")
    assert left == "" and calls[0]["name"] == "lookup_order" and _args(calls[0]) == {"order_id": "A-17"}
    _, newer = parse_calls('[TOOL_CALLS]lookup_order[ARGS]{"order_id": "A-17"}[TOOL_CALLS]x[ARGS]{}', "mistral")
    assert [c["name"] for c in newer] == ["lookup_order", "x"]
    _, broken = parse_calls('[TOOL_CALLS][{"name": "lookup_order", "arguments": {"order', "mistral")
    assert len(broken) == 1 and broken[0]["name"] == "lookup_order"
    assert parse_calls("plain answer", "mistral") == ("plain answer", [])


def test_template_families_and_whole_replies():
    assert template_family("{% if tools %}<tool_call>{% endif %}") == "hermes"
    assert template_family("[AVAILABLE_TOOLS][TOOL_CALLS]") == "mistral"
    assert template_family("<|start_header_id|>ipython<|python_tag|>") == "llama3"
    assert template_family("{{ messages }}") is None and template_family(None) is None
    whole = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "lookup_order", "arguments": {"order_id": "A"}}}, "junk"]}
    assert message_calls(whole) == [{"id": "c1", "name": "lookup_order", "arguments": '{"order_id": "A"}'}]
    assert message_calls("junk") == [] and message_calls({"tool_calls": {"x": 1}}) == []


HERMES_TEMPLATE = (
    "{% if tools %}<|system|>Tools: {% for t in tools %}{{ t['function']['name'] }} {% endfor %}"
    "Call one as <tool_call>{...}</tool_call>.<|end|>{% endif %}"
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] or '' }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}")


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(ROOT / "models" / "demo" / "base")


@pytest.mark.slow
def test_a_template_that_drops_tools_is_refused_in_process(tokenizer):
    ask = Request("c", [{"role": "user", "content": "where is A-17?"}], tools=TOOLS)
    with pytest.raises(TargetError, match="renders no tools"):
        rendered_prompt(tokenizer, ask)  # the demo base's own template has no tool support


@pytest.mark.slow
def test_a_template_with_tools_renders_them_and_the_answer_calls_are_read(tokenizer):
    tok = tokenizer
    old = tok.chat_template
    tok.chat_template = HERMES_TEMPLATE
    try:
        ask = Request("c", [{"role": "user", "content": "where is A-17?"}], tools=TOOLS)
        assert "lookup_order" in rendered_prompt(tok, ask)
        said = '<tool_call>{"name": "lookup_order", "arguments": {"order_id": "A-17"}}</tool_call>'
        gen = Generation(tok.decode(tok(said)["input_ids"], skip_special_tokens=True), output_ids=tok(said)["input_ids"])
        read_calls(tok, ask, gen)
        assert gen.tool_calls and [c["name"] for c in gen.tool_calls[0]] == ["lookup_order"]
        plain = Generation("fine", output_ids=tok("fine")["input_ids"])
        read_calls(tok, Request("d", ask.messages), plain)
        assert plain.tool_calls is None  # no tools offered: nothing read
    finally:
        tok.chat_template = old


@pytest.mark.slow
def test_the_hf_backend_renders_tools_through_the_template(tmp_path):
    """The demo model, its template given tool support: the prompt with tools is longer, and every answer to a
    tool case carries its (here: no) calls; with the template that drops tools the run is refused."""
    from releasegate.backends.hf import HFBackend
    from releasegate.inputs.target import TargetConfig

    model = tmp_path / "base"
    shutil.copytree(ROOT / "models" / "demo" / "base", model)
    (model / "chat_template.jinja").write_text(HERMES_TEMPLATE)
    backend = HFBackend(TargetConfig(backend="hf", base=str(model), device="cpu"), {})
    backend.load()
    ask = [{"role": "user", "content": "where is A-17?"}]
    assert len(backend.prompt_ids(Request("c", ask, tools=TOOLS))) > len(backend.prompt_ids(Request("c", ask)))
    (gen,) = backend.generate([Request("c", ask, tools=TOOLS)], max_new_tokens=8)
    assert gen.error is None and gen.tool_calls is not None and len(gen.tool_calls) == 1
    backend.close()
