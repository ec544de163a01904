"""`releasegate promote RUN_DIR`: a run that may be released (`release_check`: sealed, verified unchanged, PASS)
handed on: its signed summary POSTed to a webhook, and/or a model version registered or tagged in an MLflow model
registry with the verdict, the rubric's hash, the report and every weights file that passed, under an alias
(`mlflow_registry`, which holds it to its bounds).

The webhook goes through the border's HTTP client (a deadline, a bounded reply, no redirect followed, userinfo
sent only to its own origin, every message masked); a refused connection, a timeout or a 5xx is tried again, at
most `WEBHOOK_ATTEMPTS` times; a 4xx or a redirect is not. A 2xx is a delivery, whatever follows its head (a body
too large or too slow is not read, and the promotion is not sent again). The body carries the in-toto statement of the run in a
DSSE envelope signed with the given key, and the in-toto test-result statement standing for it in another (the two
files `attest` writes), so the receiver can check them as a deploy does, or read pass or fail with a generic
in-toto verifier.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path
from typing import Any

from ..border.dsse import load_private_key
from ..border.env import env_secret
from ..border.files import hash_once
from ..border.http import HttpError, Limits, fetch, url_problem
from ..errors import ErrorKind, InputError, TargetError
from ..redaction import add_secret, mask_url, url_origin
from .attest import signed_statements, statement_for
from .mlflow_registry import register_version, registry_uri, store_problem
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


def release_summary(run: ReleasableRun) -> dict[str, Any]:
    """What a promotion says of the run: id, verdict and why, rubric hash, target and its fingerprint, criteria."""
    report, manifest = run.report, run.manifest
    return {"run_id": report.run_id, "verdict": report.verdict, "reason": report.verdict_reason,
            "rubric": report.rubric, "rubric_sha256": report.judged_by.snapshot_sha256 if report.judged_by else None,
            "effective_rubric_sha256": run.binding.effective_sha256,
            "rubric_overrides": [o.as_record() for o in run.binding.overrides],
            "target": report.target, "target_fingerprint": (manifest.get("target") or {}).get("fingerprint"),
            "report": f"{run.path.name}/report.json",  # inside the reports folder: no path of this machine
            "criteria": [{"name": c.name, "op": c.op, "threshold": c.threshold, "value": c.value,
                          "verdict": c.verdict} for c in report.criteria]}


def promote_run(run_dir: Path, *, webhook: str | None = None, key: Path | None = None, token_env: str | None = None,
                mlflow_model: str | None = None, alias: str | None = None, mlflow_uri: str | None = None) -> dict[str, Any]:
    """Promote the run; what was done (webhook status, MLflow model version). ReleaseRefused (exit 1) for a run
    that may not be released; InputError (2) for missing options; TargetError (4) when a receiver failed."""
    if webhook is None and mlflow_model is None:
        raise InputError("nothing to promote to: give --webhook URL and/or --mlflow-model NAME --alias ALIAS")
    if webhook is not None and (problem := url_problem(webhook)) is not None:
        raise InputError(f"the webhook is {problem}", field="--webhook")
    if mlflow_uri is not None and (problem := store_problem(mlflow_uri)) is not None:
        raise InputError(problem, field="--mlflow-uri")
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
    with hash_once():  # each model file read once: verified unchanged, then its directory's digest
        run = releasable_run(run_dir)
        statement = statement_for(run.path, run.report, run.manifest, run.binding) if webhook is not None else None
    registry = registry_uri(mlflow_uri) if mlflow_model is not None else None  # refused before anything is sent
    summary = release_summary(run)
    done: dict[str, Any] = {"run": str(run.path), "summary": summary}
    if webhook is not None:
        assert private_key is not None and statement is not None
        envelope, test_result = signed_statements(statement, private_key)
        done["webhook"] = post_webhook(webhook, {"event": "releasegate.promote", "summary": summary,
                                                 "attestation": envelope, "test_result": test_result}, token)
    if mlflow_model is not None:
        assert alias is not None
        done["mlflow"] = register_version(run, summary, mlflow_model, alias, registry)
    return done


def post_webhook(url: str, payload: dict[str, Any], token: str | None) -> dict[str, Any]:
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
            if exc.status is not None and 200 <= exc.status < 300:  # taken: what it says after is not ours to read
                return {"url": where, "status": exc.status, "attempts": attempt, "reply_not_read": exc.detail}
            busy = exc.status is not None and (exc.status >= 500 or exc.status == 429)  # its body is not the point
            if exc.kind not in _RETRIED and not busy:
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
