"""The shipped GitHub Actions workflow (docs/release-gate.github-workflow.yml) run step by step, in order, on a
project in a git repository with a bare `origin`: every `run:` step of the jobs gate, labels and deploy is executed
in bash (-eo pipefail, as the runner does) with its `if:`, `env:` and `${{ }}` expressions evaluated; a `uses:`
step is replaced by the shell it stands for: actions/checkout -> a clone of origin, actions/setup-python ->
nothing (the interpreter is this one), upload-artifact / download-artifact -> a copy to and from a folder,
action-junit-report -> nothing. `python -m venv` / `pip install` of the install step are answered by a stand-in
`python` that makes .venv/bin/releasegate run this checkout's releasegate; `gh` by one that records the comment.

The flow: the pull request's check is NEEDS_REVIEW (exit 3) with the review CSV in its artifact and the comment
saying what to label; a reviewer the rubric names labels and signs it, commits reviews/RUN.csv and its signature
and the change is merged; the labels job imports, gates (PASS), blesses and attests the run, the reports folder
kept on its branch; the deploy job verifies the attestation against the served file."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, write_jsonl
from test_promote import Receiver

pytestmark = pytest.mark.slow  # every step of three jobs, twice: about a minute

WORKFLOW = ROOT / "docs" / "release-gate.github-workflow.yml"
STANDS_FOR = {"actions/checkout": "checkout", "actions/setup-python": "nothing", "actions/upload-artifact": "upload",
              "actions/download-artifact": "download", "mikepenz/action-junit-report": "nothing"}


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _stand_ins(bin_dir: Path) -> None:
    bin_dir.mkdir()
    shim = f'#!/bin/sh\nPYTHONPATH="{ROOT / "src"}" exec "{sys.executable}" -m releasegate "$@"\n'
    (bin_dir / "python").write_text(
        "#!/bin/sh\n"
        'if [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin"; printf \'%s\' "$RG_SHIM" > "$3/bin/releasegate"; '
        f'chmod +x "$3/bin/releasegate"; ln -sf "$0" "$3/bin/python"; exit 0; fi\n'
        'if [ "$1 $2" = "-m pip" ]; then echo "pip $*" >> "$RG_LOG"; exit 0; fi\n'
        f'exec "{sys.executable}" "$@"\n')
    (bin_dir / "gh").write_text('#!/bin/sh\necho "gh $*" >> "$RG_LOG"\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    (bin_dir / "shim.txt").write_text(shim)


def _project(repo: Path, alice_pem: str) -> None:
    (repo / "suites").mkdir()
    write_jsonl(repo / "suites" / "support.jsonl", [
        {"id": f"c{i}", "messages": [{"role": "user", "content": f"q{i}"}], "expected": f"a{i}",
         "tags": {"domain": "medical"}} for i in range(12)])
    write_jsonl(repo / "replies.jsonl", [{"id": f"c{i}", "output": f"a{i}"} for i in range(12)])
    (repo / "models").mkdir()
    (repo / "models" / "support.gguf").write_bytes(b"GGUF" + bytes(range(256)) * 4)
    key = "".join(f"        {line}\n" for line in alice_pem.splitlines())
    (repo / "rubrics").mkdir()
    (repo / "rubrics" / "support.yaml").write_text(
        "review:\n  required_domains: [medical]\n  min_reviewed: 4\n  reviewers:\n    - name: alice\n      key: |\n"
        + key + 'criteria:\n  - {name: accuracy, metric: accuracy, op: ">=", threshold: 0.5}\n')
    (repo / "releasegate.yaml").write_text(
        "target: {backend: replay, responses: replies.jsonl, served_files: [models/support.gguf]}\n"
        "suites:\n  - path: suites/support.jsonl\n    answer: {type: exact}\nrubric: rubrics/support.yaml\n")
    (repo / "ci").mkdir()
    (repo / "ci" / "releasegate-0.1.0-py3-none-any.whl").write_bytes(b"the wheel make dist builds")
    (repo / ".gitignore").write_text("reports/\n.venv/\npassed.txt\nrelease.intoto.json\n")


def _value(expr: str, ctx: dict) -> object:
    """A GitHub expression as the workflow uses them: names, '' literals, ==, !=, &&, ||, !, always()."""
    text = expr.replace("&&", " and ").replace("||", " or ").replace("always()", "True")
    text = re.sub(r"!(?!=)", " not ", text)
    names = re.findall(r"\b[a-z_][\w.-]*[\w]\b", text)
    env = {}
    for i, name in enumerate(sorted(set(names), key=len, reverse=True)):
        if name in ("and", "or", "not", "True"):
            continue
        token = f"_v{i}"
        env[token] = ctx.get(name, "")
        text = re.sub(rf"(?<![\w.']){re.escape(name)}(?![\w.'])", token, text)
    return eval(text, {"__builtins__": {}}, env)  # noqa: S307 - the test's own workflow expressions


def _sub(text: str, ctx: dict) -> str:
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: str(_value(m.group(1), ctx)), str(text))


class Runner:
    """`workspace`: every job checks out into this one folder, emptied first, as a hosted runner's fresh machine
    checks out at the same path (/home/runner/work/REPO/REPO): nothing a job leaves behind reaches the next one
    except through the reports branch and the artifacts. Without it, each job has its own folder, job-NAME."""

    def __init__(self, tmp: Path, origin: Path, secrets: dict, workspace: Path | None = None):
        self.tmp, self.origin, self.secrets, self.workspace = tmp, origin, secrets, workspace
        self.artifacts = tmp / "artifacts"
        self.artifacts.mkdir()
        self.log = tmp / "log.txt"
        self.ran: list[str] = []
        self.printed: list[str] = []  # each run: step's stdout and stderr, as the job's log shows them

    def job(self, workflow: dict, name: str, event: dict, needs: dict) -> dict:
        job = workflow["jobs"][name]
        work = self.workspace or self.tmp / f"job-{name}"
        if self.workspace is not None:
            shutil.rmtree(work, ignore_errors=True)
        ctx = {**event, **{f"secrets.{k}": v for k, v in self.secrets.items()},
               **{f"needs.{j}.outputs.{k}": v for j, out in needs.items() for k, v in out.items()}}
        env = {k: _sub(v, ctx) for k, v in {**workflow.get("env", {}), **job.get("env", {})}.items()}
        ctx.update({f"env.{k}": v for k, v in env.items()})
        if "if" in job and not _value(job["if"], ctx):
            return {}
        for step in job["steps"]:
            if "if" in step and not _value(step["if"], ctx):
                continue
            step_env = {**env, **{k: _sub(v, ctx) for k, v in step.get("env", {}).items()}}
            if "uses" in step:
                self._uses(step, work, step_env)
                continue
            got = self._run(_sub(step["run"], ctx), work, step_env)
            if step.get("id"):
                ctx.update({f"steps.{step['id']}.outputs.{k}": v for k, v in got.items()})
            self.ran.append(f"{name}: {step.get('name', step['run'][:40])}")
        return {k: _sub(v, ctx) for k, v in job.get("outputs", {}).items()}

    def _uses(self, step: dict, work: Path, env: dict) -> None:
        action = STANDS_FOR[step["uses"].split("@")[0]]
        ctx = {f"env.{k}": v for k, v in env.items()}
        with_ = {k: _sub(v, ctx) for k, v in step.get("with", {}).items()}
        if action == "checkout":
            subprocess.run(["git", "clone", "-q", str(self.origin), str(work)], check=True)
        elif action == "upload":
            for line in with_["path"].split():
                source = work / line
                assert source.exists() or with_.get("if-no-files-found") != "error", f"{line}: no such file"
                if source.exists():
                    target = self.artifacts / with_["name"] / line
                    target.parent.mkdir(parents=True, exist_ok=True)
                    (shutil.copytree if source.is_dir() else shutil.copyfile)(source, target)
        elif action == "download":
            for f in (self.artifacts / with_["name"]).rglob("*"):
                if f.is_file():
                    shutil.copyfile(f, work / f.name)

    def _run(self, script: str, work: Path, env: dict) -> dict:
        out = self.tmp / "github_output"
        out.write_text("")
        full = {**os.environ, **env, "PATH": f"{self.tmp / 'bin'}:{os.environ['PATH']}", "GITHUB_OUTPUT": str(out),
                "GITHUB_STEP_SUMMARY": str(self.tmp / "summary.md"), "RUNNER_TEMP": str(self.tmp),
                "RG_LOG": str(self.log), "RG_SHIM": (self.tmp / "bin" / "shim.txt").read_text(), "CI": ""}
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=work, env=full,
                              capture_output=True, text=True, timeout=300)
        self.printed.append(done.stdout + done.stderr)
        assert done.returncode == 0, (script, done.stdout[-2000:], done.stderr[-2000:])
        return dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)


def test_the_shipped_workflow_runs_from_pull_request_to_a_verified_attestation(tmp_path, cli, monkeypatch):
    for name, value in {"GIT_AUTHOR_NAME": "carol", "GIT_AUTHOR_EMAIL": "c@example.invalid",
                        "GIT_COMMITTER_NAME": "carol", "GIT_COMMITTER_EMAIL": "c@example.invalid"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("RELEASEGATE_CHANGE_AUTHOR", raising=False)
    _stand_ins(tmp_path / "bin")
    assert cli("attest", "--generate-key", tmp_path / "alice.key")[0] == 0
    assert cli("attest", "--generate-key", tmp_path / "release.key")[0] == 0
    origin, repo = tmp_path / "origin.git", tmp_path / "repo"
    _git("init", "-q", "--bare", "-b", "main", str(origin), cwd=tmp_path)
    _git("clone", "-q", str(origin), str(repo), cwd=tmp_path)
    _project(repo, (tmp_path / "alice.key.pub").read_text())
    (repo / "keys").mkdir()
    shutil.copyfile(tmp_path / "release.key.pub", repo / "keys" / "release.pub")
    _git("add", "-A", cwd=repo)
    _git("commit", "-qm", "support model", cwd=repo)
    _git("push", "-q", "origin", "HEAD:main", cwd=repo)

    workflow = yaml.safe_load(WORKFLOW.read_text())
    runner = Runner(tmp_path, origin, {"RELEASE_SIGNING_KEY": (tmp_path / "release.key").read_text()})
    pull_request = {"github.event_name": "pull_request", "github.run_id": "7", "github.run_attempt": "1",
                    "github.event.pull_request.user.login": "carol", "github.event.pull_request.number": "12",
                    "github.actor": "carol", "github.sha": "abc", "github.token": "t"}
    gate = runner.job(workflow, "gate", pull_request, {})
    run_id = gate["run_id"]
    assert run_id == "gh-7-1" and gate["exit_code"] == "3"  # NEEDS_REVIEW: it waits for labels, no FAIL
    assert f"gh pr comment 12 --body-file reports/{run_id}/report.md" in runner.log.read_text()
    assert "What to label" in (tmp_path / "job-gate" / "reports" / run_id / "report.md").read_text()
    assert run_id in _git("ls-tree", "-r", "--name-only", "releasegate-reports", cwd=origin)  # durable

    # a reviewer the rubric names labels the CSV from the artifact, signs it and commits it; the change is merged
    queue = tmp_path / "artifacts" / f"releasegate-{run_id}" / "reports" / run_id / "review_queue.csv"
    with queue.open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        r["label"], r["reviewer"] = "approve", "alice"
    (repo / "reviews").mkdir()
    labels = repo / "reviews" / f"{run_id}.csv"
    with labels.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert cli("review", "sign", labels, "--key", tmp_path / "alice.key")[0] == 0
    _git("add", "reviews", cwd=repo)
    _git("commit", "-qm", "labels", cwd=repo)
    _git("push", "-q", "origin", "HEAD:main", cwd=repo)

    push = {**pull_request, "github.event_name": "push", "github.run_id": "8",
            "github.event.pull_request.user.login": "", "github.event.head_commit.author.username": "carol"}
    done = runner.job(workflow, "labels", push, {"gate": gate})
    assert done["attested"] == run_id
    baselines = _git("show", "releasegate-reports:baselines.jsonl", cwd=origin)
    assert json.loads(baselines.splitlines()[-1])["run"] == run_id  # the blessing kept on the reports branch
    runner.job(workflow, "deploy", push, {"labels": done})
    assert any("Verify the attestation" in s for s in runner.ran)
    statement = json.loads((tmp_path / "job-deploy" / "release.intoto.json").read_text())
    assert statement["payloadType"] == "application/vnd.in-toto+json"
    every_run = [s for j in ("gate", "labels", "deploy") for s in workflow["jobs"][j]["steps"] if "run" in s]
    assert len(runner.ran) >= len(every_run) - 1  # all but the pull-request-only or skipped ones ran


def test_an_unsigned_labels_file_leaves_the_run_unreleased(tmp_path, cli, monkeypatch):
    """The same flow with the labels committed unsigned: the import is refused, nothing is blessed or attested."""
    for name, value in {"GIT_AUTHOR_NAME": "carol", "GIT_AUTHOR_EMAIL": "c@example.invalid",
                        "GIT_COMMITTER_NAME": "carol", "GIT_COMMITTER_EMAIL": "c@example.invalid"}.items():
        monkeypatch.setenv(name, value)
    _stand_ins(tmp_path / "bin")
    assert cli("attest", "--generate-key", tmp_path / "alice.key")[0] == 0
    origin, repo = tmp_path / "origin.git", tmp_path / "repo"
    _git("init", "-q", "--bare", "-b", "main", str(origin), cwd=tmp_path)
    _git("clone", "-q", str(origin), str(repo), cwd=tmp_path)
    _project(repo, (tmp_path / "alice.key.pub").read_text())
    _git("add", "-A", cwd=repo)
    _git("commit", "-qm", "support model", cwd=repo)
    _git("push", "-q", "origin", "HEAD:main", cwd=repo)
    workflow = yaml.safe_load(WORKFLOW.read_text())
    runner = Runner(tmp_path, origin, {"RELEASE_SIGNING_KEY": "unused"})
    event = {"github.event_name": "pull_request", "github.run_id": "9", "github.run_attempt": "1",
             "github.event.pull_request.user.login": "carol", "github.event.pull_request.number": "3"}
    gate = runner.job(workflow, "gate", event, {})
    queue = tmp_path / "artifacts" / f"releasegate-{gate['run_id']}" / "reports" / gate["run_id"] / "review_queue.csv"
    text = queue.read_text(encoding="utf-8-sig")
    (repo / "reviews").mkdir()
    rows = list(csv.DictReader(text.splitlines()))
    with (repo / "reviews" / f"{gate['run_id']}.csv").open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({**r, "label": "approve", "reviewer": "alice"} for r in rows)
    _git("add", "reviews", cwd=repo)
    _git("commit", "-qm", "labels, unsigned", cwd=repo)
    _git("push", "-q", "origin", "HEAD:main", cwd=repo)
    done = runner.job(workflow, "labels", {**event, "github.event_name": "push"}, {"gate": gate})
    assert done["attested"] == ""
    assert "baselines.jsonl" not in _git("ls-tree", "-r", "--name-only", "releasegate-reports", cwd=origin)


GITLAB = ROOT / "docs" / "release-gate.gitlab-ci.yml"


def _flat(lines: list) -> list[str]:
    """A job's script as GitLab runs it: nested lists (a YAML anchor) flattened, in order."""
    out: list[str] = []
    for line in lines:
        out += _flat(line) if isinstance(line, list) else [line]
    return out


