"""Attacks on the release surfaces (history, bless, a blessed baseline, attest, verify-attestation, promote), one
test per attack, each named after it: what a deploy step, a gate or a trend page must never accept or show."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from conftest import ROOT, write_jsonl
from releasegate.border.dsse import load_private_key, sign_envelope
from releasegate.pipeline.attest import PREDICATE_TYPE, STATEMENT_TYPE
from test_bless import LENIENT, RIGHT, WRONG, bless, check, passing_project, set_rubric


def _rubric_against(project: Path, **extra) -> None:
    set_rubric(project, {**LENIENT, "baseline": {"blessed": "prod", "reports": "../reports", **extra}})


def _forge(run: Path) -> None:
    """The run's records rewritten and its seal rewritten to match: whoever can write the run can do both."""
    records = run / "records.jsonl"
    records.write_text(records.read_text().replace('\\"intent\\": \\"billing\\"', '\\"intent\\": \\"other\\"'))
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["sealed"]["files"]["records.jsonl"]["sha256"] = hashlib.sha256(records.read_bytes()).hexdigest()
    manifest["sealed"]["files"]["records.jsonl"]["bytes"] = records.stat().st_size
    (run / "manifest.json").write_text(json.dumps(manifest))


def test_compare_by_name_with_a_blessed_run_changed_since_says_so(project, cli):
    passing_project(project)
    base = check(cli, project, "base")
    assert bless(cli, base)[0] == 0
    cand = check(cli, project, "cand")
    _forge(base)
    code, out, err = cli("compare", "prod", cand, "--reports", project / "reports", "--json")
    assert code == 3 and "changed since it was blessed" in out + err and json.loads(out)["verdict"] == "INCONCLUSIVE"


def _signed(tmp: Path, cli, statement: dict | bytes) -> tuple[Path, Path]:
    """`statement` signed with a fresh real key, as a deploy would receive it; the envelope and the public key."""
    if not (tmp / "key").exists():
        assert cli("attest", "--generate-key", tmp / "key")[0] == 0
    payload = statement if isinstance(statement, bytes) else json.dumps(statement).encode()
    envelope = tmp / "statement.intoto.json"
    envelope.write_text(json.dumps(sign_envelope(payload, load_private_key(tmp / "key"))))
    return envelope, tmp / "key.pub"


def _shipped(tmp: Path) -> dict[str, Path]:
    (tmp / "release").mkdir(exist_ok=True)
    files = {"model/model.safetensors": b"weights " * 64, "model/tokenizer.json": b'{"tokenizer": 1}',
             "adapter/adapter_model.safetensors": b"adapter " * 32}
    for name, data in files.items():
        (tmp / "release" / Path(name).name).write_bytes(data)
    return {name: tmp / "release" / Path(name).name for name in files}


def _statement(files: dict[str, Path], verdict: str = "PASS", criteria: list | None = None) -> dict:
    subjects = [{"name": n, "digest": {"sha256": hashlib.sha256(p.read_bytes()).hexdigest()}} for n, p in files.items()]
    criteria = criteria if criteria is not None else [{"name": "accuracy", "verdict": "pass", "value": 0.9}]
    return {"_type": STATEMENT_TYPE, "subject": subjects, "predicateType": PREDICATE_TYPE,
            "predicate": {"verdict": verdict, "run": {"run_id": "r1"}, "rubric": {"sha256": "0" * 64},
                          "criteria": criteria, "weights": [
                              {"name": s["name"], "sha256": s["digest"]["sha256"]} for s in subjects
                              if s["name"].endswith(".safetensors")]}}


def _verify(cli, envelope: Path, key: Path, *artifacts: Path) -> tuple[int, str]:
    args: list = ["verify-attestation", envelope, "--key", key]
    for a in artifacts:
        args += ["--artifact", a]
    code, _, err = cli(*args)
    return code, err


