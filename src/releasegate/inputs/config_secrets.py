"""Credentials in a config's raw `target:` and `judge:` sections, before and beside the parsed `TargetConfig`.

They are registered with `redaction` before validation (an error may quote a value), masked in the snapshot a
run keeps, and restored from the original config when a run is resumed from that snapshot.
"""

from __future__ import annotations

import copy
from pathlib import Path

from ..errors import InputError
from ..redaction import add_secret, mapping_secrets, mask_mapping, mask_url, secret_from_env, url_secrets
from .files import load_yaml

__all__ = ["masked_config", "register_raw_secrets", "restore_secrets", "restore_from"]


def masked_config(data: dict) -> dict:
    """A copy of the raw config with the credentials of its target and judge sections masked."""
    raw = copy.deepcopy(data)
    variants = [v for v in raw.get("variants") or () if isinstance(v, dict)]  # an endpoint variant's base_url
    for target in (raw.get("target"), raw.get("judge"), *variants):
        if not isinstance(target, dict):
            continue
        extra = tuple(target.get("secret_keys") or ())
        if isinstance(target.get("base_url"), str):
            target["base_url"] = mask_url(target["base_url"], extra)
        for key in ("extra_body", "headers"):
            if key in target:
                target[key] = mask_mapping(target[key], extra)
    return raw


def register_raw_secrets(target) -> None:
    """Best-effort registration from the unvalidated target section (a validation error may quote a value)."""
    if not isinstance(target, dict):
        return
    try:
        extra = tuple(k for k in target.get("secret_keys") or () if isinstance(k, str))
        if isinstance(target.get("base_url"), str):
            for value in url_secrets(target["base_url"], extra):
                add_secret(value)
        for key in ("extra_body", "headers"):
            for value in mapping_secrets(target.get(key), extra):
                add_secret(value)
        for spec in (target.get("headers") or {}).values() if isinstance(target.get("headers"), dict) else ():
            if isinstance(spec, dict) and isinstance(spec.get("env"), str):
                secret_from_env(spec["env"])
        if isinstance(target.get("api_key_env"), str):
            secret_from_env(target["api_key_env"])
    except (TypeError, ValueError, AttributeError):
        pass


def restore_secrets(data: dict, original: Path) -> dict:
    """`data` (a masked snapshot) with the target credentials of the config it was made from, when that
    config's target, masked, is still the snapshot's: a resumed run talks to the endpoint as the run did."""
    try:
        source, _ = load_yaml(original, what="config")
    except InputError:
        return data
    return restore_from(data, source)


def restore_from(data: dict, source) -> dict:
    """`restore_secrets` from the original config's mapping (composed, when it extends another or had --set)."""
    if not isinstance(source, dict):
        return data
    data = dict(data)
    masked = masked_config(source)
    for section in ("target", "judge"):  # the judge's credentials come back the same way
        if isinstance(source.get(section), dict) and masked.get(section) == data.get(section):
            register_raw_secrets(source[section])
            data[section] = copy.deepcopy(source[section])
    return data
