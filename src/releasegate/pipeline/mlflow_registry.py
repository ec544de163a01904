"""A released run's model version in an MLflow model registry (`promote --mlflow-model`), bounded and exact.

- Store URIs: an MLflow server (http, https, or Databricks' `databricks`), a registry in a SQLite file (`sqlite:///PATH`, which needs
  SQLAlchemy: the full `mlflow` package has it, `mlflow-skinny` not) and one in files (`file:///PATH` or a path,
  behind MLflow's own switch `MLFLOW_ALLOW_FILE_STORE=true`). Any other URI is one line, exit 2, saying which
  work; never an internal error.
- Bounds, each named in the exit 4 it ends in: every request's timeout (`REQUEST_TIMEOUT_S`), its tries
  (`REQUEST_RETRIES` more after the first), a version's creation wait (`CREATION_WAIT_S`), the whole
  registration (`REGISTRY_DEADLINE_S`), and each reply's bytes (`REPLY_MAX_BYTES`). Redirects are not followed.
  A reply the client cannot read is exit 4, never 70.
- Credentials (`MLFLOW_TRACKING_PASSWORD`, `..._TOKEN`, a URI's userinfo) never go through a plain-http proxy
  the environment names: the border's rule (`border.http.proxy_in_clear`), exit 2.
- MLflow's own log lines are printed through `inert` (a registry's escape sequences made visible).
- The version names every weights file that passed (base, adapter or merged, GGUF, draft) with its sha256, and
  the report by its path inside the reports folder: no tag holds a path of the machine that ran it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ..border.http import IN_CLEAR, proxy_in_clear, url_problem
from ..errors import InputError, TargetError
from ..extras import load
from ..record.promotion import ReleaseSummary
from ..record.stored_manifest import typed_files, typed_inputs
from ..redaction import mask_url
from ..text import inert
from .attest import _carries_weights  # the one rule of what is weights that ship
from .mlflow_store import file_store_problem, sqlite_store_problem
from .release_check import ReleasableRun

__all__ = ["register_version", "store_problem", "artifact_tags", "REQUEST_TIMEOUT_S", "REQUEST_RETRIES",
           "CREATION_WAIT_S", "REGISTRY_DEADLINE_S", "REPLY_MAX_BYTES"]

REQUEST_TIMEOUT_S = 15
"""Seconds one request to an MLflow server may take (MLflow's own default is 120)."""
REQUEST_RETRIES = 2
"""Tries after the first of a request that failed (MLflow's own default is 7, with a backoff of minutes)."""
CREATION_WAIT_S = 60
"""Seconds a new version may stay PENDING_REGISTRATION (MLflow's own default is 300)."""
REGISTRY_DEADLINE_S = 180
"""Seconds the whole registration may take, whatever the registry does."""
REPLY_MAX_BYTES = 16 * 1024 * 1024
"""Bytes one reply of an MLflow server may hold (a registry's answers are a few kilobytes)."""
_SCHEMES = "an MLflow server (http(s)://HOST:PORT), databricks, sqlite:///PATH or file:///PATH"
_CREDENTIALS = ("MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN", "MLFLOW_TRACKING_AUTH")


class _Bound(Exception):
    """A bound of promote's ran out: its words name it."""


def store_problem(uri: str) -> str | None:
    """Why promote cannot use the registry at `uri` (one line that says what to do); None when it can."""
    named = uri.partition(":")[0].lower()  # "databricks", "databricks-uc": schemes MLflow reads without //
    scheme = uri.split("://", 1)[0].lower() if "://" in uri else named if named.startswith(("databricks", "uc")) \
        else "file"
    if scheme in ("databricks", "databricks-uc"):  # MLflow's REST client over https, its own auth: bounded as a server
        return None
    if scheme in ("http", "https"):
        problem = url_problem(uri)
        return f"the MLflow URI is {problem}" if problem else None
    if scheme == "sqlite":
        if importlib.util.find_spec("sqlalchemy") is None or importlib.util.find_spec("alembic") is None:
            return ("a sqlite:// registry needs SQLAlchemy and alembic, which mlflow-skinny leaves out: "
                    "pip install 'mlflow' (or pip install sqlalchemy alembic)")
        return sqlite_store_problem(uri)
    if scheme == "file":
        if os.environ.get("MLFLOW_ALLOW_FILE_STORE", "").lower() not in ("true", "1"):
            return ("a file registry is behind MLflow's switch: set MLFLOW_ALLOW_FILE_STORE=true, "
                    "or use sqlite:///PATH")
        return file_store_problem(_file_store_path(uri))
    return f"the MLflow URI's scheme '{inert(scheme)[:20]}' is not one promote uses: give {_SCHEMES}"


def _file_store_path(uri: str) -> Path:
    """The folder of a file store: `file:///PATH` (or `file:PATH`), or a plain path."""
    if uri.lower().startswith("file:"):
        parts = urlsplit(uri)
        return Path(unquote(parts.path)) if parts.path else Path(unquote(uri[5:]))
    return Path(uri)


def registry_uri(uri: str | None) -> str:
    """The registry a promotion registers in: `--mlflow-uri`, else MLflow's own settings from the environment
    (MLFLOW_REGISTRY_URI, MLFLOW_TRACKING_URI). With neither, MLflow would make a new mlflow.db in the working
    folder, which no deploy reads: refused (InputError, exit 2) before anything is sent."""
    found = uri or os.environ.get("MLFLOW_REGISTRY_URI") or os.environ.get("MLFLOW_TRACKING_URI")
    if not found:
        raise InputError("--mlflow-model names no registry: give --mlflow-uri URI or set MLFLOW_TRACKING_URI "
                         "(MLflow's default is a new mlflow.db in this folder, which no deploy reads)",
                         field="--mlflow-uri")
    return found


def register_version(run: ReleasableRun, summary: dict[str, Any], model: str, alias: str, uri: str | None) -> dict[str, Any]:
    """Register the run's model as a version of `model` in the MLflow registry at `uri` (or the one MLflow's own
    settings name), tagged with the verdict, rubric hash, report and every weights file that passed, and point
    `alias` at it. A version already registered for the same target fingerprint is tagged and aliased again, not
    registered twice. InputError (2) for a store promote cannot use; TargetError (4) past a bound or for a
    registry that failed."""
    mlflow = load("mlflow", "promote --mlflow-model")
    uri = uri or mlflow.get_registry_uri()
    problem = store_problem(uri)
    if problem is not None:
        raise InputError(problem, field="--mlflow-uri")
    proxy = proxy_in_clear(uri) if _has_credential(uri) else None
    if proxy is not None:
        raise InputError(f"{IN_CLEAR} (the proxy at {proxy})", field="--mlflow-uri")
    facts = ReleaseSummary.model_validate(summary)
    tags = _tags(run, facts)
    where = (mask_url(uri) or "?") if "://" in uri else uri
    with _bounded_client(uri), _inert_logs():
        version = _within_deadline(lambda: _register(mlflow, uri, model, alias, facts, run, tags), where)
    return {"model": model, "version": str(version), "alias": alias, "registry": where, "tags": tags}


def _has_credential(uri: str) -> bool:
    try:
        userinfo = urlsplit(uri).username is not None
    except ValueError:
        userinfo = False
    return userinfo or any(os.environ.get(name) for name in _CREDENTIALS)


def _tags(run: ReleasableRun, summary: ReleaseSummary) -> dict[str, str]:
    tags = {"releasegate.verdict": summary.verdict, "releasegate.rubric_sha256": summary.rubric_sha256 or "",
            "releasegate.run_id": summary.run_id or "", "releasegate.report": f"{run.path.name}/report.json",
            "releasegate.target_fingerprint": summary.target_fingerprint or "",
            "releasegate.effective_rubric_sha256": summary.effective_rubric_sha256 or ""}
    if (run.path / "attestation.intoto.json").is_file():
        tags["releasegate.attestation"] = f"{run.path.name}/attestation.intoto.json"
    return {**tags, **artifact_tags(run.manifest)}


def artifact_tags(manifest: dict[str, Any]) -> dict[str, str]:
    """A tag per weights file the run loaded and passed with (`releasegate.artifact.N`): its role (model,
    adapter, merged, gguf, draft), its name inside its folder, never a path of the machine, and its sha256."""
    tags = {}
    entries = [e for e in typed_inputs(manifest) if _carries_weights(e)]
    for i, entry in enumerate(entries, start=1):
        name = entry.name or Path(entry.path).name
        if Path(name).is_absolute():
            name = Path(name).name
        tags[f"releasegate.artifact.{i}"] = json.dumps(
            {"role": entry.owner, "name": name, "sha256": entry.sha256}, sort_keys=True)
    return tags


def _register(mlflow: Any, uri: str, model: str, alias: str, summary: ReleaseSummary, run: ReleasableRun,
              tags: dict[str, str]) -> str:
    exceptions = load("mlflow.exceptions", "promote --mlflow-model")
    try:
        client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)  # opens the store: a failure is the store's
        try:
            client.get_registered_model(model)
        except exceptions.MlflowException:
            client.create_registered_model(model)
        version = _version_of(client, model, summary.target_fingerprint)
        if version is None:
            created = client.create_model_version(model, source=_source(run), tags=tags,
                                                  description=f"releasegate {summary.verdict}: {summary.reason}",
                                                  await_creation_for=CREATION_WAIT_S)
            version = str(created.version)
        else:
            for name, value in tags.items():
                client.set_model_version_tag(model, version, name, value)
        client.set_registered_model_alias(model, alias, version)
    except _Bound:
        raise
    except exceptions.MlflowException as exc:
        raise _Bound(_mlflow_said(str(exc))) from None
    except Exception as exc:  # noqa: BLE001 - a reply of a shape the client did not foresee: the registry's
        raise _Bound(f"a reply the MLflow client could not read ({type(exc).__name__})") from None
    return version


