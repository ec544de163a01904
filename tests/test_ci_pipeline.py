"""A team's pipeline end to end, as the shipped GitHub workflow runs it (docs/release-gate.github-workflow.yml,
step by step with `test_ci_flow.Runner`), against the real parts: a real llama.cpp server serving the team's GGUF
and adapter (the session's `llamacpp_server`, its files committed under models/ as the team ships them), a real
MLflow registry in a SQLite file (MLFLOW_TRACKING_URI, as the deploy job's secret names it) and a loopback
webhook receiver (DEPLOY_WEBHOOK). Every job checks out into the same emptied workspace, as a hosted runner's
fresh machine does: a job reaches the next only through the reports branch and the artifacts.

The pull request's check on a required-review domain is NEEDS_REVIEW (exit 3) with its review CSV; a reviewer the
rubric names labels it, signs it and commits it; the labels job imports, gates (PASS), blesses and attests; the
deploy job verifies the attestation against the served files and promotes: the registry's version names every
served file by its sha256, and the webhook receives the signed statement, which verifies against the same files.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from test_ci_flow import WORKFLOW, Runner, _git, _stand_ins
from test_promote import Receiver

pytestmark = pytest.mark.slow  # a real llama.cpp server, a real MLflow registry: about 40 s

SHIFTED = ROOT / "suites" / "demo" / "tickets_shifted.jsonl"
TOKEN = "hook-token-0099-never-printed"
HOOK_SECRET = "/services/T0TEAM/B0DEPLOY/pathSECRETpath"
SERVED = ("models/support.gguf", "models/support-good.gguf")
"""The files the team's llama.cpp server loads: the base model and the adapter it applies to every request."""


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _team_project(repo: Path, server, alice_pem: str) -> None:
    """A support team's project: its own suite (the customer_support domain, which the rubric requires reviewed),
    its rubric naming its one reviewer and her key, its served files committed, a config for the server."""
    (repo / "suites").mkdir()
    lines = SHIFTED.read_text(encoding="utf-8").splitlines()[:12]
    (repo / "suites" / "support.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (repo / "models").mkdir()
    for name, source in zip(SERVED, [server.model_path, *server.lora_paths], strict=True):
        shutil.copyfile(source, repo / name)  # byte for byte what the server loads
    key = "".join(f"        {line}\n" for line in alice_pem.splitlines())
    (repo / "rubrics").mkdir()
    (repo / "rubrics" / "support.yaml").write_text(
        "review:\n  required_domains: [customer_support]\n  min_reviewed: 4\n  reviewers:\n    - name: alice\n"
        "      key: |\n" + key + "criteria:\n  - {metric: error_rate, op: '<=', threshold: 0.0}\n"
        "  - {metric: accuracy, op: '>=', threshold: 0.6}\n")
    files = "".join(f"\n    - {name}" for name in SERVED)
    (repo / "releasegate.yaml").write_text(
        f"target:\n  backend: openai\n  base_url: {server.base_url}\n  model: {server.model}\n  concurrency: 4\n"
        f"  served_files:{files}\ngeneration: {{max_new_tokens: 32, temperature: 0}}\n"
        "suites:\n  - {path: suites/support.jsonl, answer: {type: json_fields, fields: [intent, priority]}}\n"
        "rubric: rubrics/support.yaml\n")
    (repo / "ci").mkdir()
    (repo / "ci" / "releasegate-0.1.0-py3-none-any.whl").write_bytes(b"the wheel make dist builds")
    (repo / ".gitignore").write_text("reports/\n.venv/\npassed.txt\n*.intoto.json\n")


def _label_and_sign(queue: Path, labels: Path, key: Path, cli) -> None:
    """What alice does: every row of the artifact's review CSV approved under her name, the file signed."""
    with queue.open(encoding="utf-8-sig", newline="") as fh:
        rows = [{**r, "label": "approve", "reviewer": "alice"} for r in csv.DictReader(fh)]
    assert rows, "the review CSV holds no row to label"
    labels.parent.mkdir(exist_ok=True)
    with labels.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert cli("review", "sign", labels, "--key", key)[0] == 0


def _commit(repo: Path, message: str) -> None:
    _git("add", "-A", cwd=repo)
    _git("commit", "-qm", message, cwd=repo)
    _git("push", "-q", "origin", "HEAD:main", cwd=repo)


def test_a_teams_pipeline_from_pull_request_to_a_registered_and_announced_release(
        llamacpp_server, tmp_path, cli, monkeypatch):
    pytest.importorskip("mlflow", reason="the [mlflow] extra is not installed (pip install 'releasegate[mlflow]')")
    from mlflow import MlflowClient

    for name, value in {"GIT_AUTHOR_NAME": "carol", "GIT_AUTHOR_EMAIL": "c@example.invalid",
                        "GIT_COMMITTER_NAME": "carol", "GIT_COMMITTER_EMAIL": "c@example.invalid"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("RELEASEGATE_CHANGE_AUTHOR", raising=False)
    _stand_ins(tmp_path / "bin")
    for who in ("alice", "release"):
        assert cli("attest", "--generate-key", tmp_path / f"{who}.key")[0] == 0
    origin, repo = tmp_path / "origin.git", tmp_path / "repo"
    _git("init", "-q", "--bare", "-b", "main", str(origin), cwd=tmp_path)
    _git("clone", "-q", str(origin), str(repo), cwd=tmp_path)
    _team_project(repo, llamacpp_server, (tmp_path / "alice.key.pub").read_text())
    (repo / "keys").mkdir()
    shutil.copyfile(tmp_path / "release.key.pub", repo / "keys" / "release.pub")
    _commit(repo, "support model")

    workflow = yaml.safe_load(WORKFLOW.read_text())
    # the team's one edit: the files its server loads, as target.served_files lists them
    workflow["jobs"]["deploy"]["env"]["SERVED_FILES"] = " ".join(SERVED)
    store = f"sqlite:///{tmp_path / 'registry' / 'mlflow.db'}"
    (tmp_path / "registry").mkdir()
    with Receiver() as hook:
        secrets = {"RELEASE_SIGNING_KEY": (tmp_path / "release.key").read_text(), "MLFLOW_TRACKING_URI": store,
                   "DEPLOY_WEBHOOK": hook.url + HOOK_SECRET, "DEPLOY_WEBHOOK_TOKEN": TOKEN}
        runner = Runner(tmp_path, origin, secrets, workspace=tmp_path / "workspace")
        pull_request = {"github.event_name": "pull_request", "github.run_id": "31", "github.run_attempt": "1",
                        "github.event.pull_request.user.login": "carol", "github.event.pull_request.number": "5",
                        "github.actor": "carol", "github.sha": "f00d", "github.token": "t"}

        # 1. the pull request: a required-review domain waits for labels (exit 3), its CSV in the artifact
        gate = runner.job(workflow, "gate", pull_request, {})
        run_id = gate["run_id"]
        assert gate["exit_code"] == "3", runner.log.read_text()
        artifact = tmp_path / "artifacts" / f"releasegate-{run_id}" / "reports" / run_id
        assert "What to label" in (artifact / "report.md").read_text()
        assert f"gh pr comment 5 --body-file reports/{run_id}/report.md" in runner.log.read_text()

        # 2. alice (named by the rubric, not the author) labels and signs; the change is merged
        _label_and_sign(artifact / "review_queue.csv", repo / "reviews" / f"{run_id}.csv", tmp_path / "alice.key",
                        cli)
        _commit(repo, "labels for " + run_id)

        # 3. on main: import, gate, bless, attest; the attestation and its test result are the job's artifact
        push = {**pull_request, "github.event_name": "push", "github.run_id": "32",
                "github.event.pull_request.user.login": "", "github.event.head_commit.author.username": "carol"}
        labels = runner.job(workflow, "labels", push, {"gate": gate})
        assert labels["attested"] == run_id
        blessed = json.loads(_git("show", "releasegate-reports:baselines.jsonl", cwd=origin).splitlines()[-1])
        assert blessed["run"] == run_id and blessed["name"] == "production"
        attestation = tmp_path / "artifacts" / "release-attestation" / "release.intoto.json"
        assert (attestation.parent / "release.test-result.intoto.json").is_file()  # both statements uploaded
        statement = json.loads(base64.b64decode(json.loads(attestation.read_text())["payload"]))
        subjects = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
        served_now = [Path(llamacpp_server.model_path), *map(Path, llamacpp_server.lora_paths)]
        # the attested digest is the sha256 of the very file the server has loaded, for each served file
        assert {f"served/{Path(n).name}": _sha256(p) for n, p in zip(SERVED, served_now, strict=True)}.items() \
            <= subjects.items()
        assert statement["predicate"]["served_files"]["as"] == "declared"
        assert statement["predicate"]["verdict"] == "PASS"

        # 4. deploy: verify against the checked-out served files, then promote to MLflow and the webhook
        runner.job(workflow, "deploy", push, {"labels": labels})
        assert any("Verify the attestation" in s for s in runner.ran)
        assert any("Promote" in s for s in runner.ran)
        assert len(hook.bodies) == 1  # delivered once, at the first attempt
        body, headers = hook.bodies[0], hook.headers[0]

    assert headers["Authorization"] == f"Bearer {TOKEN}"
    assert body["event"] == "releasegate.promote" and body["summary"]["run_id"] == run_id
    assert body["summary"]["verdict"] == "PASS" and body["summary"]["report"] == f"{run_id}/report.json"
    received = tmp_path / "received.intoto.json"
    received.write_text(json.dumps(body["attestation"]))
    (tmp_path / "received.test-result.intoto.json").write_text(json.dumps(body["test_result"]))
    code, out, err = cli("verify-attestation", received, "--key", tmp_path / "release.key.pub",
                         *[a for p in served_now for a in ("--artifact", p)], "--json")
    assert code == 0, err  # what the receiver got verifies against the bytes the server serves
    checked = json.loads(out)
    assert checked["run_id"] == run_id and checked["test_result"].endswith("received.test-result.intoto.json")
    test_result = json.loads(base64.b64decode(body["test_result"]["payload"]))
    assert test_result["predicateType"] == "https://in-toto.io/attestation/test-result/v0.1"
    assert test_result["predicate"]["result"] == "PASSED" and test_result["subject"] == statement["subject"]

    client = MlflowClient(tracking_uri=store, registry_uri=store)
    version = client.get_model_version_by_alias("support-bot", "production")
    tags = version.tags
    artifacts = sorted((json.loads(v) for k, v in tags.items() if k.startswith("releasegate.artifact.")),
                       key=lambda a: a["name"])
    assert [(a["role"], a["name"], a["sha256"]) for a in artifacts] == sorted(
        ("served", f"served/{Path(n).name}", _sha256(p)) for n, p in zip(SERVED, served_now, strict=True))
    assert tags["releasegate.run_id"] == run_id and tags["releasegate.verdict"] == "PASS"
    assert tags["releasegate.report"] == f"{run_id}/report.json"
    assert not any(str(tmp_path) in v for v in tags.values()), tags  # no path of the runner in the registry
    # the next promotion of the same run finds the registry MLflow made, and tags its version, not a second one
    code, out, err = cli("promote", tmp_path / "workspace" / "reports" / run_id, "--mlflow-model", "support-bot",
                         "--alias", "canary", "--mlflow-uri", store, "--json")
    assert code == 0 and json.loads(out)["mlflow"]["version"] == str(version.version), err
    printed = "\n".join(runner.printed)
    assert "release.test-result.intoto.json agrees" in printed and "is now @production" in printed, printed[-3000:]
    assert TOKEN not in printed and "SECRET" not in printed  # the webhook shown by its origin alone
