"""A model directory's digest is the one OpenSSF model-signing computes (its own code, installed with the
`modelsigning` extra): for the demo adapters and base model, for a directory of awkward names, and for the model
a real `model_signing sign` / `verify` pair signed with an EC key; what model-signing refuses is refused here."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

from conftest import ROOT
from releasegate.border.model_digest import model_directory_digest, model_files, root_digest
from releasegate.errors import InputError

model_signing = pytest.importorskip("model_signing", reason="pip install 'releasegate[modelsigning]'")
from model_signing._signing.signing import Payload  # noqa: E402  (model-signing's own payload builder)

DEMO = ROOT / "models" / "demo"


def _theirs(folder: Path) -> str:
    """The subject digest model-signing's own code gives the directory (default hashing configuration)."""
    statement = Payload(model_signing.hashing.hash(folder)).statement.pb
    assert len(statement.subject) == 1
    return statement.subject[0].digest["sha256"]


@pytest.mark.parametrize("folder", ["adapters/good", "adapters/regressed", "base"])
def test_the_demo_models_digest_as_model_signing_computes_it(folder):
    assert model_directory_digest(DEMO / folder) == _theirs(DEMO / folder)


def test_awkward_names_sort_and_are_left_out_as_model_signing_does(tmp_path):
    model = tmp_path / "model"
    for name, data in {"a.b": b"1", "a/b": b"2", "a/.hidden": b"3", "B": b"4", "é/x.bin": b"5", "empty": b"",
                       ".git/config": b"6", ".gitignore": b"7", ".github/x": b"8", ".gitattributes": b"9",
                       "sub/.git/kept": b"10", "sub/.gitignore": b"11", "a-b": b"12", "a0": b"13"}.items():
        (model / name).parent.mkdir(parents=True, exist_ok=True)
        (model / name).write_bytes(data)
    files = model_files(model)
    assert ".gitignore" not in files and ".git/config" not in files and "sub/.git/kept" in files
    assert model_directory_digest(model) == _theirs(model)
    (model / "a" / "b").write_bytes(b"changed")  # one byte of one file: another digest
    assert model_directory_digest(model) == _theirs(model) != root_digest({**files})


def test_links_are_refused_unless_allowed_as_model_signing_does(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "weights.bin").write_bytes(b"w" * 100)
    (tmp_path / "blob").write_bytes(b"blob")
    os.symlink(tmp_path / "blob", model / "linked.bin")
    with pytest.raises(ValueError):
        model_signing.hashing.hash(model)
    with pytest.raises(InputError, match="symbolic link"):
        model_directory_digest(model)
    theirs = Payload(model_signing.hashing.Config().set_allow_symlinks(True).hash(model)).statement.pb
    assert model_directory_digest(model, allow_symlinks=True) == theirs.subject[0].digest["sha256"]
    os.symlink(tmp_path, model / "loop")  # a link to a directory is never walked into
    with pytest.raises(InputError, match="to a directory"):
        model_directory_digest(model, allow_symlinks=True)
    os.unlink(model / "loop")
    os.mkfifo(model / "fifo")
    with pytest.raises(InputError, match="not a regular file"):
        model_directory_digest(model, allow_symlinks=True)


def test_a_model_signed_and_verified_by_model_signing_carries_our_digest(tmp_path):
    model = tmp_path / "adapter"
    model.mkdir()
    for file in (DEMO / "adapters" / "good").iterdir():
        (model / file.name).write_bytes(file.read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    (tmp_path / "key.pem").write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    (tmp_path / "key.pub").write_bytes(key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
    signature = tmp_path / "model.sig"
    model_signing.signing.Config().use_elliptic_key_signer(private_key=tmp_path / "key.pem").sign(model, signature)
    model_signing.verifying.Config().use_elliptic_key_verifier(public_key=tmp_path / "key.pub").verify(model, signature)
    bundle = json.loads(signature.read_text())
    statement = json.loads(base64.b64decode(bundle["dsseEnvelope"]["payload"]))
    assert statement["subject"][0]["digest"]["sha256"] == model_directory_digest(model)