def _gitlab_job(ci: dict, name: str, work: Path, env: dict, tmp: Path) -> int:
    """The job's before_script and script in one bash -eo pipefail shell, as the GitLab runner runs them."""
    job = ci[name]
    script = "\n".join(_flat(ci["default"]["before_script"]) + _flat(job["script"]))
    full = {**os.environ, **ci["variables"], **job.get("variables", {}), **env,
            "PATH": f"{tmp / 'bin'}:{os.environ['PATH']}", "RG_LOG": str(tmp / "log.txt"),
            "RG_SHIM": (tmp / "bin" / "shim.txt").read_text(), "CI_JOB_NAME": name}
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=work, env=full,
                          capture_output=True, text=True, timeout=300)
    allowed = (job.get("allow_failure") or {}).get("exit_codes", []) if isinstance(job.get("allow_failure"), dict) else []
    assert done.returncode == 0 or done.returncode in allowed, (name, done.stdout[-2000:], done.stderr[-2000:])
    return done.returncode


def test_the_gitlab_file_runs_from_merge_request_to_a_verified_attestation(tmp_path, cli, monkeypatch):
    """Every job's before_script and script of docs/release-gate.gitlab-ci.yml, in stage order; artifacts are
    copied from job to job as `needs` and `dependencies` say (the runner's part)."""
    for name, value in {"GIT_AUTHOR_NAME": "carol", "GIT_AUTHOR_EMAIL": "c@example.invalid",
                        "GIT_COMMITTER_NAME": "carol", "GIT_COMMITTER_EMAIL": "c@example.invalid"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("RELEASEGATE_CHANGE_AUTHOR", raising=False)
    _stand_ins(tmp_path / "bin")
    assert cli("attest", "--generate-key", tmp_path / "alice.key")[0] == 0
    assert cli("attest", "--generate-key", tmp_path / "release.key")[0] == 0
    origin, repo = tmp_path / "origin.git", tmp_path / "repo"
    _git("init", "-q", "--bare", "-b", "main", str(origin), cwd=tmp_path)
    _git("clone", "-q", str(origin), str(repo), cwd=tmp_path)
    _project(repo, (tmp_path / "alice.key.pub").read_text())
    (repo / "keys").mkdir()
    shutil.copyfile(tmp_path / "release.key.pub", repo / "keys" / "release.pub")
    _git("add", "-A", cwd=repo)
    _git("commit", "-qm", "support model", cwd=repo)
    _git("push", "-q", "origin", "HEAD:main", cwd=repo)
    ci = yaml.safe_load(GITLAB.read_text())
    assert ci["stages"] == ["gate", "labels", "deploy"]
    mr = {"CI_PIPELINE_ID": "41", "CI_REPOSITORY_URL": str(origin), "CI_MERGE_REQUEST_AUTHOR": "carol",
          "GITLAB_USER_LOGIN": "carol", "CI_PIPELINE_SOURCE": "merge_request_event", "CI_DEFAULT_BRANCH": "main",
          "CI_COMMIT_BRANCH": "", "CI_COMMIT_SHA": "abc", "RELEASE_SIGNING_KEY": str(tmp_path / "release.key"),
          "REPORTS_TOKEN": "", "DEPLOY_WEBHOOK": ""}
    gate = tmp_path / "gl-gate"
    _git("clone", "-q", str(origin), str(gate), cwd=tmp_path)
    assert _gitlab_job(ci, "gate", gate, mr, tmp_path) == 3  # needs review: allowed to pass with a warning
    run_id = "gl-41"
    queue = gate / "reports" / run_id / "review_queue.csv"
    assert "What to label" in (gate / "reports" / run_id / "report.md").read_text()
    with queue.open(encoding="utf-8-sig", newline="") as fh:
        rows = [{**r, "label": "approve", "reviewer": "alice"} for r in csv.DictReader(fh)]
    (repo / "reviews").mkdir()
    labels = repo / "reviews" / f"{run_id}.csv"
    with labels.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert cli("review", "sign", labels, "--key", tmp_path / "alice.key")[0] == 0
    _git("add", "reviews", cwd=repo)
    _git("commit", "-qm", "labels", cwd=repo)
    _git("push", "-q", "origin", "HEAD:main", cwd=repo)
    main = {**mr, "CI_PIPELINE_ID": "42", "CI_PIPELINE_SOURCE": "push", "CI_COMMIT_BRANCH": "main",
            "CI_MERGE_REQUEST_AUTHOR": ""}
    work = tmp_path / "gl-labels"
    _git("clone", "-q", str(origin), str(work), cwd=tmp_path)
    assert _gitlab_job(ci, "labels", work, main, tmp_path) == 0
    assert (work / "attested-run").read_text().strip() == run_id
    deploy = tmp_path / "gl-deploy"
    _git("clone", "-q", str(origin), str(deploy), cwd=tmp_path)
    for artifact in ci["labels"]["artifacts"]["paths"]:  # needs: [labels]
        shutil.copyfile(work / artifact, deploy / artifact)
    # a Slack-like webhook: no token, and no MLflow registry: the webhook alone, nothing registered anywhere
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    with Receiver() as hook:
        assert _gitlab_job(ci, "deploy", deploy, {**main, "DEPLOY_WEBHOOK": hook.url + "/T0/B0/slackSECRET"},
                           tmp_path) == 0
    assert len(hook.bodies) == 1 and hook.bodies[0]["summary"]["run_id"] == run_id
    assert "Authorization" not in hook.headers[0]
    assert not [p.name for p in deploy.iterdir() if p.name.startswith(("mlflow", "mlruns"))]
    assert run_id in _git("show", "releasegate-reports:baselines.jsonl", cwd=origin)
