"""The demo model exported to GGUF and served by a real llama.cpp server answers like the HF model.

Plain urllib HTTP, independent of releasegate's own backends: health and Prometheus metrics, the chat
template and tokenization, greedy answers against transformers + peft with the LoRA scale chosen per request,
streaming usage.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

import llamacpp
from llamacpp import get, post_json, stream_json

pytestmark = pytest.mark.slow

MAX_TOKENS = 32
PER_SUITE = 60  # cases sampled from each demo suite
MIN_IDENTICAL = 0.95


@pytest.fixture(scope="module")
def cases():
    return llamacpp.load_cases(PER_SUITE)


@pytest.fixture(scope="module")
def hf():
    """HF tokenizer and fp32 base model, 1 thread (the reference the server must reproduce)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(llamacpp.DEMO / "base")
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(llamacpp.DEMO / "base", dtype=torch.float32).eval()
    return tokenizer, model


def hf_prompt_ids(tokenizer, messages) -> list[int]:
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def hf_greedy(tokenizer, model, cases, batch_size=16) -> list[tuple[str, int]]:
    """(text, output tokens without EOS) per case: left-padded batched greedy generate."""
    import torch

    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    prompts = [hf_prompt_ids(tokenizer, c["messages"]) for c in cases]
    out = []
    for i in range(0, len(prompts), batch_size):
        batch = prompts[i : i + batch_size]
        width = max(map(len, batch))
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in batch])
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in batch])
        with torch.inference_mode():
            gen = model.generate(
                input_ids=ids, attention_mask=mask, max_new_tokens=MAX_TOKENS, do_sample=False, num_beams=1,
                pad_token_id=pad, eos_token_id=eos,
            )
        for row in gen[:, width:].tolist():
            n = row.index(eos) if eos in row else len(row)
            out.append((tokenizer.decode(row[:n], skip_special_tokens=True), n))
    return out


@pytest.fixture(scope="module")
def hf_outputs(hf, cases):
    """HF greedy answers of the base model (scale 0) and of base + `good` adapter (scale 1)."""
    from peft import PeftModel

    tokenizer, model = hf
    base = hf_greedy(tokenizer, model, cases)
    adapted = PeftModel.from_pretrained(model, str(llamacpp.DEMO / "adapters" / "good")).eval()
    return {0.0: base, 1.0: hf_greedy(tokenizer, adapted, cases)}


def chat(server, messages, scale, **extra) -> dict:
    return post_json(server.base_url + "/chat/completions", {
        "model": server.model, "messages": messages, "temperature": 0, "max_tokens": MAX_TOKENS,
        "lora": [{"id": 0, "scale": scale}], **extra,
    })


def test_health_models_and_metrics(llamacpp_server):
    status, body = get(llamacpp_server.root_url + "/health")
    assert status == 200 and '"ok"' in body
    status, body = get(llamacpp_server.base_url + "/models")
    assert status == 200 and llamacpp_server.model in [m["id"] for m in json.loads(body)["data"]]
    chat(llamacpp_server, [{"role": "user", "content": "Where is my order?"}], 1.0)  # so counters are > 0
    status, metrics = get(llamacpp_server.root_url + "/metrics")
    assert status == 200
    series = {line.split()[0]: float(line.split()[1]) for line in metrics.splitlines() if line.startswith("llamacpp:")}
    assert series["llamacpp:prompt_tokens_total"] > 0 and series["llamacpp:tokens_predicted_total"] > 0
    assert "llamacpp:requests_processing" in series


def test_lora_adapter_is_loaded(llamacpp_server):
    status, body = get(llamacpp_server.root_url + "/lora-adapters")
    assert status == 200
    adapters = json.loads(body)
    assert [a["id"] for a in adapters] == [0] and adapters[0]["path"].endswith("demo-good.gguf")


