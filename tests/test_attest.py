"""Signed attestations, end to end with the real demo model (hf backend), real Ed25519 keys and real files: a PASS
run is attested and the deploy check accepts its files; a flipped byte in the adapter, an edited predicate, a
wrong key, a FAIL or a NEEDS_REVIEW run, and hostile envelopes are each refused with their reason."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, write_jsonl
from releasegate.border.dsse import load_private_key, pae, sign_envelope
from releasegate.cli import main
from releasegate.pipeline.attest import PREDICATE_TYPE, STATEMENT_TYPE, statement_for
from releasegate.record.stored_manifest import read_manifest_file

DEMO = ROOT / "models" / "demo"
CASES = [{"id": f"case-{i}", "messages": [{"role": "user", "content": text}],
          "expected": {"intent": "billing", "priority": "low"}, "tags": {"domain": "billing"}}
         for i, text in enumerate(["charged twice", "refund please", "where is my invoice"])]
LENIENT = {"name": "lenient", "criteria": [{"metric": "error_rate", "op": "<=", "threshold": 1.0}]}
STRICT = {"name": "strict", "criteria": [{"metric": "accuracy", "op": ">=", "threshold": 0.99}]}


def _project(root: Path, rubric: dict, domain: str = "billing") -> Path:
    root.mkdir(parents=True)
    models = root / "models"
    shutil.copytree(DEMO / "base", models / "base")
    shutil.copytree(DEMO / "adapters" / "good", models / "adapter")
    write_jsonl(root / "suite.jsonl", [{**c, "tags": {"domain": domain}} for c in CASES])
    (root / "rubric.yaml").write_text(yaml.safe_dump(rubric))
    config = {"target": {"backend": "hf", "base": "models/base", "adapter": "models/adapter", "dtype": "float32",
                         "threads": 1, "batch_size": 8},
              "generation": {"max_new_tokens": 8},
              "suites": [{"path": "suite.jsonl", "answer": {"type": "json_fields", "fields": ["intent", "priority"]}}],
              "rubric": "rubric.yaml", "output": {"dir": "reports"}}
    (root / "releasegate.yaml").write_text(yaml.safe_dump(config))
    return root


def _check(project: Path, run_id: str) -> Path:
    main(["check", "-c", str(project / "releasegate.yaml"), "--run-id", run_id, "--no-progress", "--json"])
    return project / "reports" / run_id


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three real runs of the demo model: PASS, FAIL, NEEDS_REVIEW; and two real key pairs."""
    tmp = tmp_path_factory.mktemp("attest")
    found = {"pass": _check(_project(tmp / "p", LENIENT), "ok"), "fail": _check(_project(tmp / "f", STRICT), "bad"),
             "review": _check(_project(tmp / "r", LENIENT, domain="customer_support"), "held")}
    verdicts = {k: json.loads((v / "report.json").read_text())["verdict"] for k, v in found.items()}
    assert verdicts == {"pass": "PASS", "fail": "FAIL", "review": "NEEDS_REVIEW"}
    for name in ("key", "other"):
        assert main(["attest", "--generate-key", str(tmp / name)]) == 0
    return tmp, found


def _verify(cli, attestation: Path, key: Path, *artifacts: Path) -> tuple[int, str]:
    args = ["verify-attestation", attestation, "--key", key]
    for a in artifacts:
        args += ["--artifact", a]
    code, _, err = cli(*args)
    return code, err


def _attest(cli, tmp: Path, run: Path, name: str) -> tuple[int, Path, str]:
    out = tmp / f"{name}.intoto.json"
    code, _, err = cli("attest", run, "--key", tmp / "key", "-o", out, "--force")
    return code, out, err