def test_an_artifact_carrying_another_subjects_bytes_under_a_subject_name_is_refused(tmp_path, cli):
    files = _shipped(tmp_path)
    envelope, key = _signed(tmp_path, cli, _statement(files))
    assert _verify(cli, envelope, key, *files.values())[0] == 0
    swapped = tmp_path / "deploy" / "adapter_model.safetensors"  # the adapter's name, the tokenizer's bytes
    swapped.parent.mkdir()
    swapped.write_bytes(files["model/tokenizer.json"].read_bytes())
    code, err = _verify(cli, envelope, key, files["model/model.safetensors"], swapped)
    assert code == 1 and "adapter_model.safetensors" in err and "model/tokenizer.json" in err, err
    draft = tmp_path / "draft"  # the draft's weights shipped where the base model's go
    draft.mkdir()
    (draft / "model.safetensors").write_bytes(b"draft " * 64)
    files2 = {**files, "draft/model.safetensors": draft / "model.safetensors"}
    envelope, key = _signed(tmp_path, cli, _statement(files2))
    served = tmp_path / "srv" / "model" / "model.safetensors"
    served.parent.mkdir(parents=True)
    served.write_bytes((draft / "model.safetensors").read_bytes())
    code, err = _verify(cli, envelope, key, served)
    assert code == 1 and "named as subject model/model.safetensors" in err and "draft/model.safetensors" in err, err
    base, adapter = files["model/model.safetensors"], files["adapter/adapter_model.safetensors"]
    assert _verify(cli, envelope, key, draft / "model.safetensors", base, adapter)[0] == 0
    renamed = tmp_path / "deploy" / "served.safetensors"  # a name no subject has: its bytes alone decide
    renamed.write_bytes(adapter.read_bytes())
    assert _verify(cli, envelope, key, renamed, base, draft / "model.safetensors")[0] == 0
    # every weights file the run loaded must be given: leaving out the draft is refused, naming it
    code, err = _verify(cli, envelope, key, renamed, base)
    assert code == 1 and "also loaded draft/model.safetensors" in err, err


def test_a_signed_pass_whose_criteria_failed_is_refused(tmp_path, cli):
    files = _shipped(tmp_path)
    for criteria in ([{"name": "accuracy", "verdict": "fail", "value": 0.1}],
                     [{"name": "accuracy", "verdict": "pass"}, {"name": "forbidden", "verdict": "FAIL"}], []):
        envelope, key = _signed(tmp_path, cli, _statement(files, criteria=criteria))
        code, err = _verify(cli, envelope, key, *files.values())
        assert code == 1 and "criteri" in err, (criteria, err)


def test_a_signed_statement_with_two_verdict_keys_is_refused(tmp_path, cli):
    files = _shipped(tmp_path)
    text = json.dumps(_statement(files, verdict="FAIL"))
    text = text.replace('"verdict": "FAIL"', '"verdict": "FAIL", "verdict": "PASS"')  # a parser that keeps the last
    envelope, key = _signed(tmp_path, cli, text.encode())
    code, err = _verify(cli, envelope, key, *files.values())
    assert code == 1 and "duplicate" in err and "verdict" in err, err


def test_an_endpoint_run_with_a_local_tokenizer_is_not_attested_on_the_tokenizer_alone(tmp_path, cli):
    from releasegate.testing import StubBehaviour, StubServer
    from test_cache import make_project

    shutil.copy(ROOT / "models" / "demo" / "base" / "tokenizer.json", tmp_path / "tokenizer.json")
    with StubServer(StubBehaviour(tokens=4)) as stub:
        config = make_project(tmp_path, stub.base_url, cache="", extra="  tokenizer: tokenizer.json\n")
        code, _, err = cli("check", "-c", config, "--run-id", "served", "--no-progress")
    assert code == 0, err
    assert cli("attest", "--generate-key", tmp_path / "key")[0] == 0
    code, _, err = cli("attest", tmp_path / "reports" / "served", "--key", tmp_path / "key", "-o", tmp_path / "a.json")
    assert code == 1 and "behind the endpoint" in err and err.count("\n") == 1, err
    run = tmp_path / "reports" / "served"  # manifest.json, which no seal covers, rewritten to name a local backend
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**manifest, "target": {**manifest["target"], "backend": "hf"}}))
    code, _, err = cli("attest", run, "--key", tmp_path / "key", "-o", tmp_path / "a.json")
    assert code == 1 and "behind the endpoint" in err, err
    (run / "manifest.json").write_text(json.dumps({**manifest, "target": {**manifest["target"], "backend": "nope"}}))
    code, _, err = cli("attest", run, "--key", tmp_path / "key", "-o", tmp_path / "a.json")
    assert code == 1 and "does not know" in err, err
    info = json.loads((run / "run.json").read_text())  # run.json and its seal rewritten too: no weights were hashed
    (run / "run.json").write_text(json.dumps({**info, "backend": "hf"}))
    manifest["sealed"]["files"]["run.json"] = {"sha256": hashlib.sha256((run / "run.json").read_bytes()).hexdigest(),
                                               "bytes": (run / "run.json").stat().st_size}
    (run / "manifest.json").write_text(json.dumps({**manifest, "target": {**manifest["target"], "backend": "hf"}}))
    code, _, err = cli("attest", run, "--key", tmp_path / "key", "-o", tmp_path / "a.json")
    assert code == 1 and "no model weights" in err, err
    assert not (tmp_path / "a.json").exists()


