"""The typed readers of manifest.json, the seal, the attempts ledger and the history's view of report.json: a
part of another shape is refused with one line naming the field (or, where the reader is lenient, left out),
and what is written back keeps the shape and key order releasegate has always written."""

import json

import pytest

from releasegate.errors import InputError
from releasegate.record.history_parts import ReportFacts, loose
from releasegate.record.ledger import LEDGER, read_ledger
from releasegate.record.seal import seal
from releasegate.record.stored_manifest import typed_inputs, typed_manifest, typed_parts

SHA = "a" * 64


def _manifest(**parts):
    return {"format": 1, "inputs": [{"role": "model:weights", "path": "/m/w.safetensors", "name": "model/w.safetensors",
                                     "sha256": SHA}], "target": {"backend": "hf", "fingerprint": None}, **parts}


def test_a_manifest_part_of_another_type_is_refused_naming_the_field():
    with pytest.raises(InputError) as caught:
        typed_manifest(_manifest(inputs=[{"role": "model", "path": "/m", "name": 7}]))
    assert "inputs.0.name" in caught.value.message
    with pytest.raises(InputError) as caught:
        typed_parts({"sealed": {"files": {"run.json": {"bytes": -1, "sha256": SHA}}}})
    assert "sealed.files.run.json.bytes" in caught.value.message
    with pytest.raises(InputError):
        typed_inputs({"inputs": "model.safetensors"})


def test_typed_inputs_name_their_owner_and_shown_name():
    entry = typed_manifest(_manifest()).inputs[0]
    assert (entry.owner, entry.shown_name) == ("model", "model/w.safetensors")
    unnamed = typed_inputs({"inputs": [{"role": "gguf", "path": "/srv/x.gguf"}]})[0]
    assert unnamed.shown_name == "/srv/x.gguf"


def test_a_seal_is_written_with_the_keys_in_the_order_releasegate_writes_them(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps(_manifest()))
    (tmp_path / "run.json").write_text(json.dumps({"status": "running", "phases": ["load"]}))
    (tmp_path / "load.jsonl").write_text("{}\n")
    seal(tmp_path, "check")
    sealed = json.loads((tmp_path / "manifest.json").read_text())["sealed"]
    assert list(sealed) == ["files", "broken", "at", "by", "complete"]
    assert list(sealed["files"]["run.json"]) == ["bytes", "sha256"]
    assert sealed["files"]["load.jsonl"]["load_phase_running"] is True  # the load phase had not finished
    assert sealed["by"] == "check" and sealed["complete"] is False and sealed["broken"] == []


def test_an_edited_snapshot_is_kept_as_broken_with_its_sealed_digest(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps(_manifest()))
    (tmp_path / "config.yaml").write_text("seed: 1\n")
    seal(tmp_path, "check")
    before = json.loads((tmp_path / "manifest.json").read_text())["sealed"]["files"]["config.yaml"]["sha256"]
    (tmp_path / "config.yaml").write_text("seed: 2\n")
    seal(tmp_path, "check")
    broken = json.loads((tmp_path / "manifest.json").read_text())["sealed"]["broken"]
    assert [(b["file"], b["change"], b["found_by"], b["sealed_sha256"]) for b in broken] == \
        [("config.yaml", "edited", "check", before)]


@pytest.mark.parametrize("line, why", [
    ({"phase": "quality", "source": "s1", "attempts": "3", "errors": {}}, "a source needs a name, attempts and errors"),
    ({"phase": "quality", "source": 5, "attempts": 3}, "a source needs a name, attempts and errors"),
    ({"phase": "load", "session": 1, "outcomes": [None, 7]}, "a line needs a session and its outcomes"),
    ({"phase": "replay", "session": 1, "outcomes": []}, "no phase of quality or load"),
    (["phase", "load"], "no phase of quality or load"),
])
def test_a_ledger_line_of_another_shape_is_refused_naming_it(tmp_path, line, why):
    (tmp_path / LEDGER).write_text(json.dumps(line) + "\n")
    with pytest.raises(InputError) as caught:
        read_ledger(tmp_path, None)
    assert why in caught.value.message and caught.value.line == 1


def test_a_source_tally_gives_its_failures_then_its_answers(tmp_path):
    (tmp_path / LEDGER).write_text(json.dumps({"phase": "quality", "source": "s1", "attempts": 3,
                                               "errors": {"timeout": 1}}) + "\n")
    [line] = read_ledger(tmp_path, None)
    assert (line.source, line.outcomes) == ("s1", ("timeout", None, None))


def test_the_history_view_of_a_report_reads_any_shape():
    assert loose(ReportFacts, ["not", "a", "report"]) is None
    facts = loose(ReportFacts, {"verdict": 3, "criteria": "all", "judged_by": []})
    assert facts is not None and (facts.verdict, facts.criteria, facts.judged_by) == (3, "all", [])