def test_a_pass_is_attested_and_its_files_verify(runs, cli):
    tmp, found = runs
    code, att, err = _attest(cli, tmp, found["pass"], "ok")
    assert code == 0, err
    envelope = json.loads(att.read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    assert envelope["payloadType"] == "application/vnd.in-toto+json"
    assert statement["_type"] == STATEMENT_TYPE == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == PREDICATE_TYPE
    adapter = found["pass"].parents[1] / "models" / "adapter" / "adapter_model.safetensors"
    weights = found["pass"].parents[1] / "models" / "base" / "model.safetensors"
    subjects = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    assert subjects["adapter/adapter_model.safetensors"] == hashlib.sha256(adapter.read_bytes()).hexdigest()
    assert {"model/model.safetensors", "model/tokenizer.json", "model/chat_template.jinja"} <= set(subjects)
    predicate = statement["predicate"]
    report = json.loads((found["pass"] / "report.json").read_text())
    assert predicate["verdict"] == "PASS" and predicate["rubric"]["sha256"] == report["judged_by"]["snapshot_sha256"]
    assert predicate["criteria"][0]["threshold"] == 1.0 and predicate["criteria"][0]["value"] == 0.0
    assert predicate["seal"]["files"]["records.jsonl"]["sha256"] and predicate["seal"]["complete"] is True
    assert "obligations" in predicate["review"]
    assert {w["name"] for w in predicate["weights"]} == {"model/model.safetensors", "adapter/adapter_model.safetensors"}
    code, err = _verify(cli, att, tmp / "key.pub", adapter, weights)
    assert code == 0, err
    code, out, _ = cli("verify-attestation", att, "--key", tmp / "key.pub", "--artifact", adapter, "--artifact",
                       weights, "--json")
    assert code == 0 and json.loads(out)["verdict"] == "PASS"
    # every weights file the run loaded must be given: the adapter alone, or the base alone, is not what passed
    for given, missing in ((adapter, "model/model.safetensors"), (weights, "adapter/adapter_model.safetensors")):
        code, err = _verify(cli, att, tmp / "key.pub", given)
        assert code == 1 and f"also loaded {missing}" in err and err.count("\n") == 1


def _flipped(source: Path, where: Path) -> Path:
    where.mkdir(exist_ok=True)
    data = bytearray(source.read_bytes())
    data[len(data) // 2] ^= 0x01
    target = where / source.name
    target.write_bytes(bytes(data))
    return target


def test_every_tampering_is_refused_with_its_reason(runs, cli):
    tmp, found = runs
    _, att, _ = _attest(cli, tmp, found["pass"], "ok2")
    adapter = found["pass"].parents[1] / "models" / "adapter" / "adapter_model.safetensors"
    code, err = _verify(cli, att, tmp / "key.pub", _flipped(adapter, tmp / "deploy"))
    assert code == 1 and "is no subject of the attestation" in err and err.count("\n") == 1
    envelope = json.loads(att.read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["criteria"][0]["threshold"] = 5.0  # an edited predicate, the signature kept
    edited = tmp / "edited.json"
    edited.write_text(json.dumps({**envelope, "payload": base64.b64encode(json.dumps(statement).encode()).decode()}))
    code, err = _verify(cli, edited, tmp / "key.pub", adapter)
    assert code == 1 and "signature" in err and "does not verify" in err
    code, err = _verify(cli, att, tmp / "other.pub", adapter)
    assert code == 1 and "no signature by this key" in err
    code, err = _verify(cli, att, tmp / "key.pub")  # no artifact: nothing shown to be what passed
    assert code == 2 or (code == 1 and "no artifact" in err)


@pytest.mark.parametrize("which, verdict", [("fail", "FAIL"), ("review", "NEEDS_REVIEW")])
def test_a_run_that_did_not_pass_is_never_attested_nor_accepted(runs, cli, which, verdict):
    tmp, found = runs
    code, _, err = _attest(cli, tmp, found[which], which)
    assert code == 1 and f"verdict is {verdict}, not PASS" in err
    # signed anyway (an attester that skipped the gate): the deploy check refuses it
    run = found[which]
    manifest = read_manifest_file(run)
    statement = statement_for(run, json.loads((run / "report.json").read_text()), manifest)
    signed = tmp / f"{which}-signed.json"
    signed.write_text(json.dumps(sign_envelope(json.dumps(statement).encode(), load_private_key(tmp / "key"))))
    adapter = run.parents[1] / "models" / "adapter" / "adapter_model.safetensors"
    code, err = _verify(cli, signed, tmp / "key.pub", adapter)
    assert code == 1 and f"the attested verdict is {verdict}, not PASS" in err


def test_a_failed_run_whose_report_says_pass_is_not_attested(runs, cli, tmp_path):
    tmp, found = runs
    run = tmp_path / "forged"
    shutil.copytree(found["fail"], run)
    report = json.loads((run / "report.json").read_text())
    (run / "report.json").write_text(json.dumps({**report, "verdict": "PASS", "exit_code": 0}))
    code, _, err = _attest(cli, tmp, run, "forged")
    assert code == 1 and "report.json" in err


def test_hostile_envelopes_and_artifacts(runs, cli):
    tmp, found = runs
    _, att, _ = _attest(cli, tmp, found["pass"], "ok3")
    adapter = found["pass"].parents[1] / "models" / "adapter" / "adapter_model.safetensors"
    envelope = json.loads(att.read_text())
    good = envelope["signatures"][0]
    bad = {**good, "sig": base64.b64encode(b"\0" * 64).decode()}
    two = tmp / "two.json"
    two.write_text(json.dumps({**envelope, "signatures": [good, bad]}))  # one good, one bad for the same key
    code, err = _verify(cli, two, tmp / "key.pub", adapter)
    assert code == 1 and "does not verify" in err
    other_signer = tmp / "cosigned.json"  # a second signature by another key is someone else's: not counted
    other = load_private_key(tmp / "other")
    cosig = {"keyid": "f" * 64, "sig": base64.b64encode(other.sign(pae(envelope["payloadType"], base64.b64decode(envelope["payload"])))).decode()}
    other_signer.write_text(json.dumps({**envelope, "signatures": [good, cosig]}))
    weights = found["pass"].parents[1] / "models" / "base" / "model.safetensors"
    assert _verify(cli, other_signer, tmp / "key.pub", adapter, weights)[0] == 0
    deep = tmp / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    code, err = _verify(cli, deep, tmp / "key.pub", adapter)
    assert code == 1 and "not an attestation" in err and "deep" in err
    huge = tmp / "huge.json"
    huge.write_bytes(b" " * (17 * 1024 * 1024))
    code, err = _verify(cli, huge, tmp / "key.pub", adapter)
    assert code == 2 and "larger than" in err
    link = tmp / "deploy-link"
    link.symlink_to(adapter)
    code, err = _verify(cli, att, tmp / "key.pub", link)
    assert code == 1 and "symbolic link" in err
    code, err = _verify(cli, att, tmp / "key.pub", adapter, tmp / "missing.bin")
    assert code == 1 and "missing.bin" in err


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_a_key_made_with_openssl_signs_and_verifies(runs, cli, tmp_path):
    tmp, found = runs
    key, pub = tmp_path / "release.key", tmp_path / "release.pub"
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", str(key)], check=True)
    subprocess.run(["openssl", "pkey", "-in", str(key), "-pubout", "-out", str(pub)], check=True)
    out = tmp_path / "ossl.json"
    assert cli("attest", found["pass"], "--key", key, "-o", out)[0] == 0
    adapter = found["pass"].parents[1] / "models" / "adapter" / "adapter_model.safetensors"
    weights = found["pass"].parents[1] / "models" / "base" / "model.safetensors"
    assert _verify(cli, out, pub, adapter, weights)[0] == 0
    assert cli("attest", found["pass"], "--key", pub, "-o", tmp_path / "x.json")[0] == 2  # a public key cannot sign


def test_a_forged_seal_over_a_report_edited_to_pass_is_still_refused(runs, cli, tmp_path):
    """Whoever rewrites manifest.json can forge the seal; the verdict judged again from the records cannot be."""
    tmp, found = runs
    run = tmp_path / "forged"
    shutil.copytree(found["fail"], run)
    report = json.loads((run / "report.json").read_text())
    (run / "report.json").write_text(json.dumps({**report, "verdict": "PASS", "exit_code": 0}))
    manifest = json.loads((run / "manifest.json").read_text())
    data = (run / "report.json").read_bytes()
    manifest["sealed"]["files"]["report.json"] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (run / "manifest.json").write_text(json.dumps(manifest))
    assert cli("verify", run)[0] == 0  # the forgery fools verify
    code, _, err = _attest(cli, tmp, run, "forged-seal")
    assert code == 1 and "judged again from its records" in err and "FAIL" in err


def test_attest_writes_the_test_result_beside_and_model_signing_digests_of_each_model_directory(runs, cli, tmp_path):
    from releasegate.border.dsse import key_id, load_public_key
    from releasegate.border.model_digest import model_directory_digest
    from releasegate.pipeline.attest_test_result import TEST_RESULT_TYPE

    tmp, found = runs
    code, att, err = _attest(cli, tmp, found["pass"], "tr")
    assert code == 0, err
    project = found["pass"].parents[1]
    payload = base64.b64decode(json.loads(att.read_text())["payload"])
    statement = json.loads(payload)
    beside = tmp / "tr.test-result.intoto.json"
    result = json.loads(base64.b64decode(json.loads(beside.read_text())["payload"]))
    assert result["predicateType"] == TEST_RESULT_TYPE and result["subject"] == statement["subject"]
    assert result["predicate"]["result"] == "PASSED"
    assert result["predicate"]["passedTests"] == [c["name"] for c in statement["predicate"]["criteria"]]
    assert result["predicate"]["configuration"][0]["digest"]["sha256"] == hashlib.sha256(payload).hexdigest()
    subjects = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    adapter_dir, base_dir = project / "models" / "adapter", project / "models" / "base"
    assert subjects["adapter/"] == model_directory_digest(adapter_dir) and subjects["model/"] == \
        model_directory_digest(base_dir)
    try:  # the digest model-signing's own code gives the directory, where it is installed
        import model_signing
        from model_signing._signing.signing import Payload
    except ImportError:
        pass
    else:
        theirs = Payload(model_signing.hashing.hash(adapter_dir)).statement.pb.subject[0].digest["sha256"]
        assert subjects["adapter/"] == theirs
    # the deploy gives the model directories whole, and trusts the old and the new key while rotating
    code, out, err = cli("verify-attestation", att, "--public-key", tmp / "other.pub", "--public-key",
                         tmp / "key.pub", "--artifact", adapter_dir, "--artifact", base_dir, "--json")
    assert code == 0, err
    checked = json.loads(out)
    assert checked["key_id"] == key_id(load_public_key(tmp / "key.pub")) and checked["test_result"] == str(beside)
    # one more file in a copy of the adapter directory is another model (model-signing would say so too)
    copy = tmp_path / "adapter"
    shutil.copytree(adapter_dir, copy)
    (copy / "README.md").write_text("changed after the gate")
    code, err = _verify(cli, att, tmp / "key.pub", copy, base_dir)
    assert code == 1 and "model-signing digest" in err and "no subject" in err, err
    # a test result signed for another run (the failed one) beside this attestation is refused
    other = statement_for(found["fail"], json.loads((found["fail"] / "report.json").read_text()),
                          read_manifest_file(found["fail"]))
    from releasegate.pipeline.attest_test_result import make_test_result
    other_payload = json.dumps(other, sort_keys=True).encode()
    forged = make_test_result(other, other_payload)
    forged["predicate"]["result"] = "PASSED"
    beside.write_text(json.dumps(sign_envelope(json.dumps(forged).encode(), load_private_key(tmp / "key"))))
    code, err = _verify(cli, att, tmp / "key.pub", adapter_dir, base_dir)
    assert code == 1 and "test result" in err, err


def test_a_model_file_changed_between_the_run_and_its_attestation_is_refused(runs, tmp_path):
    from releasegate.errors import ReleaseRefused

    tmp, found = runs
    run = found["pass"]
    manifest = read_manifest_file(run)
    adapter = next(e for e in manifest["inputs"] if e["name"] == "adapter/adapter_model.safetensors")
    manifest["inputs"] = [{**e, "sha256": "0" * 64} if e is adapter else e for e in manifest["inputs"]]
    with pytest.raises(ReleaseRefused, match="adapter/adapter_model.safetensors changed since the run"):
        statement_for(run, json.loads((run / "report.json").read_text()), manifest)


def test_attest_reads_each_model_file_once(runs, cli, monkeypatch):
    """The run's inputs are verified unchanged, then each model directory's model-signing digest is made: the
    second pass takes the digests of the first (`border.files.hash_once`) rather than reading gigabytes again."""
    import os

    import releasegate.border.files as files

    tmp, found = runs
    read: list[str] = []
    real = hashlib.file_digest

    def counting(fh, name):
        read.append(os.readlink(f"/proc/self/fd/{fh.raw._fh.fileno()}"))  # the file the descriptor reads
        return real(fh, name)

    monkeypatch.setattr(files.hashlib, "file_digest", counting)
    code, _, err = _attest(cli, tmp, found["pass"], "once")
    assert code == 0, err
    models = [p for p in read if "/models/" in p]
    assert models and len(models) == len(set(models)), sorted(models)


def test_a_model_file_written_after_its_verification_is_not_attested(runs, cli, monkeypatch):
    """Between the check that every input is unchanged and the directory digest, the adapter is rewritten (same
    size, its modification time set back): the digest reads it again, and attest refuses."""
    import os

    import releasegate.pipeline.attest as attest
    from test_hash_once import _rewrite_keeping_size_and_mtime

    tmp, found = runs
    adapter = found["pass"].parents[1] / "models" / "adapter" / "adapter_model.safetensors"
    original = adapter.read_bytes()
    real = attest.releasable_run

    def verified_then_written(run_dir):
        run = real(run_dir)
        flipped = bytearray(original)
        flipped[-1] ^= 1
        _rewrite_keeping_size_and_mtime(adapter, bytes(flipped), os.stat(adapter).st_ctime_ns)
        return run

    monkeypatch.setattr(attest, "releasable_run", verified_then_written)
    try:
        code, att, err = _attest(cli, tmp, found["pass"], "late")
    finally:
        adapter.write_bytes(original)
    assert code == 1 and "adapter/adapter_model.safetensors changed since the run hashed it" in err, err


def test_a_hidden_file_added_to_a_model_directory_after_the_run_is_refused(runs, cli, tmp_path):
    """The run's inputs leave hidden files out, model-signing's digest takes them in: the run records each model
    directory's digest, so a file added since (hidden or not) is not attested as if it had passed."""
    from releasegate.border.model_digest import model_directory_digest

    tmp, found = runs
    run = found["pass"]
    adapter = next(d for d in read_manifest_file(run)["directories"] if d["role"] == "adapter")
    assert adapter["signing_sha256"] == model_directory_digest(Path(adapter["path"]))
    added = Path(adapter["path"]) / ".extra_weights.safetensors"
    added.write_bytes(b"not the bytes that passed")
    try:
        code, out, err = cli("attest", run, "--key", tmp / "key", "-o", tmp_path / "a.json")
        assert code == 1 and "adapter/" in err and "other files than when the run read it" in err, err
        assert not (tmp_path / "a.json").exists()
    finally:
        added.unlink()
    code, _, err = cli("attest", run, "--key", tmp / "key", "-o", tmp_path / "b.json")
    assert code == 0, err