def test_a_hand_written_blessing_of_a_failed_run_proves_nothing(project, cli):
    from releasegate.record.blessings import evidence_digest

    passing_project(project)
    assert bless(cli, check(cli, project, "base"))[0] == 0
    write_jsonl(project / "responses.jsonl", WRONG)
    failed = check(cli, project, "failed", expect=1)
    journal = project / "reports" / "baselines.jsonl"  # a line appended by hand, its digest computed to match
    entry = json.loads(journal.read_text())
    digest = evidence_digest(json.loads((failed / "manifest.json").read_text()))
    journal.write_text(journal.read_text() + json.dumps({**entry, "run": "failed", "evidence_sha256": digest}) + "\n")
    write_jsonl(project / "responses.jsonl", RIGHT)
    _rubric_against(project)
    report = json.loads((check(cli, project, "cand", expect=3) / "report.json").read_text())
    assert any("is FAIL, not PASS" in p for p in report["comparison"]["baseline_problems"]), report["comparison"]
    code, out, _ = cli("compare", "prod", project / "reports" / "cand", "--reports", project / "reports", "--json")
    assert code == 3 and "is FAIL, not PASS" in out


def test_a_run_directory_with_a_pass_report_it_was_not_sealed_with_never_lists_as_pass(project, cli):
    passing_project(project)
    write_jsonl(project / "responses.jsonl", WRONG)
    failed = check(cli, project, "failed", expect=1)
    crafted = project / "reports" / "crafted"  # a FAIL run copied, its report rewritten to say PASS
    shutil.copytree(failed, crafted)
    report = json.loads((crafted / "report.json").read_text())
    criteria = [{**c, "verdict": "pass"} for c in report["criteria"]]
    (crafted / "report.json").write_text(json.dumps({**report, "verdict": "PASS", "criteria": criteria}))
    unsealed = project / "reports" / "unsealed"
    shutil.copytree(crafted, unsealed)
    manifest = json.loads((unsealed / "manifest.json").read_text())
    (unsealed / "manifest.json").write_text(json.dumps({k: v for k, v in manifest.items() if k != "sealed"}))
    code, out, _ = cli("history", "--reports", project / "reports", "--json")
    shown = {r["dir"]: r["verdict"] for r in json.loads(out)["runs"]}
    assert shown == {"failed": "FAIL", "crafted": "PASS (edited since sealed)", "unsealed": "PASS (unsealed)"}
    code, out, _ = cli("history", "--reports", project / "reports", "--verdict", "PASS", "--json")
    assert json.loads(out)["runs"] == []
    assert cli("history", "--reports", project / "reports", "--html")[0] == 0
    page = (project / "reports" / "history.html").read_text()
    assert 'class="pill pass"' not in page and 'fill="#1a7f37"' not in page  # no green marker, no PASS pill


def test_a_nan_max_age_days_that_would_never_find_a_baseline_stale_is_refused(project, cli):
    passing_project(project)
    assert bless(cli, check(cli, project, "base"))[0] == 0
    rubric = project / "rubrics" / "example.yaml"
    _rubric_against(project, max_age_days=30, on_stale="inconclusive")
    rubric.write_text(rubric.read_text().replace("max_age_days: 30", "max_age_days: .nan"))
    code, _, err = cli("check", "-c", project / "releasegate.yaml", "--run-id", "cand", "--no-progress")
    assert code == 2 and "baseline.max_age_days" in err and "not a finite number" in err, err
    assert not (project / "reports" / "cand").exists()


def test_an_escape_sequence_in_who_or_why_never_reaches_baselines_jsonl_or_the_log(project, cli):
    passing_project(project)
    run = check(cli, project, "base")
    for option, value in (("--by", "ana\x1b]0;owned\x07\x1b[2J"), ("--reason", "ok\x1b[8mhidden"),
                          ("--reason", "fine \u202eevil"), ("--by", "ana\nblessed_by: root")):
        args = {"--by": "ana", "--reason": "shipped", option: value}
        code, out, err = cli("bless", run, "--as", "prod", *(x for kv in args.items() for x in kv))
        assert code == 2 and option in err and "\x1b" not in out + err, (option, err)
    assert not (project / "reports" / "baselines.jsonl").exists()


def test_an_escape_sequence_in_a_signed_verdict_stays_text_in_the_refusal(tmp_path, cli):
    files = _shipped(tmp_path)
    envelope, key = _signed(tmp_path, cli, _statement(files, verdict="FAIL\x1b[2J\x1b]0;owned\x07" + "x" * 5000))
    code, err = _verify(cli, envelope, key, *files.values())
    assert code == 1 and "\x1b" not in err and "\x07" not in err and "FAIL␛[2J" in err and len(err) < 400, err


