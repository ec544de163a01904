"""The served-variant plan on real llama.cpp servers: the demo (good adapter merged) served at f16, q8_0 and q4_0,
with the adapter per request, and with the demo draft model speculating, each in a child process, run on the
same cases and load by `releasegate matrix`, compared with f16 and a variant chosen."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import llamacpp

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
CASES = 100  # both demo suites: a run cut by --limit is never a PASS


def plan_config(tmp: Path, variants: str, *, load: bool = True) -> Path:
    text = (ROOT / "examples" / "variants.yaml").read_text()
    text = text.replace("../", f"{ROOT}/").replace(f"dir: {ROOT}/reports", f"dir: {tmp / 'reports'}")
    head, _, _ = text.partition("\nvariants:\n")
    if not load:
        head = head.replace("load:\n  concurrency: 4\n  requests: 64\n  warmup: 4\n", "")
    else:
        head = head.replace("requests: 64", "requests: 16")
    # The plan's mechanics are under test, not this machine's quiet: a client the shared test machine slows down
    # must not leave a latency criterion undecided, nor the tiny demo decoding tokens under 0.5 ms apart.
    rubric = (ROOT / "rubrics" / "demo.yaml").read_text().replace("forbidden: forbidden.yaml",
                                                                  f"forbidden: {ROOT}/rubrics/forbidden.yaml")
    (tmp / "rubric.yaml").write_text(rubric + "max_client_lag_share: 10\nmax_itl_batched_share: 1\n")
    head = head.replace(f"rubric: {ROOT}/rubrics/demo.yaml", f"rubric: {tmp / 'rubric.yaml'}")
    config = tmp / "variants.yaml"
    config.write_text(head + "\nvariants:\n" + variants + "variant_choice: {margin: 0.2, min_parity_share: 0.5}\n"
                      + f"output:\n  dir: {tmp / 'reports'}\n")
    return config


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """`releasegate matrix --json` over five variants: (exit code, result, its directory)."""
    pytest.importorskip("xllamacpp")
    assert llamacpp.demo_available()
    from releasegate.cli.app import main

    tmp = tmp_path_factory.mktemp("variants")
    config = plan_config(tmp, "  - {name: f16, server: llamacpp, quant: f16}\n"
                              "  - {name: q8_0, server: llamacpp, quant: q8_0}\n"
                              "  - {name: q4_0, server: llamacpp, quant: q4_0}\n"
                              "  - {name: lora, server: llamacpp, quant: f16, lora: per_request}\n"
                              "  - {name: draft, server: llamacpp, quant: f16, speculative: "
                              f"{{draft: {ROOT}/models/demo/draft, n_max: 4}}}}\n")
    out = tmp / "stdout.json"
    import contextlib

    with out.open("w") as f, contextlib.redirect_stdout(f):
        code = main(["matrix", "-c", str(config), "--allow-pending", "--json",
                     "--run-id", "plan", "--no-progress"])
    result = json.loads(out.read_text())
    return code, result, Path(result["dir"])


def rows(result) -> dict[str, dict]:
    return {r["variant"]: r for r in result["variants"]}


def test_every_variant_ran_the_same_cases_and_is_compared_with_f16(served):
    code, result, root = served
    by = rows(result)
    assert list(by) == ["f16", "q8_0", "q4_0", "lora", "draft"] and result["reference"] == "f16"
    assert by["f16"]["parity"] is None
    for name in ("q8_0", "q4_0", "lora", "draft"):
        parity = by[name]["parity"]
        assert parity["shared_cases"] == CASES and parity["shared_share"] == 1.0, (name, by[name]["why_not"])
        assert parity["quality_verdict"] in ("PASS", "FAIL", "INCONCLUSIVE")
        assert 0 <= parity["identical_outputs"] <= CASES and parity["identical_share"] == parity["identical_outputs"] / CASES
        assert parity["rows"] and {r["metric"] for r in parity["rows"]} >= {"accuracy"}
    for row in by.values():
        assert row["verdict"] in ("PASS", "FAIL", "NEEDS_REVIEW", "INCONCLUSIVE"), row["why_not"]
        assert row["ttft_ms_p50"] > 0 and row["e2e_ms_p99"] >= row["e2e_ms_p50"] > 0, row
        # the tiny demo decodes in well under a millisecond a token, and a server that coalesces its writes (or a
        # client the shared machine slows) reads a whole answer at once: 0 ms then, flagged as a batched stream
        # (the plan's rubric allows it: max_itl_batched_share 1)
        assert row["tpot_ms_p95"] is not None and row["tpot_ms_p95"] >= 0, row
        assert row["peak_memory_bytes"] > 10 * 2**20, row  # a child process's high-water mark, not this process's


def test_speculative_greedy_outputs_are_identical_and_its_acceptance_is_read_from_the_server(served):
    _, result, _ = served
    draft = rows(result)["draft"]
    assert draft["parity"]["identical_outputs"] == CASES  # greedy: speculation may change speed, never text
    assert draft["draft_tokens"] > 0 and 0 < draft["accepted_tokens"] <= draft["draft_tokens"]
    assert draft["acceptance_rate"] == pytest.approx(draft["accepted_tokens"] / draft["draft_tokens"])
    assert all(rows(result)[n]["acceptance_rate"] is None for n in ("f16", "q8_0", "q4_0", "lora"))


def test_each_variant_names_the_bytes_it_served(served):
    _, result, _ = served
    by = rows(result)
    for name in ("f16", "q8_0", "q4_0"):
        row = by[name]
        path = Path(row["model_file"])
        assert hashlib.sha256(path.read_bytes()).hexdigest() == row["model_sha256"]
        assert row["model_bytes"] == path.stat().st_size
    assert by["f16"]["model_bytes"] > by["q8_0"]["model_bytes"] > by["q4_0"]["model_bytes"]
    assert by["lora"]["model_bytes"] > by["f16"]["model_bytes"]  # the base plus its LoRA file
    assert [by[n]["quant"] for n in ("f16", "q8_0", "q4_0")] == ["f16", "q8_0", "q4_0"]


def test_the_choice_is_shown_by_its_interval_and_a_waived_review_holds_it(served):
    code, result, _ = served
    by = rows(result)
    for row in result["variants"]:
        assert (row["why_not"] is None) == row["eligible"]
        if row["eligible"]:
            assert row["verdict"] == "PASS" and (row["parity"] is None or row["parity"]["quality_verdict"] == "PASS")
    if not by["f16"]["eligible"]:  # nothing is chosen over a reference that does not qualify
        assert result["choice"] is None and code == 3 and "does not qualify" in result["choice_reason"]
        return
    # the demo's customer-support cases were not reviewed (--allow-pending): a choice, but not a PASS
    assert code == 3 and result["verdict"] == "NEEDS_REVIEW" and "waived" in result["choice_reason"]
    chosen = by[result["choice"]]
    assert chosen["eligible"] and chosen["chosen"] and sum(r["chosen"] for r in result["variants"]) == 1
    if result["choice"] == "f16":
        assert "reference stays" in result["choice_reason"] or result["rule"] is None
    else:
        assert "lies wholly" in result["choice_reason"]


def test_the_report_is_written_in_every_format(served):
    _, result, root = served
    assert json.loads((root / "variants.json").read_text())["choice"] == result["choice"]
    names = [r["variant"] for r in result["variants"]]
    table = list(csv.reader(io.StringIO((root / "variants.csv").read_text())))
    assert len(table) == 1 + len(names) and [row[0] for row in table[1:]] == names
    suite = ET.fromstring((root / "variants.junit.xml").read_text())
    assert len(suite.iter("testcase").__next__().attrib) and sum(1 for _ in suite.iter("testcase")) >= len(names)
    for name in ("variants.md", "variants.html"):
        text = (root / name).read_text()
        wanted = [*names, result["choice"] or "no variant qualifies"]
        assert all(n in text or n.replace("_", "\\_") in text for n in wanted)  # Markdown escapes q8_0's underscore
    for name in names:  # each variant is a full run of its own, with its own reports
        assert (root / name / "report.json").is_file() and (root / name / "variant.json").is_file()


def test_a_second_plan_reuses_the_exported_files(served, tmp_path):
    """The same sources give the same key: no export, the same bytes (sha256 in the manifest)."""
    _, result, root = served
    from releasegate.export.variant_files import llamacpp_files
    from releasegate.inputs.config import load_config

    config = load_config(root.parent.parent / "variants.yaml")
    spec = config.variants.variants[1]
    files = llamacpp_files(spec.base, spec.adapter, quant="q8_0", merged=True, gguf=None, draft=None,
                           cache=config.output_dir / ".variant-files")
    assert files.model_sha256 == rows(result)["q8_0"]["model_sha256"]
    assert str(files.model) == rows(result)["q8_0"]["model_file"]


def run_plan(tmp: Path, variants: str, *args: str) -> tuple[int, str]:
    import contextlib

    from releasegate.cli.app import main

    out = tmp / "stdout.txt"
    with out.open("w") as f, contextlib.redirect_stdout(f):
        code = main(["matrix", "-c", str(plan_config(tmp, variants, load=False)), "--allow-pending", "--no-progress",
                     "--run-id", "plan", *args])
    return code, out.read_text()


def test_a_variant_that_cannot_be_served_is_a_row_of_its_own_and_never_chosen(tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00 not a model")
    code, out = run_plan(tmp_path, "  - {name: f16, server: llamacpp, quant: f16}\n"
                                   "  - {name: broken, server: llamacpp, gguf: " f"{bad}, adapter: null}}\n"
                                   "  - {name: down, server: endpoint, base_url: 'http://127.0.0.1:9/v1', model: demo}\n",
                         "--json")
    result = json.loads(out)
    by = rows(result)
    assert by["broken"]["verdict"] == by["down"]["verdict"] == "TARGET_ERROR"
    assert "could not be started" in by["broken"]["why_not"] and "could not be run" in by["down"]["why_not"]
    assert not by["broken"]["eligible"] and not by["down"]["eligible"]
    # the reference passed: it is the one that qualifies (held at NEEDS_REVIEW: its review was waived)
    assert code == 3 and result["choice"] == "f16" and result["verdict"] == "NEEDS_REVIEW"


def test_a_reference_that_cannot_be_served_leaves_nothing_to_compare(tmp_path, capsys):
    code, _ = run_plan(tmp_path, "  - {name: down, server: endpoint, base_url: 'http://127.0.0.1:9/v1', model: demo}\n"
                                 "  - {name: f16, server: llamacpp, quant: f16}\n")
    assert code == 4 and "reference variant down could not be served" in capsys.readouterr().err


def test_each_variant_run_hashed_the_files_its_server_was_handed_as_observed(served):
    """The files the launcher handed each started server are in its run's manifest (role served, observed), byte
    for byte the files variant.json lists: an endpoint run releasegate served can be attested."""
    _, _, root = served
    for name in ("f16", "lora", "draft"):
        manifest = json.loads((root / name / "manifest.json").read_text())
        rows = [e for e in manifest["inputs"] if e["role"].startswith("served")]
        handed = json.loads((root / name / "variant.json").read_text())["files"]
        assert rows and all(e["served"] == "observed" for e in rows), name
        assert {e["sha256"] for e in rows} == {f["sha256"] for f in handed if f.get("role") in ("model", "lora", "draft")}
        assert any(e["role"] == "served:weights" for e in rows)
