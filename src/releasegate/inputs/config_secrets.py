"""Credentials anywhere in a config, before and beside its parsed sections.

One walk over the whole raw config (target, judge, `response_cache_probe.embeddings`, every variant, whatever
an `extends:` layer or a `--set` wrote) finds them by shape rather than by a list of fields:

- a value that is a URL (`scheme://...`): its userinfo and non-public query values (`redaction.url_secrets`);
- a value under a secret-looking key (`redaction.is_secret_name`, or a name in the enclosing section's
  `secret_keys`), at any depth: `api_key`, `Authorization`, `extra_body.auth.token`...;
- the environment value a key names: `{env: NAME}` anywhere, and a secret-looking `*_env` key (`api_key_env`).
  Such keys and `secret_keys` name a variable or a field, never a value: they are kept as they are.

Every one is registered with `redaction` before validation (an error may quote a value), masked in the
snapshot a run keeps (`masked_config`), and restored from the original config when a run is resumed from that
snapshot (`restore_from`).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..redaction import REDACTED, add_secret, is_secret_name, mask_url, secret_from_env, url_secrets
from .files import load_yaml

__all__ = ["masked_config", "register_config_secrets", "register_raw_secrets", "config_secrets", "restore_secrets",
           "restore_from"]

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")
"""A value that is a URL as a whole, blanks around it aside (a prompt that merely mentions one is no URL-valued
key)."""


def _names_a_variable(key: object) -> bool:
    """`secret_keys` (names of fields) and `*_env` keys (names of environment variables) hold no credential."""
    return isinstance(key, str) and (key == "secret_keys" or key.lower().endswith("_env"))


def _extra(section: dict[str, Any], extra: tuple[str, ...]) -> tuple[str, ...]:
    names = section.get("secret_keys")
    return extra + tuple(n for n in names if isinstance(n, str)) if isinstance(names, list) else extra


def _env_reference(value: object) -> str | None:
    """NAME of a `{env: NAME}` reference, else None."""
    if isinstance(value, dict) and set(value) == {"env"} and isinstance(value["env"], str):
        return value["env"]
    return None


def _mask(value: Any, extra: tuple[str, ...], secret: bool) -> Any:  # a config value, masked
    if _env_reference(value) is not None:
        return dict(value)
    if isinstance(value, dict):
        inner = _extra(value, extra)
        return {k: v if _names_a_variable(k) else _mask(v, inner, secret or is_secret_name(str(k), inner))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v, extra, secret) for v in value]
    if isinstance(value, str):
        if secret:
            return REDACTED
        return mask_url(value.strip(), extra) if _URL.fullmatch(value.strip()) else value
    return value


def masked_config(data: dict[str, Any]) -> dict[str, Any]:
    """A copy of the raw config with every credential masked: URL userinfo and query tokens, values under
    secret-looking keys; `{env: NAME}` references and `*_env` names kept (they hold no value)."""
    masked: dict[str, Any] = _mask(copy.deepcopy(data), (), False)
    return masked


def config_secrets(data: object, extra: tuple[str, ...] = (), secret: bool = False) -> Iterator[tuple[str, str]]:
    """("value", a credential) and ("env", a variable holding one) for every credential `masked_config` masks."""
    reference = _env_reference(data)
    if reference is not None:
        yield "env", reference
    elif isinstance(data, dict):
        inner = _extra(data, extra)
        for key, value in data.items():
            if _names_a_variable(key):
                if isinstance(value, str) and str(key).endswith("_env") and is_secret_name(str(key)):
                    yield "env", value
                continue
            yield from config_secrets(value, inner, secret or is_secret_name(str(key), inner))
    elif isinstance(data, list):
        for value in data:
            yield from config_secrets(value, extra, secret)
    elif isinstance(data, str):
        if secret:
            yield "value", data
        elif _URL.fullmatch(data.strip()):  # blanks around it: the URL parsers strip them, so must this
            yield from (("value", v) for v in url_secrets(data.strip(), extra))


def register_config_secrets(data: object) -> None:
    """Register every credential of a raw config (or any part of one) with `redaction`: best effort, before
    validation, so nothing of an unvalidated config can make it fail."""
    try:
        for kind, value in config_secrets(data):
            if kind == "env":
                secret_from_env(value)
            else:
                add_secret(value)
    except (TypeError, ValueError, AttributeError, RecursionError):
        pass


def register_raw_secrets(section: object) -> None:
    """`register_config_secrets` of one section (the target's, the judge's, a variant's)."""
    register_config_secrets(section)


def restore_secrets(data: dict[str, Any], original: Path) -> dict[str, Any]:
    """`data` (a masked snapshot) with the credentials of the config it was made from, section by section where
    that config's section, masked, is still the snapshot's: a resumed run talks to its endpoints as the run did."""
    try:
        source, _ = load_yaml(original, what="config")
    except InputError:
        return data
    return restore_from(data, source)


def restore_from(data: dict[str, Any], source: object) -> dict[str, Any]:
    """`restore_secrets` from the original config's mapping (composed, when it extends another or had --set)."""
    if not isinstance(source, dict):
        return data
    data = dict(data)
    masked = masked_config(source)
    for section, value in source.items():  # target, judge, response_cache_probe, variants...
        if masked.get(section) == data.get(section) and masked.get(section) != value:
            register_config_secrets(value)
            data[section] = copy.deepcopy(value)
    return data
