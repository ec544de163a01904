"""`releasegate promote RUN_DIR`: a run that may be released (`release_check`: sealed, verified unchanged, PASS)
handed on: its signed summary POSTed to a webhook, and/or a model version registered or tagged in an MLflow model
registry with the verdict, the rubric's hash and the report, under an alias.

The webhook goes through the border's HTTP client (a deadline, a bounded reply, no redirect followed, userinfo
sent only to its own origin, every message masked); a refused connection, a timeout or a 5xx is tried again, at
most `WEBHOOK_ATTEMPTS` times; a 4xx or a redirect is not. The body carries the in-toto statement of the run in a
DSSE envelope signed with the given key (as `attest` writes it), so the receiver can check it as a deploy does.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path
from typing import Any

from ..border.env import env_secret
from ..border.http import HttpError, Limits, fetch, url_problem
from ..errors import ErrorKind, InputError, TargetError
from ..extras import load
from ..redaction import add_secret, mask_url, url_origin
from .attest import statement_for
from .dsse import load_private_key, sign_envelope
from .release_check import ReleasableRun, releasable_run

__all__ = ["promote_run", "WEBHOOK_ATTEMPTS", "release_summary"]

WEBHOOK_ATTEMPTS = 3
_BACKOFF_S = 0.5
_RETRIED = frozenset({ErrorKind.CONNECTION_ERROR, ErrorKind.TIMEOUT, ErrorKind.STALL_TIMEOUT,
                      ErrorKind.STREAM_INTERRUPTED})
"""HttpError kinds worth another try: the receiver may be back in a moment. A redirect never is; of the statuses,
only 429 and 5xx. Every attempt carries the same Idempotency-Key, so a receiver can drop a repeat."""
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_./-]{0,199}")
"""A registered model's name and an alias: nothing that could end the registry's search filter."""
_WEBHOOK_LIMITS = Limits(deadline_s=20.0, read_timeout_s=10.0, max_bytes=1 << 20)


def release_summary(run: ReleasableRun) -> dict:
    """What a promotion says of the run: id, verdict and why, rubric hash, target and its fingerprint, criteria."""
    report, manifest = run.report, run.manifest
    return {"run_id": report.run_id, "verdict": report.verdict, "reason": report.verdict_reason,
            "rubric": report.rubric, "rubric_sha256": report.judged_by.snapshot_sha256 if report.judged_by else None,
            "effective_rubric_sha256": run.binding.effective_sha256,
            "rubric_overrides": [o.as_record() for o in run.binding.overrides],
            "target": report.target, "target_fingerprint": (manifest.get("target") or {}).get("fingerprint"),
            "report": f"{run.path.name}/report.json",  # in the reports folder: no machine's path
            "criteria": [{"name": c.name, "op": c.op, "threshold": c.threshold, "value": c.value,
                          "verdict": c.verdict} for c in report.criteria]}


def promote_run(run_dir: Path, *, webhook: str | None = None, key: Path | None = None, token_env: str | None = None,
                mlflow_model: str | None = None, alias: str | None = None, mlflow_uri: str | None = None) -> dict:
    """Promote the run; what was done (webhook status, MLflow model version). ReleaseRefused (exit 1) for a run
    that may not be released; InputError (2) for missing options; TargetError (4) when a receiver failed."""
    if webhook is None and mlflow_model is None:
        raise InputError("nothing to promote to: give --webhook URL and/or --mlflow-model NAME --alias ALIAS")
    if webhook is not None and (problem := url_problem(webhook)) is not None:
        raise InputError(f"the webhook is {problem}", field="--webhook")
    if mlflow_uri is not None and "://" in mlflow_uri and mlflow_uri.split("://")[0] in ("http", "https") and \
            (problem := url_problem(mlflow_uri)) is not None:
        raise InputError(f"the MLflow URI is {problem}", field="--mlflow-uri")
    if webhook is not None and key is None:
        raise InputError("--webhook sends a signed summary: give --key KEY (an Ed25519 private key)", field="--key")
    if mlflow_model is not None and not (alias and _NAME.fullmatch(alias) and _NAME.fullmatch(mlflow_model)):
        raise InputError("--mlflow-model and --alias: letters, digits, '_', '.', '-' and '/', at most 200",
                         field="--alias" if mlflow_model and _NAME.fullmatch(mlflow_model) else "--mlflow-model")
    if webhook is not None:  # its path and query are its secret (a Slack or Discord hook): never shown
        rest = webhook.split("://", 1)[-1].partition("/")[2]
        add_secret("/" + rest if rest else None)
    private_key = load_private_key(key) if key is not None else None
    token = env_secret(token_env, field="--webhook-token-env") if token_env else None
    add_secret(token)
    run = releasable_run(run_dir)
    summary = release_summary(run)
    done: dict[str, Any] = {"run": str(run.path), "summary": summary}
    if webhook is not None:
        assert private_key is not None
        statement = statement_for(run.path, run.report, run.manifest, run.binding)
        envelope = sign_envelope(json.dumps(statement, sort_keys=True).encode("utf-8"), private_key)
        done["webhook"] = post_webhook(webhook, {"event": "releasegate.promote", "summary": summary,
                                                 "attestation": envelope}, token)
    if mlflow_model is not None:
        assert alias is not None
        done["mlflow"] = register_version(run, summary, mlflow_model, alias, mlflow_uri)
    return done


def post_webhook(url: str, payload: dict, token: str | None) -> dict:
    """POST `payload` as JSON; the reply's status and the attempts it took. TargetError when every attempt
    failed or the receiver refused it."""
    body = json.dumps(payload, sort_keys=True).encode("ascii")
    headers = {"Content-Type": "application/json", "Idempotency-Key": hashlib.sha256(body).hexdigest(),
               **({"Authorization": f"Bearer {token}"} if token else {})}
    where = url_origin(url)
    last = ""
    for attempt in range(1, WEBHOOK_ATTEMPTS + 1):
        try:
            reply = fetch(url, method="POST", body=body, headers=headers, limits=_WEBHOOK_LIMITS)
        except HttpError as exc:
            last = str(exc).replace(mask_url(url) or "?", where)
            if exc.kind not in _RETRIED:
                break
        else:
            if 200 <= reply.status < 300:
                return {"url": where, "status": reply.status, "attempts": attempt}
            last = f"{where}: HTTP {reply.status}"
            if reply.status < 500 and reply.status != 429:
                break
        if attempt < WEBHOOK_ATTEMPTS:
            time.sleep(_BACKOFF_S * attempt)
    raise TargetError(f"webhook not delivered: {last} (after {attempt} attempt(s))")


def register_version(run: ReleasableRun, summary: dict, model: str, alias: str, uri: str | None) -> dict:
    """Register the run's model as a version of `model` in the MLflow registry at `uri` (or the one MLflow's own
    settings name), tagged with the verdict, rubric hash and report, and point `alias` at it. A version already
    registered for the same target fingerprint is tagged and aliased again, not registered twice."""
    mlflow = load("mlflow", "promote --mlflow-model")
    exceptions = load("mlflow.exceptions", "promote --mlflow-model")
    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    tags = {"releasegate.verdict": summary["verdict"], "releasegate.rubric_sha256": summary["rubric_sha256"] or "",
            "releasegate.run_id": summary["run_id"] or "", "releasegate.report": summary["report"],
            "releasegate.target_fingerprint": summary["target_fingerprint"] or "",
            "releasegate.effective_rubric_sha256": summary["effective_rubric_sha256"] or ""}
    try:
        try:
            client.get_registered_model(model)
        except exceptions.MlflowException:
            client.create_registered_model(model)
        version = _version_of(client, model, summary["target_fingerprint"])
        if version is None:
            version = client.create_model_version(model, source=_source(run), tags=tags,
                                                  description=f"releasegate {summary['verdict']}: {summary['reason']}").version
        else:
            for name, value in tags.items():
                client.set_model_version_tag(model, version, name, value)
        client.set_registered_model_alias(model, alias, version)
    except exceptions.MlflowException as exc:
        first = str(exc).split(". ")[0][:300]
        raise TargetError(f"MLflow registry: {first}") from None
    return {"model": model, "version": str(version), "alias": alias, "tags": tags}


def _version_of(client: Any, model: str, fingerprint: str | None) -> str | None:
    if not fingerprint:
        return None
    for version in client.search_model_versions(f"name = '{model}'"):
        if (version.tags or {}).get("releasegate.target_fingerprint") == fingerprint:
            return str(version.version)
    return None


def _source(run: ReleasableRun) -> str:
    """Where the model's files are: the manifest's first model directory, else the run directory."""
    folders = [d["path"] for d in run.manifest.get("directories", []) if isinstance(d, dict) and d.get("path")]
    return str(Path(folders[0]).resolve().as_uri()) if folders else str(run.path.resolve().as_uri())
