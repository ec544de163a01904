"""Hostile files and edits against the leakage probe's inputs and the model directory digest: each is exit 2 (or an
InputError) naming the file and the field, never an internal error, and nothing the user gave is lost."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import write_jsonl
from releasegate.border.model_digest import model_files
from releasegate.errors import InputError
from releasegate.inputs.leakage_inputs import read_leakage_suite
from releasegate.leakage.build import build_suite


def _files(tmp_path: Path) -> tuple[Path, Path]:
    write_jsonl(tmp_path / "train.jsonl", [{"prompt": f"t{i} hello", "completion": f"answer t{i}"} for i in range(6)])
    write_jsonl(tmp_path / "heldout.jsonl", [{"prompt": f"h{i} hello", "completion": f"answer h{i}"} for i in range(6)])
    return tmp_path / "train.jsonl", tmp_path / "heldout.jsonl"


@pytest.mark.parametrize("which", ["train", "heldout"])
def test_the_suite_is_never_written_over_a_file_it_is_drawn_from(cli, tmp_path, which):
    train, heldout = _files(tmp_path)
    given = {"train": train, "heldout": heldout}[which]
    before = given.read_bytes()
    code, _, err = cli("leakage", "build", "--train", train, "--heldout", heldout, "-o", tmp_path / "." / given.name)
    assert code == 2 and "-o" in err and "drawn from" in err and len(err.strip().splitlines()) == 1, err
    assert given.read_bytes() == before
    os.link(given, tmp_path / "linked.json")  # another name of the same file
    code, _, err = cli("leakage", "build", "--train", train, "--heldout", heldout, "-o", tmp_path / "linked.json")
    assert code == 2 and "drawn from" in err and given.read_bytes() == before, err


EDITS = {
    "seed": ["abc", [1], 1.5, None, True],
    "personal_fields": [5, "name", [1], {"a": 1}, None],
    "sources.train": [{"path": 5, "sha256": "x"}, {"sha256": "x"}, {"path": "train.jsonl", "sha256": {"a": [1]}}],
}


@pytest.mark.parametrize("key, value", [(k, v) for k, values in EDITS.items() for v in values])
def test_an_edited_suite_header_is_named_by_its_field(cli, tmp_path, key, value):
    train, heldout = _files(tmp_path)
    suite = build_suite(train, heldout, tmp_path / "s.json", n=3).path
    doc = json.loads(suite.read_text())
    holder, name = (doc["sources"], "train") if key == "sources.train" else (doc, key)
    holder[name] = value
    suite.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=key.replace(".", r"\.")) as caught:
        read_leakage_suite(suite)
    assert caught.value.file == str(suite)
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "prompt": "hi", "expected": "x"}\n')
    (tmp_path / "out.jsonl").write_text('{"id": "a", "output": "x"}\n')
    (tmp_path / "rubric.yaml").write_text("criteria:\n  - {metric: membership_auc, op: '<=', threshold: 0.6}\n")
    (tmp_path / "releasegate.yaml").write_text(
        "target: {backend: replay, responses: out.jsonl}\nsuites: [{path: cases.jsonl}]\nrubric: rubric.yaml\n"
        "leakage: {suite: s.json, base: {backend: replay, responses: out.jsonl}}\n")
    code, _, err = cli("check", "-c", tmp_path / "releasegate.yaml", "--run-id", "r", "--no-progress")
    assert code == 2 and "s.json" in err and key in err and len(err.strip().splitlines()) == 1, err


def test_a_link_that_loops_in_a_model_directory_is_named(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "weights.bin").write_bytes(b"w")
    os.symlink("loop", model / "loop")  # a link to itself: the OS refuses to follow it (ELOOP)
    for allow in (True, False):
        with pytest.raises(InputError) as caught:
            model_files(model, allow_symlinks=allow)
        assert caught.value.file == str(model / "loop")