def _mlflow_said(text: str) -> str:
    """One line of what MLflow said, a bound it ran into named."""
    line = " ".join(inert(text).split())
    if "Exceeded max wait time" in line:
        return f"the version stayed pending past {CREATION_WAIT_S} s (promote's creation wait)"
    if "timed out" in line.lower() or "timeout" in line.lower():
        return (f"no reply within {REQUEST_TIMEOUT_S} s, {REQUEST_RETRIES + 1} tries "
                "(promote's request timeout and retries)")
    if "Max retries exceeded" in line or "Connection refused" in line or "Failed to establish" in line:
        return f"unreachable after {REQUEST_RETRIES + 1} tries (promote's retries)"
    if "over" in line and str(REPLY_MAX_BYTES) in line:
        return f"a reply over {REPLY_MAX_BYTES} bytes (promote's bound on a reply)"
    return line.split(". ")[0][:300]


def _version_of(client: Any, model: str, fingerprint: str | None) -> str | None:
    if not fingerprint:
        return None
    for version in client.search_model_versions(f"name = '{model}'"):
        if (version.tags or {}).get("releasegate.target_fingerprint") == fingerprint:
            return str(version.version)
    return None


SOURCE_ROLES = ("merged", "model", "served", "adapter", "draft")
"""The directory roles a version's source may name, in this order: the model that answered, never a suite's."""


