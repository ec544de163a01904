"""Keeping secrets out of everything releasegate writes: records, run.json, manifests, reports and error lines.

Two layers:
- Registered values. Every credential a config carries is registered when the config is loaded: the API key
  (`target.api_key_env`), header values read from the environment (`target.headers`), header and `extra_body`
  values under a secret-looking name (`is_secret_name`), and the userinfo and query values of `target.base_url`
  (`url_secrets`). Values are replaced in the data, before it is serialised (`redact_values`, `redact_json`):
  JSON, CSV, HTML and XML escape `"` `\\` `&` `<` `>` `'`, so a secret holding one of them, echoed by a server,
  would no longer match in the written text. `RunDir` redacts every record and JSON document that way, and passes
  every text it writes through `redact` as well, which also knows each secret's escaped forms (a report
  rendered from data that was never redacted); the CLI passes every error line through `redact_error`.
- Structural masking. What describes the target (run.json's `target`, hence every report, the config.yaml
  snapshot, the cache fingerprint) masks by shape, so that a secret too short to register, or a later
  `releasegate report` that never loaded the config, shows no credential either: `mask_url`, `mask_mapping`.

`redact_error` also masks what looks like a credential in free text (bearer tokens, `sk-...` keys, userinfo
and secret-looking query parameters in URLs, `key=value` pairs), for error messages, which may quote a
server's reply or a request.
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Collection
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["url_origin", 
    "REDACTED", "URL_REDACTED", "add_secret", "secret_from_env", "redact", "redact_error", "redact_data", "redact_values",
    "redact_json", "is_secret_name",
    "mask_url", "url_secrets", "mask_mapping", "mapping_secrets",
]

REDACTED = "[REDACTED]"
URL_REDACTED = "REDACTED"
"""What replaces a URL's userinfo: brackets are not allowed there, and a masked URL must still parse."""
_MIN_SECRET = 6  # shorter values would redact ordinary words; no real API key is this short

_secrets: set[str] = set()

_PATTERNS = [
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 " + REDACTED),
    (re.compile(r"\b(sk|pk|rk|hf|ghp|gho|xox[abp])[-_][A-Za-z0-9_-]{12,}"), REDACTED),
    (re.compile(r"(?i)\b(api[_-]?key|(?:access|auth|refresh)[_-]?token|client[_-]?secret|secret|password|passwd|authorization)(\"?\s*[:=]\s*\"?)[^\s\"',;&]+"),
     r"\1\2" + REDACTED),
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)(?!\[?REDACTED\]?@)[^\s/?#@\"'<>]+@"), r"\1" + REDACTED + "@"),
    (re.compile(r"(?i)([?&#;][\w.~%-]*(?:key|token|sig|signature|secret|password|passwd|auth|credential)[\w.~%-]*=)"
                r"(?!\[REDACTED\])[^&#\s\"'<>]+"), r"\1" + REDACTED),
]

_SECRET_WORDS = frozenset({
    "key", "apikey", "token", "secret", "password", "passwd", "pwd", "passphrase", "auth", "authorization",
    "credential", "credentials", "cookie", "sig", "signature", "bearer", "jwt",
})
_NOT_SECRET_AFTER = {
    # words that, before "token" or "key", name something that is no credential (stop_token, cache_key)
    "token": frozenset({"stop", "eos", "bos", "pad", "unk", "sep", "cls", "mask", "special", "max", "min", "num",
                        "start", "end", "image", "audio", "video"}),
    "key": frozenset({"cache", "sort", "partition", "routing", "idempotency", "dedup", "group"}),
}
_PUBLIC_QUERY = frozenset({"api-version", "api_version", "apiversion", "version", "v", "format", "alt", "model",
                           "deployment", "region", "lang", "locale", "stream"})
"""Query parameters of a base URL that are shown as they are; every other value in a base URL's query is
treated as a credential (a query string on an API base URL is nearly always one)."""


def add_secret(value: str | None) -> None:
    """Remember a secret value (an API key read from the environment) so that `redact` removes it everywhere.
    Its percent-decoded form too (a password written %-escaped in a URL)."""
    if not isinstance(value, str):
        return
    for form in {value, unquote(value)}:
        if len(form) >= _MIN_SECRET:
            _secrets.add(form)
            _secrets.update(_escaped_forms(form))


def _escaped_forms(secret: str) -> set[str]:
    """How a secret reads once a format has escaped it: JSON (ASCII or not), HTML and XML (with and without quotes
    escaped, `'` as `&#x27;` or `&apos;`), CSV (quotes doubled), a Python repr in an error message (a reply quoted
    with `!r`). Only the forms that differ from the secret."""
    escaped = secret.encode("unicode_escape").decode("ascii")  # backslashes doubled, as repr writes them
    forms = {json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1], html.escape(secret, quote=False),
             html.escape(secret), html.escape(secret).replace("&#x27;", "&apos;"), html.escape(secret).replace("&#x27;", "'"),
             secret.replace('"', '""'), repr(secret)[1:-1], escaped, escaped.replace("'", "\\'"),
             escaped.replace('"', '\\"')}
    return {f for f in forms if f != secret}


def secret_from_env(name: str | None) -> None:
    """Register the value of the environment variable `name`, when it is set."""
    if name:
        add_secret(os.environ.get(name))


