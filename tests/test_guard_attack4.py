"""Hostile runs and guards, fourth round: a stage stopped part-way, a classifier head nobody trained, a text the
classifier never saw: each ends in no verdict or a stage measured again, never a PASS on part of its evidence."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT
from releasegate.backends.openai import OpenAIBackend
from releasegate.testing import StubBehaviour, StubServer
from test_dead_server import run_check
from test_guard_classifier import check as classifier_check
from test_guard_classifier import judgments as classifier_judgments
from test_guard_classifier import project as classifier_project
from test_openai_backend import project

BASE = ROOT / "models/demo/base"
SWEEP = "load: {sweep: {start_rps: 40, max_rps: 160, requests_per_step: 60, step_s: 1, slo: {ttft_ms_p95: 5000}}}\n"


def test_a_sweep_stopped_in_its_second_step_is_run_again_on_resume(tmp_path, cli, monkeypatch):
    """A signal in the sweep's second step (run_interruptibly raises KeyboardInterrupt once the loop is closed)
    left run.json's load_phase holding the first step alone: `check --resume` took the sweep as done and the gate
    judged capacity and latency on one step of it."""
    real, calls = OpenAIBackend.run_load, []

    def stopped_in_step_two(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # what a SIGTERM during the step's event loop raises
        return real(self, *args, **kwargs)

    monkeypatch.setattr(OpenAIBackend, "run_load", stopped_in_step_two)
    with StubServer(StubBehaviour(tokens=4)) as stub:
        config = project(tmp_path, stub.base_url, load=SWEEP)
        code, _, err, run = run_check(cli, config)
        assert code == 130 and run.read_info().status == "interrupted"
        assert run.read_info().load_phase is None  # measured whole or not at all
        monkeypatch.setattr(OpenAIBackend, "run_load", real)
        code, _, err = cli("check", "--resume", run.path, "--no-progress")
    steps = run.read_info().load_phase["sweep"]["steps"]
    assert code in (0, 1) and len(steps) > 1  # the sweep run again, whole
    assert sum(s["requests"] for s in steps) == len(run.read_records("load.jsonl"))


@pytest.mark.slow
@pytest.mark.parametrize("task", [None, "SEQ_CLS"])
def test_an_adapter_that_brings_no_classification_head_gives_no_verdicts(tmp_path, cli, task):
    """A causal LM as the classifier's base is let through when an adapter brings the head; an adapter that trains
    only attention (no `modules_to_save`) left transformers' randomly filled head to call replies safe by chance."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForSequenceClassification

    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(str(BASE), num_labels=2)
    # task SEQ_CLS: peft saves the head whole (modules_to_save); none: the attention alone
    lora = LoraConfig(task_type=task, r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    get_peft_model(model, lora).save_pretrained(str(tmp_path / "adapter"))
    guard = (f"    backend: hf_classifier\n    base: {BASE}\n    adapter: adapter\n    format: classifier\n"
             "    categories: {LABEL_1: personal data}\n    safe_labels: [LABEL_0]\n")
    config = classifier_project(tmp_path, guard=guard)
    (tmp_path / "rubric.yaml").write_text(
        "criteria:\n  - {metric: forbidden_rate, op: '<=', threshold: 0.9}\n"
        "forbidden:\n  - {category: personal_data, kind: guard, guard: clf, codes: [LABEL_1]}\n")
    code, report, run = classifier_check(cli, config)
    said = classifier_judgments(run) if (run.path / "judgments.jsonl").exists() else {}
    if task == "SEQ_CLS":  # a head it trained: every reply has a verdict
        assert said and all(j["error"] is None for j in said.values())
        return
    assert not any(j["passed"] is not None for j in said.values())  # no verdict, never a chance 'safe'
    assert report["verdict"] != "PASS" and code != 0


@pytest.mark.slow
def test_an_empty_text_has_no_label_under_a_tokenizer_that_adds_a_start_token(tmp_path):
    """A BERT- or Llama-like tokenizer adds a start token to every text: an empty one counted a token, so the
    classifier labelled a text it never saw (its start token alone), most often as the safe label."""
    import shutil

    from releasegate.backends import Request, create_backend
    from releasegate.inputs.target import TargetConfig

    copy = shutil.copytree(ROOT / "models/demo/guard_classifier", tmp_path / "clf")
    tokenizer = json.loads((copy / "tokenizer.json").read_text())
    tokenizer["post_processor"] = {
        "type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                                 {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}
    (copy / "tokenizer.json").write_text(json.dumps(tokenizer))
    backend = create_backend(TargetConfig(backend="hf_classifier", base=str(copy), batch_size=4))
    backend.load()
    try:
        empty, said = backend.generate([Request("e", [{"role": "user", "content": text}]) for text in ("", "hello")],
                                       max_new_tokens=1)
    finally:
        backend.close()
    assert backend.tokenizer("")["input_ids"] == [1]  # the start token, as such tokenizers add it
    assert empty.text is None and empty.error == "generation_error" and said.text is not None