def _source(run: ReleasableRun) -> str:
    """Where the model's files are: the manifest's model directory (merged, base, served, adapter), else the first
    weights file that passed (a served GGUF), else the run directory."""
    folders: dict[str, str] = {}
    manifest = typed_files(run.manifest, run.path / "manifest.json")
    for d in manifest.directories:  # the target's first: a leakage probe's base comes after
        if d.path:
            folders.setdefault(d.role, d.path)
    role = next((r for r in SOURCE_ROLES if r in folders), None)
    if role is not None:
        return Path(folders[role]).resolve().as_uri()
    weights = [e for e in manifest.inputs if _carries_weights(e) and Path(e.path).is_absolute()]
    return Path(weights[0].path).as_uri() if weights else run.path.resolve().as_uri()


def _within_deadline(work: Callable[[], str], where: str) -> str:
    """`work` in a thread, given `REGISTRY_DEADLINE_S`: past it, a TargetError naming the bound (the thread,
    blocked in the registry's client, is left to end with the process)."""
    result: list[str] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            result.append(work())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            failed.append(exc)

    worker = threading.Thread(target=run, name="mlflow-registry", daemon=True)
    worker.start()
    worker.join(REGISTRY_DEADLINE_S)
    if worker.is_alive():
        raise TargetError(f"MLflow registry {where}: not done within {REGISTRY_DEADLINE_S} s (promote's bound on "
                          "a registration)")
    if failed:
        if isinstance(failed[0], _Bound):
            raise TargetError(f"MLflow registry {where}: {failed[0]}") from None
        raise failed[0]
    return result[0]