def redact(text: str) -> str:
    """`text` with every registered secret value replaced by [REDACTED]. Cheap when none is registered."""
    for secret in sorted(_secrets, key=len, reverse=True):  # longest first: a secret containing another one
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def redact_error(text: str | None) -> str | None:
    """An error message with registered secrets and credential-looking substrings masked."""
    if text is None:
        return None
    text = redact(text)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redact_values(data: Any) -> Any:
    """A JSON-like value with every registered secret replaced in every string in it, keys included: redaction
    of the data, before any format escapes it. The value itself when no secret is registered."""
    if not _secrets:
        return data
    if isinstance(data, str):
        return redact(data)
    if isinstance(data, dict):
        return {redact(k) if isinstance(k, str) else k: redact_values(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [redact_values(v) for v in data]
    return data


def redact_json(text: str) -> str:
    """One JSON document (a journal line) with every registered secret replaced in its decoded strings, written
    again compactly; the text as it is when no secret is registered or none occurs in the data."""
    if not _secrets:
        return text
    data = json.loads(text)
    redacted = redact_values(data)
    if redacted == data:
        return text
    return json.dumps(redacted, ensure_ascii=False, separators=(",", ":"))


def redact_data(data: Any) -> Any:
    """A JSON-like value with `redact_error` applied to every string value in it (keys are kept)."""
    if isinstance(data, str):
        return redact_error(data)
    if isinstance(data, dict):
        return {k: redact_data(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [redact_data(v) for v in data]
    return data


# -- what is a secret, by shape ----------------------------------------------------------------------------------

def _words(name: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", str(name))]


def is_secret_name(name: str, extra: Collection[str] = frozenset()) -> bool:
    """Whether a header, body field or query parameter of this name carries a credential: `Authorization`,
    `X-Api-Key`, `api_key`, `access_token`, `client_secret`, `password`, `sig`... but not `max_tokens`,
    `stop_token` or `cache_key`. `extra`: more names the config marks secret (compared case-insensitively)."""
    if str(name).lower() in {e.lower() for e in extra}:
        return True
    words = _words(name)
    for i, word in enumerate(words):
        if word in _SECRET_WORDS and not (i > 0 and words[i - 1] in _NOT_SECRET_AFTER.get(word, ())):
            return True
    return False


def _secret_query_name(name: str, extra: Collection[str] = frozenset()) -> bool:
    return is_secret_name(name, extra) or unquote(name).lower() not in _PUBLIC_QUERY


def _masked_query(query: str, extra: Collection[str]) -> str:
    out = []
    for pair in query.split("&"):
        name, eq, value = pair.partition("=")
        if eq and value and _secret_query_name(name, extra):
            value = REDACTED
        elif not eq and name and _secret_query_name("", extra):  # a bare token (?SECRET)
            name = REDACTED
        out.append(name + eq + value)
    return "&".join(out)


def mask_url(url: str | None, extra: Collection[str] = frozenset()) -> str | None:
    """A URL with its userinfo replaced by REDACTED and the values of its query (and fragment) parameters by
    [REDACTED], except plainly public ones (api-version, ...). The result still parses as a URL."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact_error(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = URL_REDACTED + "@" + netloc.rpartition("@")[2]
    query = _masked_query(parts.query, extra) if parts.query else parts.query
    fragment = _masked_query(parts.fragment, extra) if parts.fragment else parts.fragment
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def url_origin(url: str) -> str:
    """A URL shown by its origin alone, 'scheme://host[:port]/…': a webhook's secret is often its path (Slack,
    Discord), so no more of it is ever shown."""
    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "?"
    host = parts.hostname or "?"
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}{port}/…"


def url_secrets(url: str | None, extra: Collection[str] = frozenset()) -> list[str]:
    """The credential values in a URL: its userinfo (user and password), its non-public query and fragment
    values (as written and percent-decoded)."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    out: list[str] = []
    if "@" in parts.netloc:
        userinfo = parts.netloc.rpartition("@")[0]
        user, _, password = userinfo.partition(":")
        if userinfo != URL_REDACTED:
            out += [userinfo, user, password]
    for section in (parts.query, parts.fragment):
        for pair in section.split("&") if section else ():
            name, eq, value = pair.partition("=")
            if eq and value != REDACTED and _secret_query_name(name, extra):
                out.append(value)
            elif not eq and name:
                out.append(name)
    return [v for v in out if v] + [unquote(v) for v in out if v and unquote(v) != v]


def mask_mapping(data: Any, extra: Collection[str] = frozenset(), *, secret: bool = False) -> Any:
    """A JSON-like value with every string under a secret-looking key (at any depth) replaced by [REDACTED].
    A `{env: NAME}` reference is kept: it names a variable, it is not the value."""
    if isinstance(data, dict):
        if set(data) == {"env"} and isinstance(data["env"], str):
            return dict(data)
        return {k: mask_mapping(v, extra, secret=secret or is_secret_name(k, extra)) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [mask_mapping(v, extra, secret=secret) for v in data]
    if secret and isinstance(data, str):
        return REDACTED
    return data


def mapping_secrets(data: Any, extra: Collection[str] = frozenset(), *, secret: bool = False) -> list[str]:
    """The strings `mask_mapping` would mask."""
    if isinstance(data, dict):
        if set(data) == {"env"} and isinstance(data["env"], str):
            return []
        return [s for k, v in data.items() for s in mapping_secrets(v, extra, secret=secret or is_secret_name(k, extra))]
    if isinstance(data, (list, tuple)):
        return [s for v in data for s in mapping_secrets(v, extra, secret=secret)]
    return [data] if secret and isinstance(data, str) else []
