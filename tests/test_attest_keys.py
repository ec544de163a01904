"""Keys and formats others read, on real Ed25519 keys and real files (no model: statements made as `attest` makes
them): a key rotated (several --public-key, any one that verifies, the key that verified named), a signature
dressed as a trusted key's, the in-toto test-result attestation beside the statement (agreeing, or saying another
result, another run, another signer, unreadable), and hostile key lists."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from releasegate.border.dsse import key_id, load_private_key, load_public_key, pae, sign_envelope
from releasegate.pipeline.attest_test_result import TEST_RESULT_TYPE, make_test_result, sibling
from test_release_attack import _shipped, _statement


@pytest.fixture
def keys(tmp_path, cli) -> dict[str, Path]:
    for name in ("old", "new", "stranger"):
        assert cli("attest", "--generate-key", tmp_path / name)[0] == 0
    return {name: tmp_path / name for name in ("old", "new", "stranger")}


def _write(path: Path, statement: dict, key: Path) -> tuple[Path, bytes]:
    payload = json.dumps(statement, sort_keys=True).encode()
    path.write_text(json.dumps(sign_envelope(payload, load_private_key(key))))
    return path, payload


def _pair(tmp: Path, files: dict, key: Path, test_key: Path | None = None, edit=None) -> Path:
    """A releasegate statement and its test-result attestation beside it, as attest writes them; `edit` changes
    the test-result statement before it is signed (by `test_key`, default `key`)."""
    statement = _statement(files)
    envelope, payload = _write(tmp / "run.intoto.json", statement, key)
    test_result = make_test_result(statement, payload)
    if edit is not None:
        edit(test_result)
    _write(sibling(envelope), test_result, test_key or key)
    return envelope


def _verify(cli, envelope: Path, keys: list[Path], files: dict, *extra: str) -> tuple[int, str, str]:
    args: list = ["verify-attestation", envelope, *extra]
    for k in keys:
        args += ["--public-key", f"{k}.pub"]
    for f in files.values():
        args += ["--artifact", f]
    return cli(*args)


def test_a_rotated_key_verifies_and_is_named(tmp_path, cli, keys):
    files = _shipped(tmp_path)
    envelope = _pair(tmp_path, files, keys["new"])
    code, out, err = _verify(cli, envelope, [keys["old"], keys["new"]], files)
    new_id = key_id(load_public_key(Path(f"{keys['new']}.pub")))
    assert code == 0 and f"key {new_id[:16]}" in out and "run.test-result.intoto.json agrees" in out, err
    code, out, _ = _verify(cli, envelope, [keys["old"], keys["new"]], files, "--json")
    assert code == 0 and json.loads(out)["key_id"] == new_id
    code, _, err = _verify(cli, envelope, [keys["old"]], files)  # the old key retired from the signing side
    assert code == 1 and "no signature by this key" in err
    old = _pair(tmp_path, files, keys["old"])  # still signed with the old key during the rotation: accepted
    assert _verify(cli, old, [keys["new"], keys["old"]], files)[0] == 0


def test_a_failing_signature_naming_any_trusted_key_is_refused(tmp_path, cli, keys):
    files = _shipped(tmp_path)
    envelope = _pair(tmp_path, files, keys["new"])
    data = json.loads(envelope.read_text())
    forged = {"keyid": key_id(load_public_key(Path(f"{keys['old']}.pub"))), "sig": base64.b64encode(b"\0" * 64).decode()}
    envelope.write_text(json.dumps({**data, "signatures": [data["signatures"][0], forged]}))
    code, _, err = _verify(cli, envelope, [keys["old"], keys["new"]], files)
    assert code == 1 and "does not verify" in err, err
    # a signature naming no key is checked against every trusted key: the new one's, unnamed, verifies
    unnamed = {"keyid": "", "sig": data["signatures"][0]["sig"]}
    envelope.write_text(json.dumps({**data, "signatures": [unnamed]}))
    assert _verify(cli, envelope, [keys["old"], keys["new"]], files)[0] == 0
    bad = {"keyid": "", "sig": base64.b64encode(
        load_private_key(keys["stranger"]).sign(pae(data["payloadType"], base64.b64decode(data["payload"])))).decode()}
    envelope.write_text(json.dumps({**data, "signatures": [data["signatures"][0], bad]}))
    code, _, err = _verify(cli, envelope, [keys["old"], keys["new"]], files)
    assert code == 1 and "does not verify" in err, err


def test_the_test_result_attestation_is_what_a_generic_verifier_reads(tmp_path, keys):
    files = _shipped(tmp_path)
    statement = _statement(files, criteria=[{"name": "accuracy", "verdict": "pass"},
                                            {"name": "latency", "verdict": "insufficient"}])
    statement["predicate"]["rubric"] = {"effective_sha256": "e" * 64}
    payload = json.dumps(statement, sort_keys=True).encode()
    made = make_test_result(statement, payload)
    assert made["predicateType"] == TEST_RESULT_TYPE == "https://in-toto.io/attestation/test-result/v0.1"
    assert made["subject"] == statement["subject"]
    predicate = made["predicate"]
    assert predicate["result"] == "PASSED" and predicate["passedTests"] == ["accuracy"]
    assert predicate["warnedTests"] == ["latency"] and "failedTests" not in predicate
    import hashlib
    assert [c["digest"]["sha256"] for c in predicate["configuration"]] == [hashlib.sha256(payload).hexdigest(), "e" * 64]
    for verdict in ("FAIL", "INCONCLUSIVE", "NEEDS_REVIEW", None):  # only a PASS is PASSED: an unknown never is
        statement["predicate"]["verdict"] = verdict
        assert make_test_result(statement, payload)["predicate"]["result"] == "FAILED"


def _set(key: str, value):
    def edit(statement: dict) -> None:
        statement["predicate"][key] = value
    return edit


@pytest.mark.parametrize("edit, says", [
    (_set("result", "FAILED"), "result FAILED where releasegate's verdict gives PASSED"),
    (_set("result", "WARNED"), "result WARNED"),
    (_set("passedTests", ["accuracy", "extra"]), "passedTests is not what the attested criteria give"),
    (_set("failedTests", ["accuracy"]), "failedTests"),
    (_set("configuration", [{"name": "other run", "digest": {"sha256": "0" * 64}}]), "another run or statement"),
    (_set("verdict", "PASS"), "which releasegate does not write"),
    (lambda s: s.update(predicateType="https://in-toto.io/attestation/vulns"), "predicate type"),
    (lambda s: s.update(subject=[{"name": "other", "digest": {"sha256": "1" * 64}}]), "subjects"),
    (lambda s: s["subject"].append({"name": "", "digest": {}}), "in-toto's Statement model refuses it"),
])
def test_a_test_result_that_disagrees_is_refused(tmp_path, cli, keys, edit, says):
    files = _shipped(tmp_path)
    envelope = _pair(tmp_path, files, keys["new"], edit=edit)
    code, _, err = _verify(cli, envelope, [keys["new"]], files)
    assert code == 1 and "test result: run.test-result.intoto.json" in err and says in err, err
    assert err.count("\n") == 1


def test_a_test_result_signed_by_another_key_or_unreadable_is_refused(tmp_path, cli, keys):
    files = _shipped(tmp_path)
    envelope = _pair(tmp_path, files, keys["new"], test_key=keys["stranger"])
    code, _, err = _verify(cli, envelope, [keys["new"]], files)
    assert code == 1 and "test result" in err and "no signature by this key" in err, err
    for garbage in (b"[" * 50_000, b"\xff\xfe", b"{}", b'{"payloadType": "x"}'):
        sibling(envelope).write_bytes(garbage)
        code, _, err = _verify(cli, envelope, [keys["new"]], files)
        assert code == 1 and "test result" in err and err.count("\n") == 1, (garbage[:10], err)
    sibling(envelope).unlink()  # none beside it: the statement alone is checked, and the result says so
    code, out, err = _verify(cli, envelope, [keys["new"]], files, "--json")
    assert code == 0 and json.loads(out)["test_result"] is None and "no test-result attestation beside it" in err
    code, _, err = _verify(cli, envelope, [keys["new"]], files, "--test-result", tmp_path / "missing.json")
    assert code == 2 and "missing.json" in err  # named, but not there: a bad input


def test_hostile_key_lists_are_one_line_exit_2(tmp_path, cli, keys):
    files = _shipped(tmp_path)
    envelope = _pair(tmp_path, files, keys["new"])
    code, _, err = _verify(cli, envelope, [keys["new"]] * 17, files)
    assert code == 2 and "1 to 16 public keys" in err and err.count("\n") == 1, err
    (tmp_path / "junk.pub").write_text("-----BEGIN PUBLIC KEY-----\n\x1b[2Jnot base64\n-----END PUBLIC KEY-----\n")
    code, _, err = _verify(cli, envelope, [keys["new"], tmp_path / "junk"], files)
    assert code == 2 and "junk.pub" in err and "\x1b" not in err, err
    code, _, err = cli("verify-attestation", envelope, "--artifact", files["model/model.safetensors"])
    assert code == 2 and "--key" in err


def _with_directory(tmp: Path, files: dict, key: Path) -> tuple[Path, Path]:
    """A statement whose subjects also name the folder holding the files by its model-signing digest."""
    from releasegate.border.model_digest import model_directory_digest

    folder = files["model/model.safetensors"].parent
    statement = _statement(files)
    statement["subject"].append({"name": "model/", "digest": {"sha256": model_directory_digest(folder)}})
    envelope, _ = _write(tmp / "dir.intoto.json", statement, key)
    return envelope, folder


def test_a_model_directory_verifies_whole_and_nothing_else_passes_for_it(tmp_path, cli, keys):
    import hashlib
    import os

    from releasegate.border.model_digest import model_files

    files = _shipped(tmp_path)
    envelope, folder = _with_directory(tmp_path, files, keys["new"])
    verify = ["verify-attestation", envelope, "--public-key", f"{keys['new']}.pub"]
    assert cli(*verify, "--artifact", folder)[0] == 0  # the directory carries every weights file in it
    # a file made of the directory's file digests has the directory's digest: it is no file that passed
    digests = model_files(folder)
    forged = tmp_path / "forged.bin"
    forged.write_bytes(b"".join(bytes.fromhex(digests[n]) for n in sorted(digests)))
    code, _, err = cli(*verify, "--artifact", forged, "--artifact", folder)
    assert code == 1 and "forged.bin" in err and "no subject" in err, err
    (folder / "extra.txt").write_text("one more file")  # another model
    code, _, err = cli(*verify, "--artifact", folder)
    assert code == 1 and "model-signing digest" in err and err.count("\n") == 1, err
    (folder / "extra.txt").unlink()
    os.mkfifo(folder / "pipe")
    code, _, err = cli(*verify, "--artifact", folder)
    assert code == 1 and "not a regular file" in err and err.count("\n") == 1, err
    (folder / "pipe").unlink()
    os.symlink(tmp_path, folder / "up")
    code, _, err = cli(*verify, "--artifact", folder)
    assert code == 1 and "symbolic link" in err and err.count("\n") == 1, err
    (folder / "up").unlink()
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = cli(*verify, "--artifact", empty)
    assert code == 1 and hashlib.sha256(b"").hexdigest()[:16] in err, err


@pytest.mark.parametrize("value", [b"1" + b"0" * 400, b'"\\ud800"'])
def test_a_signed_statement_in_toto_cannot_read_is_refused_not_crashed_on(tmp_path, cli, keys, value):
    files = _shipped(tmp_path)
    text = json.dumps(_statement(files)).replace('"value": 0.9', '"value": VALUE').encode().replace(b"VALUE", value)
    envelope = tmp_path / "odd.intoto.json"
    envelope.write_text(json.dumps(sign_envelope(text, load_private_key(keys["new"]))))
    code, _, err = _verify(cli, envelope, [keys["new"]], files)
    assert code == 1 and "in-toto's Statement model refuses it" in err and err.count("\n") == 1, err
