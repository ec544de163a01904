"""Signed blessings: `bless --key` signs the baselines.jsonl line, and a rubric's `baseline.signed_by` counts only
a blessing one of its keys signed. Whoever can append to the reports folder can write a line naming any run
(its report.json edited to PASS): without keys that line is the name's meaning; with them it names nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from test_bless import LENIENT, WRONG, check, passing_project, set_rubric


def keys(cli, folder: Path, name: str) -> tuple[Path, str]:
    """A new key pair: the private key's path and the public key's PEM."""
    code, _, err = cli("attest", "--generate-key", folder / name)
    assert code == 0, err
    return folder / name, (folder / f"{name}.pub").read_text()


def bless(cli, run: Path, key: Path | None, name: str = "prod", reason: str = "shipped") -> tuple[int, str, str]:
    return cli("bless", run, "--as", name, "--reason", reason, "--by", "ci", *(["--key", key] if key else []))


def against(project: Path, signers: list[tuple[str, str]], **extra) -> None:
    set_rubric(project, {**LENIENT, "baseline": {"blessed": "prod", "reports": "../reports", **extra,
                                                 "signed_by": [{"name": n, "key": k} for n, k in signers]}})


def lines(project: Path) -> list[dict]:
    return [json.loads(x) for x in (project / "reports" / "baselines.jsonl").read_text().splitlines()]


def append(project: Path, entry: dict) -> None:
    with open(project / "reports" / "baselines.jsonl", "a") as fh:
        fh.write(json.dumps(entry, sort_keys=True) + "\n")


def comparison(run: Path) -> dict:
    return json.loads((run / "report.json").read_text())["comparison"]


@pytest.fixture
def signed(project, cli, tmp_path):
    """A passing run blessed as prod with the release key, and a failing run made to look blessed: its
    report.json edited to PASS and a line for it appended by hand (as `bless` writes one, without a key)."""
    passing_project(project)
    key, pem = keys(cli, tmp_path, "release.key")
    base = check(cli, project, "base")
    code, out, err = bless(cli, base, key)
    assert code == 0 and "signed" in out, err
    (project / "responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in WRONG))
    bad = check(cli, project, "bad", expect=1)
    report = json.loads((bad / "report.json").read_text())
    (bad / "report.json").write_text(json.dumps({**report, "verdict": "PASS"}))
    manifest = json.loads((bad / "manifest.json").read_text())
    edited = hashlib.sha256((bad / "report.json").read_bytes()).hexdigest()
    sealed = manifest["sealed"]["files"]["report.json"]
    first_seal, sealed["sha256"] = sealed["sha256"], edited  # the seal rewritten to match (no key needed)
    (bad / "manifest.json").write_text(json.dumps(manifest))
    from releasegate.record.blessings import evidence_digest

    forged = {**lines(project)[0], "run": "bad", "run_id": "bad", "signature": None,
              "evidence_sha256": evidence_digest(manifest)}
    append(project, forged)
    passing_project(project)  # the candidate answers right again
    return project, key, pem, base, bad, first_seal


def test_a_signed_blessing_is_what_the_name_means_and_a_forged_line_names_nothing(signed, cli):
    project, _, pem, base, bad, _ = signed
    assert lines(project)[0]["signature"]["payloadType"] == "application/vnd.releasegate.blessing+json"
    set_rubric(project, {**LENIENT, "baseline": {"blessed": "prod", "reports": "../reports"}})
    unsigned = comparison(check(cli, project, "trusting", expect=3))
    assert unsigned["baseline_run"] == "bad"  # no keys: the last line anyone wrote is the name's meaning
    assert not unsigned["baseline_problems"]  # and with its seal rewritten too, nothing tells it apart
    against(project, [("release-bot", pem)])
    found = comparison(check(cli, project, "cand", expect=3))
    assert found["baseline_run"] == base.name and not found["baseline_problems"]
    assert found["baseline_blessing"]["signer"] == "release-bot"
    code, out, err = cli("report", project / "reports" / "cand", "--format", "md")
    assert code in (0, 3) and "signed by release-bot" in (project / "reports" / "cand" / "report.md").read_text()


def test_a_report_edited_to_pass_under_its_seal_is_no_blessed_verdict(signed, cli):
    project, _, _, _, bad, first_seal = signed
    manifest = json.loads((bad / "manifest.json").read_text())
    manifest["sealed"]["files"]["report.json"]["sha256"] = first_seal  # the seal as the gate wrote it
    (bad / "manifest.json").write_text(json.dumps(manifest))
    set_rubric(project, {**LENIENT, "baseline": {"blessed": "prod", "reports": "../reports"}})
    found = comparison(check(cli, project, "trusting", expect=3))
    assert found["baseline_run"] == "bad"
    assert any("without a verdict its seal vouches for, not PASS" in p for p in found["baseline_problems"])


def test_a_run_whose_only_blessings_are_unsigned_or_copied_proves_nothing(signed, cli, tmp_path):
    project, _, pem, _, bad, _ = signed
    good_signature = lines(project)[0]["signature"]
    append(project, {**lines(project)[1], "signature": good_signature})  # a valid signature over another line
    against(project, [("release-bot", pem)], run="../reports/bad")  # the run pinned, as a run's snapshot does
    found = comparison(check(cli, project, "cand", expect=3))
    assert found["baseline_run"] == bad.name
    assert any("no blessing signed by a key of baseline.signed_by (release-bot)" in p
               for p in found["baseline_problems"]), found["baseline_problems"]
    _, other = keys(cli, tmp_path, "other.key")
    against(project, [("someone", other)])
    code, _, err = cli("check", "-c", project / "releasegate.yaml", "--run-id", "x", "--no-progress")
    assert code == 2 and "signed by a key of baseline.signed_by" in err and "blessed" in err, err


def test_an_edited_signed_line_is_no_longer_signed(signed, cli):
    project, _, pem, _, _, _ = signed
    entries = lines(project)
    (project / "reports" / "baselines.jsonl").write_text(
        json.dumps({**entries[0], "reason": "edited later"}) + "\n" + json.dumps(entries[1]) + "\n")
    against(project, [("release-bot", pem)])
    code, _, err = cli("check", "-c", project / "releasegate.yaml", "--run-id", "x", "--no-progress")
    assert code == 2 and "no baseline blessed as 'prod' signed by" in err, err


def test_bad_keys_are_one_line_naming_where(signed, cli, tmp_path):
    project, _, _, base, _, _ = signed
    against(project, [("release-bot", "-----BEGIN PUBLIC KEY-----\nnot a key\n-----END PUBLIC KEY-----\n")])
    code, _, err = cli("check", "-c", project / "releasegate.yaml", "--run-id", "x", "--no-progress")
    assert code == 2 and "baseline.signed_by[0].key (release-bot) is not an Ed25519 public key" in err
    assert err.count("\n") <= 2 and "Traceback" not in err
    before = (project / "reports" / "baselines.jsonl").read_text()
    junk = tmp_path / "junk.key"
    junk.write_text("not a key")
    code, _, err = bless(cli, base, junk)
    assert code == 2 and "junk.key" in err and "Traceback" not in err
    assert (project / "reports" / "baselines.jsonl").read_text() == before
