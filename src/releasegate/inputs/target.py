"""The `target:` section of a config: the model under test, how to run it, and what its HTTP clients send.

Credentials the section carries (userinfo and query tokens of `base_url`, `headers`, secret-looking `extra_body`
fields, the api key's variable) are masked by shape in `TargetConfig.describe` and `masked`, and registered with
`redaction` by `TargetConfig.register_secrets`.
"""

from __future__ import annotations

import base64
import re
from dataclasses import field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from pydantic import ConfigDict

from ..border.env import env_secret
from ..border.http import url_problem
from ..data_classes import dataclass
from ..errors import InputError
from ..extras import require
from ..model_base import Model
from ..redaction import (
    REDACTED,
    URL_REDACTED,
    add_secret,
    is_secret_name,
    mapping_secrets,
    mask_mapping,
    mask_url,
    secret_from_env,
    url_secrets,
)
from .backend_facts import capabilities
from .backend_facts import spec as backend_spec
from .files import KeyAt, exists, is_dir, is_file, resolve_under
from .model_files import check_model_dir
from .read_doc import read_doc

__all__ = ["TargetConfig", "parse_target"]

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_OWN_HEADERS = frozenset({"host", "content-length", "content-type", "transfer-encoding", "connection", "accept"})
"""Headers the clients set themselves; `target.headers` may not replace them."""


