"""The HF backend on the real demo model and its real LoRA adapters (transformers + peft, CPU)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from conftest import ROOT, as_killed
from releasegate.backends import Request, create_backend
from releasegate.decision.verdicts import EXIT_CODES
from releasegate.inputs.config import load_config
from releasegate.inputs.suites import load_suites
from releasegate.pipeline.check_options import CheckOptions
from releasegate.pipeline.matrix import matrix_verdict
from releasegate.record.records import RunDir

pytestmark = pytest.mark.slow

DEMO = ROOT / "releasegate.yaml"
REGRESSED = ROOT / "examples" / "regressed.yaml"
MERGED = ROOT / "examples" / "merged.yaml"


def requests_of(config_path, limit=None):
    config = load_config(config_path)
    cases = load_suites(config.suites, config.path.parent)[:limit]
    return config, [Request(c.id, list(c.messages) if c.messages else None, c.prompt) for c in cases]


def generate(config, requests, **target_changes):
    backend = create_backend(dataclasses.replace(config.target, **target_changes))
    backend.load()
    try:
        out = []
        for i in range(0, len(requests), backend.batch_size):
            out += backend.generate(requests[i : i + backend.batch_size], max_new_tokens=config.max_new_tokens)
        return out
    finally:
        backend.close()


@pytest.fixture(scope="module")
def demo():
    return requests_of(DEMO)


@pytest.fixture(scope="module")
def adapter_outputs(demo):
    config, requests = demo
    return generate(config, requests)


def test_merged_is_token_identical_to_adapter(demo, adapter_outputs):
    config, requests = demo
    merged = generate(config, requests, merge=True)
    assert all(g.error is None for g in merged + adapter_outputs)
    assert [g.output_ids for g in merged] == [g.output_ids for g in adapter_outputs]
    assert load_config(MERGED).target.merge is True  # the documented merged config is what this test runs


def test_batching_does_not_change_greedy_outputs(demo, adapter_outputs):
    config, requests = demo
    single = generate(config, requests[:12], batch_size=1)
    assert [g.output_ids for g in single] == [g.output_ids for g in adapter_outputs[:12]]
    assert {g.timing.batch_size for g in single} == {1}


def test_adapter_is_applied(demo, adapter_outputs):
    config, requests = demo
    base = generate(config, requests, adapter=None)
    differ = sum(a.output_ids != b.output_ids for a, b in zip(base, adapter_outputs))
    assert differ >= 10, "the adapter should change many outputs on the shifted suite"


def test_timings_split_prefill_and_decode(adapter_outputs):
    for g in adapter_outputs:
        t, n = g.timing, g.tokens.output
        assert g.tokens.source == "tokenizer" and g.tokens.input > 10 and n >= 2
        assert 0 < t.ttft_ms <= t.e2e_ms
        assert t.tpot_ms > 0
        # Output tokens include the EOS the model stopped on, so the last token of TPOT is the EOS step, which is
        # also the end of the stream (it used to be the last text token: a step before E2E, hence `<=`).
        assert t.ttft_ms + t.tpot_ms * (n - 1) == pytest.approx(t.e2e_ms)
        assert t.batch_size >= 1


def test_output_tokens_include_the_eos_the_model_stopped_on(demo, adapter_outputs):
    """One definition across backends: output tokens are the tokens generated, the end-of-sequence token included
    when generation stopped on one, as llama.cpp's and vLLM's `usage.completion_tokens` count it."""
    config, _ = demo
    backend = create_backend(config.target)
    backend.load()
    try:
        eos, tok = backend.eos_ids, backend.tokenizer
        for g in adapter_outputs:
            ids, n = g.output_ids, g.tokens.output
            assert len(ids) == n and not eos & set(ids[:-1]), g  # nothing after the first EOS counts (padding)
            if n < config.max_new_tokens:  # stopped on EOS: counted, decoded to no text
                assert ids[-1] in eos and tok.decode(ids[:-1], skip_special_tokens=True) == g.text
        # every demo answer stops on EOS: one token more per answer than its text (100 answers: 1240 text tokens,
        # 1340 output tokens, what llama.cpp's usage reports for the same answers)
        assert all(g.output_ids[-1] in eos for g in adapter_outputs)
        # a stop at the token limit is not an EOS stop: exactly max_new_tokens, no extra token
        (cut,) = backend.generate([Request("cut", [{"role": "user", "content": "I was charged twice."}])], max_new_tokens=4)
        assert cut.tokens.output == len(cut.output_ids) == 4 and not eos & set(cut.output_ids)
        # a first token that is already EOS: one output token, no text, no TPOT
        first_eos = backend._one([min(eos), tok.pad_token_id], 7, [10, 20], 0, 1)
        assert first_eos.tokens.output == 1 and first_eos.text == "" and first_eos.timing.tpot_ms is None
    finally:
        backend.close()


def test_speculative_decoding_counts_output_tokens_alike(demo, adapter_outputs):
    """Assisted generation verifies several tokens per step, yet counts the same tokens, EOS included."""
    config, requests = demo
    assisted = generate(config, requests[:4], merge=True, draft=ROOT / "models/demo/draft", batch_size=1)
    assert [g.output_ids for g in assisted] == [g.output_ids for g in adapter_outputs[:4]]
    assert [g.tokens.output for g in assisted] == [g.tokens.output for g in adapter_outputs[:4]]


def test_demo_check_passes(cli, tmp_path):
    # customer_support cases need human review: `make demo` allows it pending, and the report says so
    code, out, _ = cli("check", "-c", DEMO, "--output-dir", tmp_path, "--run-id", "good", "--no-progress", "--json", "--allow-pending")
    report = json.loads(out)
    assert code == 0 and report["verdict"] == "PASS", [c for c in report["criteria"] if c["verdict"] != "pass"]
    assert report["review"]["all"]["status"] == "pending (allowed)"
    records = RunDir(tmp_path / "good").read_records()
    assert len(records) == report["counts"]["cases"] >= 100
    assert all(r.timing.ttft_ms and r.tokens.output for r in records)
    info = json.loads((tmp_path / "good" / "run.json").read_text())
    assert info["status"] == "complete" and info["versions"]["peft"] and info["generation_seconds"] > 0


def test_regressed_adapter_fails_on_the_original_task(cli, tmp_path):
    code, out, err = cli("check", "-c", REGRESSED, "--output-dir", tmp_path, "--run-id", "bad", "--no-progress", "--json")
    report = json.loads(out)
    failed = {c["name"] for c in report["criteria"] if c["verdict"] == "fail"}
    assert code == 1 and report["verdict"] == "FAIL"
    assert "original-task accuracy" in failed and "shifted-task accuracy" not in failed
    assert "original-task accuracy" in err  # named in the table


def test_unloadable_model_exits_4(tmp_path, cli):
    base = tmp_path / "broken-model"
    base.mkdir()
    (base / "config.json").write_text('{"model_type": "llama"}')
    config = tmp_path / "c.yaml"
    suites = ROOT / "suites" / "demo"
    config.write_text(  # both suites: a rubric slice that matches no case is refused (exit 2) before loading
        f"target: {{backend: hf, base: {base}}}\nsuites: [{{path: {suites / 'tickets.jsonl'}, limit: 2}}, "
        f"{{path: {suites / 'tickets_shifted.jsonl'}, limit: 2}}]\n"
        f"rubric: {ROOT / 'rubrics' / 'demo.yaml'}\noutput: {{dir: {tmp_path / 'reports'}, run_id: x}}\n"
    )
    code, _, err = cli("check", "-c", config, "--no-progress")
    assert code == 4 and "Traceback" not in err
    assert "cannot load" in err and len(err.strip().splitlines()) == 1
    assert json.loads((tmp_path / "reports/x/run.json").read_text())["status"] == "failed"


def test_variant_matrix_on_the_demo(cli, tmp_path):
    code, out, _ = cli(
        "matrix", "-c", DEMO, "--draft", ROOT / "models/demo/draft", "--run-id", "m", "--output-dir", tmp_path,
        "--no-progress", "--json", "--allow-pending",
    )
    result = json.loads(out)
    rows = {r["variant"]: r for r in result["variants"]}
    assert list(rows) == ["adapter", "merged", "int8", "speculative"]
    assert rows["merged"]["identical_share"] == 1.0 and rows["speculative"]["identical_share"] == 1.0
    assert rows["merged"]["accuracy_delta"] == 0.0 and rows["merged"]["accuracy_p"] == 1.0
    int8 = rows["int8"]
    assert int8["accuracy_delta"] is not None and int8["ttft_ms_p95_ratio"] > 0 and int8["tpot_ms_p95_ratio"] > 0
    # the exit code is the worst of every variant's own verdict and its quality comparison with the reference
    assert result["verdict"] == matrix_verdict(list(rows.values())) and code == EXIT_CODES[result["verdict"]]
    assert code != 0 or all(r["verdict"] == "PASS" and r["quality_verdict"] == "pass" for r in rows.values())
    assert (tmp_path / "m" / "matrix.json").is_file() and (tmp_path / "m" / "speculative" / "records.jsonl").is_file()


def test_regressed_fails_compare_against_good(cli, tmp_path):
    for name, cfg in (("good", DEMO), ("regressed", REGRESSED)):
        cli("check", "-c", cfg, "--output-dir", tmp_path, "--run-id", name, "--no-progress", "--allow-pending")
    code, out, _ = cli("compare", tmp_path / "good", tmp_path / "regressed", "--json")
    result = json.loads(out)
    accuracy = next(r for r in result["rows"] if r["metric"] == "accuracy")
    assert code == 1 and accuracy["verdict"] == "fail" and accuracy["p_value"] < 1e-9
    original = next(s for s in result["slices"] if s["slice"] == "task=original")
    assert original["delta"] == pytest.approx(-1.0, abs=0.1) and original["verdict"] == "fail"
    # the same through the rubric's baseline: the p-value lands in the run's report
    rubric = tmp_path / "with-baseline.yaml"
    rubric.write_text((ROOT / "rubrics/demo.yaml").read_text().replace("forbidden: forbidden.yaml", f"forbidden: {ROOT / 'rubrics/forbidden.yaml'}")
                      + f"baseline: {{run: {tmp_path / 'good'}}}\n")
    code, out, _ = cli("gate", tmp_path / "regressed", "--rubric", rubric, "--allow-pending", "--json")
    report = json.loads(out)
    row = next(c for c in report["criteria"] if c["name"] == "accuracy vs baseline")
    assert code == 1 and row["verdict"] == "fail" and "McNemar p=" in row["reason"]
    (whatif,) = (tmp_path / "regressed" / "whatif").iterdir()  # judged by another rubric: beside the run's reports
    assert json.loads((whatif / "report.json").read_text())["comparison"]["rows"][0]["p_value"] < 1e-9


def test_untrained_adapter_is_refused(cli, tmp_path):
    """A LoRA whose B matrices are still zero changes nothing: the canary stops the run (exit 4)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(ROOT / "models/demo/base", dtype=torch.float32)
    untrained = get_peft_model(base, LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    untrained.save_pretrained(tmp_path / "noop")
    config = tmp_path / "c.yaml"
    config.write_text(DEMO.read_text().replace("models/demo/adapters/good", str(tmp_path / "noop"))
                      .replace("base: models/demo/base", f"base: {ROOT / 'models/demo/base'}")
                      .replace("suites/demo/", f"{ROOT / 'suites/demo'}/").replace("rubric: rubrics/demo.yaml", f"rubric: {ROOT / 'rubrics/demo.yaml'}"))
    code, _, err = cli("check", "-c", config, "--output-dir", tmp_path / "reports", "--no-progress")
    assert code == 4 and "changes nothing" in err and "Traceback" not in err


def test_adapter_with_a_larger_tokenizer_resizes_embeddings(tmp_path):
    """An adapter trained after adding tokens ships its tokenizer and embeddings; the base must grow to match."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from releasegate.inputs.target import TargetConfig

    base = ROOT / "models/demo/base"
    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(base)
    tok.add_tokens(["<|ticket_id|>"])
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    model.resize_token_embeddings(len(tok), mean_resizing=False)
    adapter = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    adapter.save_pretrained(tmp_path / "grown", save_embedding_layers=True)
    tok.save_pretrained(tmp_path / "grown")
    backend = create_backend(TargetConfig(backend="hf", base=str(base), adapter=tmp_path / "grown"))
    backend.load()
    assert backend.model.get_input_embeddings().weight.shape[0] == len(tok) == 1025
    gen = backend.generate([Request("x", [{"role": "user", "content": "Ticket <|ticket_id|> charged twice"}])], max_new_tokens=8)
    assert gen[0].error is None and gen[0].tokens.output > 0
    new_id = tok.convert_tokens_to_ids("<|ticket_id|>")
    assert new_id in backend.prompt_ids(Request("x", [{"role": "user", "content": "<|ticket_id|>"}]))


def test_a_matrix_variant_run_resumes_as_that_variant(cli, tmp_path):
    cli("matrix", "-c", DEMO, "--variants", "adapter,int8", "--limit", "6", "--run-id", "m", "--output-dir", tmp_path,
        "--no-progress")
    run = tmp_path / "m" / "int8"
    info = json.loads((run / "run.json").read_text())
    assert info["target_overrides"] == {"merge": True, "quantize": "int8", "draft": None}
    lines = (run / "records.jsonl").read_text().splitlines()
    (run / "records.jsonl").write_text("\n".join(lines[:3]) + "\n")  # as if killed half-way
    code, out, err = cli("check", "--resume", run, "--no-progress", "--allow-pending", "--json")
    assert code == 3 and "3 of 6 cases to run" in err, err  # 6 original-task cases: the shifted slice is empty
    assert len(RunDir(run).read_records()) == 6
    assert "int8" in json.loads((run / "run.json").read_text())["target"]


def test_step_clock_syncs_before_every_read():
    """On CUDA the clock must wait for the queued forward before reading the time; on CPU it calls nothing."""
    import time

    from releasegate.backends.hf import _StepClock

    synced = []
    clock = _StepClock(lambda: synced.append(time.perf_counter_ns()))
    for _ in range(5):
        assert clock(None, "scores") == "scores"
    assert len(synced) == len(clock.stamps) == 5
    assert all(s <= t for s, t in zip(synced, clock.stamps))
    assert all(t <= s for t, s in zip(clock.stamps, synced[1:]))  # one sync per read, never batched up front
    plain = _StepClock()
    plain(None, None)
    assert plain.sync is None and len(plain.stamps) == 1


def test_generate_syncs_before_start_steps_and_end(demo, monkeypatch):
    """Through the real generate path: one sync before each read of the clock, start and end included."""
    import time

    from releasegate.backends import hf

    reads, clocks = [], []

    class RecordingClock(hf._StepClock):
        def __init__(self, sync=None):
            super().__init__(sync)
            clocks.append(self)

        def now(self):
            t = super().now()
            reads.append(t)
            return t

    config, requests = demo
    backend = create_backend(config.target)
    backend.load()
    try:
        assert backend.sync is None  # CPU: no sync, the clock runs as before
        synced = []
        backend.sync = lambda: synced.append(time.perf_counter_ns())
        monkeypatch.setattr(hf, "_StepClock", RecordingClock)
        gens = backend.generate(requests[:2], max_new_tokens=8)
    finally:
        backend.close()
    assert all(g.error is None for g in gens)
    (clock,) = clocks
    assert len(synced) == len(reads) == len(clock.stamps) + 2 >= 3  # start, every step, end
    assert all(s <= r for s, r in zip(synced, reads))
    assert all(r <= s for r, s in zip(reads, synced[1:]))
    start = reads[0]
    assert gens[0].timing.ttft_ms == (clock.stamps[0] - start) / 1e6


@pytest.fixture(scope="module")
def bucketed_and_file_order(tmp_path_factory):
    """The demo run twice through `run_check` (batch 16): length-bucketed (the default) and in file order, with
    every journal append observed: {name: (run dir, [case ids of each append])}."""
    from rich.console import Console

    from releasegate.inputs.validation import load_inputs
    from releasegate.pipeline.check import run_check

    out = tmp_path_factory.mktemp("bucketing")
    runs = {}
    for name, bucketed in (("bucketed", True), ("file_order", False)):
        config, rubric, cases = load_inputs(DEMO)
        assert config.target.bucket_by_length is True and config.target.batch_size == 16
        config = dataclasses.replace(config, output_dir=out, target=dataclasses.replace(config.target, bucket_by_length=bucketed))
        appends = []
        original = RunDir.append

        def observed(self, records, name="records.jsonl", _appends=appends, _original=original):
            _appends.append([r.case_id for r in records])
            return _original(self, records, name)

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(RunDir, "append", observed)
            run, _ = run_check(config, rubric, cases, CheckOptions(
                Console(quiet=True), progress=False, run_id=name, allow_pending=True, use_cache=False))
        runs[name] = (run, appends, [c.id for c in cases])
    return runs


def _journal_ids(run):
    return [json.loads(line)["case_id"] for line in (run.path / "records.jsonl").read_text().splitlines()]


def _batches(records):
    """The batches the records were really generated in: a batch's records share its TTFT (its prefill)."""
    groups = {}
    for r in records:
        groups.setdefault(r.timing.ttft_ms, []).append(r)
    return list(groups.values())


def test_length_bucketing_keeps_greedy_outputs_and_case_order(bucketed_and_file_order):
    (bucketed, _, planned), (file_order, _, _) = bucketed_and_file_order["bucketed"], bucketed_and_file_order["file_order"]
    a, b = RunDir(bucketed.path).read_records(), RunDir(file_order.path).read_records()
    assert len(planned) == 100
    assert _journal_ids(bucketed) == _journal_ids(file_order) == planned  # records.jsonl itself, line by line
    assert [r.case_id for r in a] == [r.case_id for r in b] == planned
    assert all(r.error is None for r in a + b)
    assert [r.output for r in a] == [r.output for r in b]  # left padding + attention mask: greedy text unchanged
    assert [r.tokens.output for r in a] == [r.tokens.output for r in b]
    assert [r.tokens.input for r in a] == [r.tokens.input for r in b]
    reports = [json.loads((run.path / "report.json").read_text()) for run in (bucketed, file_order)]
    assert reports[0]["verdict"] == reports[1]["verdict"]
    assert reports[0]["metrics"]["accuracy"] == reports[1]["metrics"]["accuracy"]


def test_length_bucketing_batches_neighbours_in_length(bucketed_and_file_order):
    """Each batch is appended (and fsynced) as it is generated, in length order; every record keeps the batch it
    was really in (batch_size, a TTFT shared with its batch); the journal ends up in case order all the same."""
    bucketed, appends, planned = bucketed_and_file_order["bucketed"]
    records = {r.case_id: r for r in RunDir(bucketed.path).read_records()}
    assert [len(ids) for ids in appends] == [16] * 6 + [4]  # one append per batch, as in file order
    generated = [i for ids in appends for i in ids]
    assert sorted(generated) == sorted(planned) and generated != planned
    lengths = [records[i].tokens.input for i in generated]
    assert lengths == sorted(lengths) and lengths[0] < lengths[-1]
    batches = _batches(records.values())
    assert sorted(sorted(r.case_id for r in b) for b in batches) == sorted(sorted(ids) for ids in appends)
    assert all(r.timing.batch_size == len(b) for b in batches for r in b)
    spans = sorted((min(r.tokens.input for r in b), max(r.tokens.input for r in b)) for b in batches)
    assert all(hi <= lo for (_, hi), (lo, _) in zip(spans, spans[1:]))  # batches do not overlap in length
    # in file order the same 100 cases make batches of consecutive cases, mixed in length
    file_order, file_appends, _ = bucketed_and_file_order["file_order"]
    assert file_appends == [planned[i : i + 16] for i in range(0, 100, 16)]
    widest = max(max(r.tokens.input for r in b) - min(r.tokens.input for r in b) for b in _batches(RunDir(file_order.path).read_records()))
    assert widest > max(hi - lo for lo, hi in spans)


def test_a_killed_bucketed_run_resumes_into_case_order(bucketed_and_file_order, cli, tmp_path):
    """Killed after three bucketed batches: the journal holds them in length order; the resumed run generates
    the rest and leaves every record in case order, outputs as in one go."""
    import shutil

    bucketed, appends, planned = bucketed_and_file_order["bucketed"]
    run = tmp_path / "killed"
    shutil.copytree(bucketed.path, run)
    lines = {json.loads(line)["case_id"]: line for line in (run / "records.jsonl").read_text().splitlines()}
    done = [i for ids in appends[:3] for i in ids]
    torn = lines[next(i for i in planned if i not in done)][:40]  # the batch in flight: a torn line
    (run / "records.jsonl").write_text("".join(lines[i] + "\n" for i in done) + torn)
    for stale in ("report.json", "report.md", "report.html", "report.csv", "report.junit.xml"):
        (run / stale).unlink(missing_ok=True)
    as_killed(run)  # the seal a killed run has: else the cut journal is an edit made outside releasegate
    code, out, err = cli("check", "--resume", run, "--no-progress", "--allow-pending")
    assert code == 0 and f"{100 - len(done)} of 100 cases to run" in out + err, out + err
    assert _journal_ids(RunDir(run)) == planned
    resumed = RunDir(run).read_records()
    assert [r.output for r in resumed] == [r.output for r in RunDir(bucketed.path).read_records()]
    assert json.loads((run / "report.json").read_text())["counts"]["cases"] == 100


def test_restoring_case_order_keeps_a_retried_record_last():
    """The rewrite moves lines whole; the lines of one case id stay in their order (the last wins, in the place
    of the first), and a journal already in order is left untouched."""
    import os
    import tempfile
    from pathlib import Path
    from types import SimpleNamespace

    from releasegate.record.records import CaseRecord
    from releasegate.run.generation import _restore_case_order

    with tempfile.TemporaryDirectory() as tmp:
        run = RunDir(Path(tmp))
        cases = [SimpleNamespace(id=f"c{i}") for i in range(4)]
        rec = lambda i, out: CaseRecord(case_id=f"c{i}", suite="s", input={"prompt": "x"}, output=out)  # noqa: E731
        run.append([rec(2, None), rec(0, "a"), rec(3, "d")])
        run.append([rec(2, "c"), rec(1, "b")])
        _restore_case_order(run, SimpleNamespace(config_path=None), None, cases)
        assert _journal_ids(run) == ["c0", "c1", "c2", "c2", "c3"]
        assert [(r.case_id, r.output) for r in run.read_records()] == [("c0", "a"), ("c1", "b"), ("c2", "c"), ("c3", "d")]
        before = os.stat(run.path / "records.jsonl")
        _restore_case_order(run, SimpleNamespace(config_path=None), None, cases)
        assert os.stat(run.path / "records.jsonl").st_ino == before.st_ino  # in order: not rewritten
        assert not list(run.path.glob(".records*"))


def test_a_bucketed_run_that_stops_leaves_its_journal_in_case_order(monkeypatch, tmp_path):
    """Generation that stops half-way (here an error in the third batch; Ctrl-C takes the same path) still puts
    the batches already recorded in case order before the run is marked stopped."""
    from rich.console import Console

    from releasegate.inputs.validation import load_inputs
    from releasegate.pipeline import check as runner
    from releasegate.run import generation

    config, rubric, cases = load_inputs(DEMO)
    config = dataclasses.replace(config, output_dir=tmp_path)
    calls, generate = [], generation._generate

    def failing(backend, fresh, *args):
        calls.append([c.id for c in fresh])
        if len(calls) == 3:
            raise RuntimeError("device lost")
        return generate(backend, fresh, *args)

    monkeypatch.setattr(generation, "_generate", failing)
    with pytest.raises(RuntimeError, match="device lost"):
        runner.run_check(config, rubric, cases, CheckOptions(
            Console(quiet=True), progress=False, run_id="r", allow_pending=True, use_cache=False))
    run = RunDir(tmp_path / "r")
    recorded = set(calls[0] + calls[1])
    assert _journal_ids(run) == [c.id for c in cases if c.id in recorded] != calls[0] + calls[1]
    assert json.loads((run.path / "run.json").read_text())["status"] == "failed"