def test_server_sees_the_hf_chat_template_tokens(llamacpp_server, hf, cases):
    """llama.cpp renders the GGUF's chat template to the same text, and tokenizes it to the same ids, as HF."""
    tokenizer, _ = hf
    for case in cases[:: max(1, len(cases) // 10)]:
        messages = case["messages"]
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        rendered = post_json(llamacpp_server.root_url + "/apply-template", {"messages": messages})["prompt"]
        assert rendered == text
        ids = post_json(llamacpp_server.root_url + "/tokenize",
                        {"content": rendered, "add_special": True, "parse_special": True})["tokens"]
        assert ids == hf_prompt_ids(tokenizer, messages)
        assert chat(llamacpp_server, messages, 0.0, max_tokens=1)["usage"]["prompt_tokens"] == len(ids)


@pytest.fixture(scope="module")
def served(llamacpp_server, cases):
    """The server's replies per scale. Both scales interleaved on 4 parallel slots, so a prompt cache reused
    across LoRA scales would show up as wrong answers."""
    jobs = [(c, s) for c in cases for s in (1.0, 0.0)]
    with ThreadPoolExecutor(4) as pool:
        replies = list(pool.map(lambda job: chat(llamacpp_server, job[0]["messages"], job[1]), jobs))
    return {scale: [r for (_, s), r in zip(jobs, replies) if s == scale] for scale in (1.0, 0.0)}


@pytest.mark.parametrize("scale", [1.0, 0.0], ids=["good-adapter", "base"])
def test_greedy_answers_match_hf(cases, served, hf_outputs, scale):
    """Scale 1 reproduces HF base + `good` adapter (peft), scale 0 the HF base model."""
    got = served[scale]
    expected = hf_outputs[scale]
    same, diffs = 0, []
    for case, reply, (text, n_tokens) in zip(cases, got, expected):
        content = reply["choices"][0]["message"]["content"]
        if content == text:
            same += 1
            # usage counts the EOS token the model stopped on; HF's output (and text) exclude it
            stopped = reply["choices"][0]["finish_reason"] == "stop"
            assert reply["usage"]["completion_tokens"] == n_tokens + stopped, case["id"]
        else:
            diffs.append(f"{case['id']}: llama.cpp {content!r} != HF {text!r}")
    print(f"\nllama.cpp vs HF, LoRA scale {scale}: {same}/{len(cases)} identical greedy answers")
    print("\n".join(diffs))
    assert same >= MIN_IDENTICAL * len(cases), f"{same}/{len(cases)} identical:\n" + "\n".join(diffs)


def test_adapter_scale_changes_answers(hf_outputs):
    """The comparison above is meaningful only if the adapter changes answers at all."""
    differ = sum(a[0] != b[0] for a, b in zip(hf_outputs[0.0], hf_outputs[1.0]))
    assert differ >= 5


def test_lora_switch_does_not_reuse_the_prompt_cache(llamacpp_server, cases):
    """Same prompt, alternating scales, one after another: each answer equals a cold (uncached) answer."""
    for case in cases[:6]:
        for scale in (1.0, 0.0, 1.0):
            warm = chat(llamacpp_server, case["messages"], scale)["choices"][0]["message"]["content"]
            cold = chat(llamacpp_server, case["messages"], scale, cache_prompt=False)
            assert warm == cold["choices"][0]["message"]["content"], (case["id"], scale)


def test_streaming_reports_usage(llamacpp_server, cases):
    messages = cases[0]["messages"]
    events = stream_json(llamacpp_server.base_url + "/chat/completions", {
        "model": llamacpp_server.model, "messages": messages, "temperature": 0, "max_tokens": MAX_TOKENS,
        "lora": [{"id": 0, "scale": 1.0}], "stream_options": {"include_usage": True},
    })
    text = "".join((e["choices"][0]["delta"].get("content") or "") for e in events if e.get("choices"))
    usage = [e["usage"] for e in events if e.get("usage")]
    assert usage and usage[-1]["completion_tokens"] > 0 and usage[-1]["prompt_tokens"] > 0
    whole = chat(llamacpp_server, messages, 1.0)
    assert text == whole["choices"][0]["message"]["content"]
    assert usage[-1]["completion_tokens"] == whole["usage"]["completion_tokens"]