@dataclass(frozen=True)
class TargetConfig:
    """The model under test and how to run it."""

    backend: str
    base: str | None = None
    adapter: Path | None = None
    merge: bool = False
    dtype: str = "float32"
    threads: int = 1
    batch_size: int = 8
    bucket_by_length: bool = True
    """hf: batch the fresh cases of a run by prompt length (less padding); records stay in case order."""
    device: str = "cpu"
    quantize: str | None = None
    draft: Path | None = None
    responses: Path | None = None
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    mode: str = "chat"
    concurrency: int = 8
    timeout_s: float = 120.0
    stall_timeout_s: float = 30.0
    connect_timeout_s: float = 5.0
    retries: int = 2
    client: str = "lean"
    extra_body: dict[str, Any] = field(default_factory=dict)
    tokenizer: Path | None = None
    headers: dict[str, Any] = field(default_factory=dict)
    """HTTP headers sent with every request: {name: literal value} or {name: {env: VARIABLE}}."""
    secret_keys: tuple[str, ...] = ()
    """More header, extra_body or query names whose values are credentials (beyond the secret-looking ones)."""
    max_response_bytes: int = 16 * 1024 * 1024
    """openai: bytes a response body may hold; past it the request is `response_too_large` (nothing kept)."""
    max_response_tokens: int | None = None
    """openai: output tokens an answer may hold; past it the request is `response_too_large`. None: twice the
    request's max_tokens plus 64."""
    stop_after_errors: int = 10
    """openai: the run stops (exit 4, what was recorded kept) after this many requests in a row failed to connect,
    or when the first this many all failed; 0: never (see `backends._target_watch`). The judge never stops."""
    strict_model: bool = False
    """openai: a `model` the server's /models does not list is an error (exit 2), not a warning."""
    served_files: tuple[Path, ...] = ()
    """The files (or directories) the server behind the endpoint loads, hashed into the manifest (role `served`)
    so that a run of an endpoint can be attested: the GGUF, the model directory, the LoRA files."""
    served_as: str = "declared"
    """'declared': `target.served_files`, a server started elsewhere (its files as the config says);
    'observed': the files releasegate's own launcher handed the server it started."""

    def describe(self) -> str:
        """One line naming the target, for run.json and every report: credentials masked (its backend's
        `describe` templates, each part shown when the fields it names are set)."""
        values = {name: getattr(self, name) for name in backend_spec(self.backend).fields}
        if "base_url" in values:
            values["base_url"] = mask_url(self.base_url, frozenset(self.secret_keys))
        return "".join(template.format(**values) for template, needs in backend_spec(self.backend).describe
                       if all(getattr(self, n) for n in needs))

    # -- what the HTTP clients send -------------------------------------------------------------------------
    def endpoint_url(self) -> str | None:
        """`base_url` without its userinfo, query and fragment (they travel as a header and query parameters)."""
        if not self.base_url:
            return self.base_url
        parts = urlsplit(self.base_url)
        return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))

    def url_query(self) -> dict[str, str]:
        """The query parameters of `base_url`, sent with every request (`?api-version=...&sig=...`)."""
        if not self.base_url:
            return {}
        return dict(parse_qsl(urlsplit(self.base_url).query, keep_blank_values=True))

    def request_headers(self) -> dict[str, str]:
        """The headers to send with every request: `Authorization: Basic ...` from the userinfo of `base_url`
        (when it has one), then `headers` (a same-named header replaces it, case-insensitively). Either replaces
        the api key's `Authorization: Bearer`. Values read from the environment here; every value that is a
        credential is registered for redaction. Raises InputError for an unset variable."""
        out: dict[str, str] = {}
        userinfo = _userinfo(self.base_url)
        if userinfo is not None:
            user, _, password = userinfo.partition(":")
            token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
            add_secret(token)
            out["Authorization"] = "Basic " + token
        for name, spec in self.headers.items():
            value = _header_value(name, spec)
            if isinstance(spec, dict) or is_secret_name(name, frozenset(self.secret_keys)):
                add_secret(value)
            for same in [k for k in out if k.lower() == name.lower()]:
                del out[same]
            out["Authorization" if name.lower() == "authorization" else name] = value  # one spelling: it replaces the key's
        return out

    def secrets(self) -> list[str]:
        """Every credential value this target carries that is known without reading the environment."""
        extra = frozenset(self.secret_keys)
        return (url_secrets(self.base_url, extra) + mapping_secrets(self.extra_body, extra)
                + mapping_secrets(self.headers, extra))

    def register_secrets(self) -> None:
        """Register every credential of this target with `redaction`, environment values included (when set)."""
        secret_from_env(self.api_key_env)
        for value in self.secrets():
            add_secret(value)
        for spec in self.headers.values():
            if isinstance(spec, dict):
                secret_from_env(spec.get("env"))
        userinfo = _userinfo(self.base_url)
        if userinfo is not None:
            user, _, password = userinfo.partition(":")
            add_secret(base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii"))

    def masked(self) -> dict[str, Any]:
        """The target's credential-bearing settings with the credentials masked (for fingerprints and records)."""
        extra = frozenset(self.secret_keys)
        return {"base_url": mask_url(self.base_url, extra), "extra_body": mask_mapping(self.extra_body, extra),
                "headers": mask_mapping(self.headers, extra)}


class TargetPathsDoc(Model):
    """The keys of a `target:` section that `parse_target` reads itself (the rest go to TargetConfig as written)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    base: str | None = None
    adapter: str | None = None
    merge: bool = False
    responses: str | None = None
    tokenizer: str | None = None
    draft: str | None = None
    base_url: str | None = None
    headers: dict[str, Any] | None = None
    secret_keys: list[str] | None = None
    served_files: list[str] | None = None


def parse_target(raw: dict[str, Any], here: Path, at: KeyAt) -> TargetConfig:
    """A validated `target:` section (or a judge's model) as a TargetConfig, paths resolved under `here`."""
    _check_installed(raw, at)
    doc = read_doc(TargetPathsDoc, raw, None)
    base = doc.base
    if base is not None:
        local = resolve_under(here, base)
        if exists(local):
            base = str(local)
        elif not _HUB_ID.match(base):
            raise InputError(f"base model '{base}' is neither a directory nor a hub id", **at("target", "base"))
    adapter = resolve_under(here, doc.adapter) if doc.adapter else None
    if adapter is not None and not exists(adapter / "adapter_config.json"):
        raise InputError(
            f"no adapter_config.json in {adapter}", **at("target", "adapter"), hint="point at a peft adapter directory"
        )
    if doc.merge and adapter is None:
        raise InputError("merge: true needs an adapter", **at("target", "merge"))
    responses = resolve_under(here, doc.responses) if doc.responses else None
    tokenizer = _tokenizer_file(resolve_under(here, doc.tokenizer), at) if doc.tokenizer else None
    draft = resolve_under(here, doc.draft) if doc.draft else None
    if draft is not None:  # loaded only once generation starts: a draft that cannot load is refused now
        check_model_dir(draft, "draft model", at("target", "draft"))
    if doc.base_url is not None and (problem := url_problem(doc.base_url)) is not None:
        raise InputError(f"base_url is {problem}", **at("target", "base_url"),
                         hint="write it as http(s)://host[:port]/v1")
    for name in doc.headers or {}:
        if name.lower() in _OWN_HEADERS:
            raise InputError(f"header '{name}' is set by releasegate itself", **at("target", "headers", name),
                             hint="remove it from target.headers")
    keys = (
        "backend", "merge", "dtype", "threads", "batch_size", "bucket_by_length", "device", "quantize", "base_url", "model",
        "api_key_env", "mode", "concurrency", "timeout_s", "stall_timeout_s", "connect_timeout_s", "retries", "extra_body",
        "client", "headers", "max_response_bytes", "max_response_tokens", "stop_after_errors", "strict_model",
    )
    return TargetConfig(
        **{k: raw[k] for k in keys if k in raw}, base=base, adapter=adapter, responses=responses, tokenizer=tokenizer,
        draft=draft, secret_keys=tuple(doc.secret_keys or ()), served_files=_served_files(doc.served_files, here, at),
    )


def _served_files(listed: list[str] | None, here: Path, at: KeyAt) -> tuple[Path, ...]:
    """`target.served_files`, each an existing file or directory under `here`."""
    out = []
    for i, item in enumerate(listed or ()):
        path = resolve_under(here, item)
        if not exists(path):
            raise InputError(f"served file '{item}' does not exist", **at("target", "served_files", i),
                             hint="list the files the server loads: its GGUF, model directory or LoRA files")
        out.append(path)
    return tuple(out)


def _check_installed(raw: dict[str, Any], at: KeyAt) -> None:
    """A model run in-process needs its extra (`hf`): said when the config is read (`validate` included), not as a
    traceback once the run has started. An endpoint or a replay needs nothing beyond the core."""
    backend = raw["backend"]
    modules = [m for m, when in capabilities(backend).requires if not when or raw.get(when)]
    if modules:
        require(f"backend: {backend}", *modules, **at("target", "backend"))


def _tokenizer_file(path: Path, at: KeyAt) -> Path:
    file = path / "tokenizer.json" if is_dir(path) else path
    if not is_file(file):
        raise InputError(f"no tokenizer.json at {path}", **at("target", "tokenizer"), hint="give a tokenizer.json or its directory")
    return file


def _userinfo(url: str | None) -> str | None:
    """The `user:password` of a URL, None when it has none (or only the mask a snapshot left)."""
    if not url:
        return None
    netloc = urlsplit(url).netloc
    if "@" not in netloc:
        return None
    userinfo = netloc.rpartition("@")[0]
    return None if userinfo in (URL_REDACTED, REDACTED) else userinfo


def _header_value(name: str, spec: object) -> str:
    if isinstance(spec, dict):
        value = env_secret(spec["env"], field=f"target.headers.{name}")
    else:
        value = str(spec)
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        raise InputError(f"header '{name}' has a character HTTP headers cannot carry", field=f"target.headers.{name}",
                         hint="headers are Latin-1 text") from None
    return value