def test_a_blessing_line_edited_to_look_fresh_does_not_hide_an_old_baseline(project, cli, monkeypatch):
    import releasegate.pipeline.check as check_stage

    passing_project(project)
    then = (datetime.now(UTC) - timedelta(days=40)).isoformat(timespec="seconds")
    with monkeypatch.context() as patched:  # the baseline run measured 40 days ago
        patched.setattr(check_stage, "now", lambda: then)
        base = check(cli, project, "base")
    assert json.loads((base / "run.json").read_text())["created_at"] == then
    assert bless(cli, base)[0] == 0
    journal = project / "reports" / "baselines.jsonl"
    for fresh in (datetime.now(UTC).isoformat(timespec="seconds"),
                  (datetime.now(UTC) + timedelta(days=400)).isoformat(timespec="seconds")):
        entry = json.loads(journal.read_text().splitlines()[0])
        journal.write_text(json.dumps({**entry, "run_created_at": fresh}) + "\n")
        _rubric_against(project, max_age_days=30, on_stale="inconclusive")
        report = json.loads((check(cli, project, f"cand-{fresh[:10]}", expect=3) / "report.json").read_text())
        assert any("more than max_age_days" in p for p in report["comparison"]["baseline_problems"]), fresh


def test_a_blessing_line_edited_to_todays_packages_does_not_hide_a_version_change(project, cli):
    passing_project(project)
    base = check(cli, project, "base")
    info = json.loads((base / "run.json").read_text())  # the baseline's run.json: measured with another releasegate
    info["versions"]["releasegate"] = "0.0.1"
    (base / "run.json").write_text(json.dumps(info))
    manifest = json.loads((base / "manifest.json").read_text())
    manifest["sealed"]["files"]["run.json"] = {"sha256": hashlib.sha256((base / "run.json").read_bytes()).hexdigest(),
                                               "bytes": (base / "run.json").stat().st_size}
    (base / "manifest.json").write_text(json.dumps(manifest))
    assert bless(cli, base)[0] == 0
    journal = project / "reports" / "baselines.jsonl"  # its blessing says today's versions (as a hand edit would)
    entry = json.loads(journal.read_text())
    assert entry["packages"].get("releasegate") != "0.0.1"
    _rubric_against(project, on_stale="inconclusive")
    report = json.loads((check(cli, project, "cand", expect=3) / "report.json").read_text())
    assert any("releasegate 0.0.1 ->" in p for p in report["comparison"]["baseline_problems"]), report["comparison"]


def test_a_signed_statement_without_a_run_id_is_checked_not_crashed_on(tmp_path, cli):
    files = _shipped(tmp_path)
    for run in ({}, {"run_id": "r1\x1b[2J\x1b]0;owned\x07"}):
        statement = _statement(files)
        statement["predicate"].update(run=run, rubric={})
        envelope, key = _signed(tmp_path, cli, statement)
        artifacts = [a for f in files.values() for a in ("--artifact", f)]
        code, out, err = cli("verify-attestation", envelope, "--key", key, *artifacts)
        assert code == 0 and "attestation verified" in out and "\x1b" not in out + err, (run, err)


def test_a_model_folder_with_a_hash_sign_in_its_path_keeps_its_files_as_subjects(project, cli):
    from releasegate.pipeline.attest import statement_for

    passing_project(project)
    run = check(cli, project, "r1")
    folder = "/models/release#2"
    manifest = {"inputs": [
        {"role": "model:weights", "path": f"{folder}/model.safetensors", "name": "model/model.safetensors",
         "sha256": "a" * 64},
        {"role": "model:tokenizer", "path": f"{folder}/tokenizer_config.json", "name": "model/tokenizer_config.json",
         "sha256": "b" * 64},
        {"role": "model:chat_template", "path": f"{folder}/tokenizer_config.json#chat_template",
         "name": "model/tokenizer_config.json#chat_template", "sha256": "c" * 64}]}
    statement = statement_for(run, json.loads((run / "report.json").read_text()), manifest)
    assert [s["name"] for s in statement["subject"]] == ["model/model.safetensors", "model/tokenizer_config.json"]


def test_a_report_rewritten_after_it_was_indexed_is_listed_as_it_is_now(project, cli):
    passing_project(project)
    run = check(cli, project, "r1")
    code, out, _ = cli("history", "--reports", project / "reports", "--json")
    assert [r["verdict"] for r in json.loads(out)["runs"]] == ["PASS"]
    report = json.loads((run / "report.json").read_text())  # rewritten outside releasegate (not resealed)
    (run / "report.json").write_text(json.dumps({**report, "verdict": "PASS", "note": "edited"}))
    later = time.time() + 5  # a clock second later than the row was indexed, whatever the file system keeps
    os.utime(run / "report.json", (later, later))
    code, out, _ = cli("history", "--reports", project / "reports", "--verdict", "PASS", "--json")
    assert json.loads(out)["runs"] == []
    code, out, _ = cli("history", "--reports", project / "reports", "--json")
    assert [r["verdict"] for r in json.loads(out)["runs"]] == ["PASS (edited since sealed)"]
