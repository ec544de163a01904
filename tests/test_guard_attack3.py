"""Hostile classifier guard models, third round: a config.json or tokenizer that lies about the model is refused
before any reply is classified, in one short line naming the model and what to fix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from releasegate.backends import create_backend
from releasegate.errors import TargetError
from releasegate.inputs.target import TargetConfig
from test_guard_classifier import CLASSIFIER, GUARD, project, validate_error


def lying_model(root: Path, config: dict | None = None, tokenizer: dict | None = None, drop: tuple = ()) -> Path:
    """A copy of the demo's guard classifier whose config.json / tokenizer_config.json say otherwise."""
    folder = root / "model"
    shutil.copytree(CLASSIFIER, folder)
    for name, changes in (("config.json", config or {}), ("tokenizer_config.json", tokenizer or {})):
        data = json.loads((folder / name).read_text()) | changes
        for key in drop:
            data.pop(key, None)
        (folder / name).write_text(json.dumps(data))
    return folder


LABELS = {"0": "safe", "1": "pii", "2": "account_access", "3": "promise"}


@pytest.mark.parametrize("label", ["A" * 100_000, "x" * 70 + ",y"])
def test_a_models_huge_label_is_named_in_a_short_error(tmp_path, cli, label):
    """A config.json label of 100,000 characters was printed whole, twice, in the one-line error."""
    model = lying_model(tmp_path, {"id2label": LABELS | {"4": label}, "label2id": {}})
    err = validate_error(cli, project(tmp_path, guard=GUARD.replace(str(CLASSIFIER), str(model))))
    assert "guards.clf" in err and len(err) < 600


def test_a_num_labels_that_disagrees_with_id2label_is_refused(tmp_path, cli):
    """num_labels 7 with four labels in id2label passed the label check; transformers then sized the head by
    num_labels and the guard failed to load mid-run."""
    model = lying_model(tmp_path, {"num_labels": 7})
    err = validate_error(cli, project(tmp_path, guard=GUARD.replace(str(CLASSIFIER), str(model))))
    assert "num_labels" in err and "config.json" in err and "guards.clf.base" in err


@pytest.mark.slow
def test_a_head_that_does_not_fit_the_config_is_a_target_error(tmp_path):
    backend = create_backend(TargetConfig(backend="hf_classifier", base=str(lying_model(tmp_path, {"num_labels": 7}))))
    with pytest.raises(TargetError, match="num_labels"):
        backend.load()


@pytest.mark.slow
def test_a_tokenizer_that_cannot_pad_is_refused_at_load(tmp_path):
    """No pad token and no eos token: every batch failed to pad, and every reply was a generation error (an empty
    text's 'nothing to classify' among them) instead of the model being refused."""
    model = lying_model(tmp_path, drop=("pad_token", "eos_token", "pad_token_id", "eos_token_id"))
    backend = create_backend(TargetConfig(backend="hf_classifier", base=str(model)))
    with pytest.raises(TargetError, match="pad"):
        backend.load()
    assert (ROOT / "models" / "demo" / "guard_classifier" / "config.json").exists()


@pytest.mark.parametrize("backend", ["hf", "hf_classifier"])
def test_a_guard_without_its_model_is_refused_at_its_field(tmp_path, cli, backend):
    """A guard of backend hf with no `base:` was valid; check then asked the hub for a model named 'None', retried
    five times and ended in an internal error (exit 70). An hf_classifier guard's error said 'classifier None'."""
    guard = GUARD.replace(f"    base: {CLASSIFIER}\n", "").replace("hf_classifier", backend)
    if backend == "hf":
        guard = guard.replace("    format: classifier\n", "").replace("    safe_labels: [SAFE]\n", "")
    err = validate_error(cli, project(tmp_path, guard=guard))
    assert "guards.clf" in err and "needs base" in err and "None" not in err


def test_a_label_spelt_with_a_combining_accent_is_the_same_label(tmp_path, cli):
    """A config.json label 'cafe' + U+0301 and the config's 'café' (one character) look the same; the config was
    refused as naming a label the model does not have."""
    model = lying_model(tmp_path, {"id2label": LABELS | {"4": "cafe\u0301"}, "label2id": {}})
    guard = GUARD.replace(str(CLASSIFIER), str(model)).replace("{pii:", "{caf\u00e9: coffee talk, pii:")
    code, _, err = cli("validate", "-c", project(tmp_path, guard=guard))
    assert code == 0 and "Traceback" not in err, err