@contextlib.contextmanager
def _bounded_client(uri: str) -> Iterator[None]:
    """MLflow's HTTP client held to promote's bounds for the block: its timeout and retries (MLflow's own
    settings, a smaller one kept), no redirect followed, and each reply read to `REPLY_MAX_BYTES` at most. Its
    tracking store is the registry's own: MLflow would otherwise open its default (a ./mlflow.db it creates in
    the working directory) while registering a version."""
    rest_utils = load("mlflow.utils.rest_utils", "promote --mlflow-model")
    settings = {"MLFLOW_HTTP_REQUEST_TIMEOUT": REQUEST_TIMEOUT_S, "MLFLOW_HTTP_REQUEST_MAX_RETRIES": REQUEST_RETRIES,
                "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": 1, "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": 0}
    before = {name: os.environ.get(name) for name in [*settings, "MLFLOW_ALLOW_HTTP_REDIRECTS", "MLFLOW_TRACKING_URI"]}
    for name, bound in settings.items():
        own = before[name]
        kept = own if own is not None and own.strip().isdigit() and int(own) <= bound else str(bound)
        os.environ[name] = kept
    os.environ["MLFLOW_ALLOW_HTTP_REDIRECTS"] = "false"
    os.environ["MLFLOW_TRACKING_URI"] = uri
    original = rest_utils._get_http_response_with_retries
    rest_utils._get_http_response_with_retries = _bounded_reply(original)
    try:
        yield
    finally:
        rest_utils._get_http_response_with_retries = original
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _bounded_reply(send: Callable[..., Any]) -> Callable[..., Any]:
    """`send` (MLflow's request with retries) with its reply streamed, and read to `REPLY_MAX_BYTES` at most."""
    def bounded(*args: Any, **kwargs: Any) -> Any:
        response = send(*args, **{**kwargs, "stream": True})
        declared = response.headers.get("Content-Length", "")
        if declared.strip().isdigit() and int(declared) > REPLY_MAX_BYTES:
            response.close()
            raise _Bound(f"a reply of {int(declared)} bytes, over {REPLY_MAX_BYTES} (promote's bound on a reply)")
        pieces, size = [], 0
        for piece in response.iter_content(65536):
            size += len(piece)
            if size > REPLY_MAX_BYTES:
                response.close()
                raise _Bound(f"a reply over {REPLY_MAX_BYTES} bytes (promote's bound on a reply)")
            pieces.append(piece)
        response._content = b"".join(pieces)  # what requests keeps of a reply read whole
        return response
    return bounded


class _InertHandler(logging.Handler):
    """A log record as one line on stderr, every control character made visible."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = " ".join(inert(record.getMessage()).split())
        except Exception:  # noqa: BLE001 - a record whose arguments do not format: its template alone
            text = " ".join(inert(str(record.msg)).split())
        print(f"mlflow: {text[:500]}", file=sys.stderr)


@contextlib.contextmanager
def _inert_logs() -> Iterator[None]:
    """MLflow's log lines (and its database migrations' warnings) through `_InertHandler` for the block: a
    registry's words (a model's name, a status message) never reach the terminal raw."""
    handler, kept = _InertHandler(), []
    for name, level in (("mlflow", logging.INFO), ("alembic", logging.WARNING)):
        logger = logging.getLogger(name)
        kept.append((logger, logger.handlers[:], logger.propagate, logger.level))
        logger.handlers, logger.propagate = [handler], False
        logger.setLevel(level)
    try:
        yield
    finally:
        for logger, handlers, propagate, level in kept:
            logger.handlers, logger.propagate = handlers, propagate
            logger.setLevel(level)
