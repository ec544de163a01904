"""Keeping secrets out of everything releasegate writes: records, run.json, manifests, reports and error lines.

API keys reach releasegate only through environment variables named in the config (`target.api_key_env`).
The value read from such a variable is registered here; `redact` replaces every registered value, and
`redact_error` also masks what looks like a credential in free text (bearer tokens, `sk-...` keys, passwords
in URLs, `key=value` pairs), for error messages, which may quote a server's reply or a request.
"""

from __future__ import annotations

import os
import re

__all__ = ["REDACTED", "add_secret", "secret_from_env", "redact", "redact_error", "redact_data"]

REDACTED = "[REDACTED]"
_MIN_SECRET = 6  # shorter values would redact ordinary words; no real API key is this short

_secrets: set[str] = set()

_PATTERNS = [
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 " + REDACTED),
    (re.compile(r"\b(sk|pk|rk|hf|ghp|gho|xox[abp])[-_][A-Za-z0-9_-]{12,}"), REDACTED),
    (re.compile(r"(?i)\b(api[_-]?key|(?:access|auth|refresh)[_-]?token|client[_-]?secret|secret|password|passwd|authorization)(\"?\s*[:=]\s*\"?)[^\s\"',;&]+"),
     r"\1\2" + REDACTED),
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@:]+:[^\s/@]+@"), r"\1" + REDACTED + "@"),
]


def add_secret(value: str | None) -> None:
    """Remember a secret value (an API key read from the environment) so that `redact` removes it everywhere."""
    if value and len(value) >= _MIN_SECRET:
        _secrets.add(value)


def secret_from_env(name: str | None) -> None:
    """Register the value of the environment variable `name`, when it is set."""
    if name:
        add_secret(os.environ.get(name))


def redact(text: str) -> str:
    """`text` with every registered secret value replaced by [REDACTED]. Cheap when none is registered."""
    for secret in _secrets:
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


def redact_data(data):
    """A JSON-like value with `redact_error` applied to every string value in it (keys are kept)."""
    if isinstance(data, str):
        return redact_error(data)
    if isinstance(data, dict):
        return {k: redact_data(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [redact_data(v) for v in data]
    return data
