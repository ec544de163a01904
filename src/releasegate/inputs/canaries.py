"""The sealed canary file `releasegate leakage canaries` writes and `leakage.canaries` names: read when the config is
(a broken or edited file stops the run before a model loads), each fault named by the file and its field."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..border.files import read_capped
from ..border.json_reader import NotJson, read_json
from ..errors import InputError

__all__ = ["CANARY_KIND", "MAX_CANARIES", "canary_seal", "read_canaries"]

CANARY_KIND = "releasegate-canaries"
MAX_CANARIES = 1000
_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_HINT = "make new canaries with releasegate leakage canaries and train with them"


def canary_seal(prefix: str, digits: int, canaries: Sequence[dict[str, str]]) -> str:
    """The sha256 of what a run relies on: the prefix, the format and every canary."""
    body = {"prefix": prefix, "digits": digits, "canaries": list(canaries)}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def read_canaries(path: Path) -> tuple[str, list[dict[str, str]]]:
    """(prefix, canaries) of a sealed canary file; a malformed or edited one is an InputError naming its field."""
    try:
        doc = read_json(read_capped(path, what="canary file", max_bytes=1 << 20), what="canary file")
    except NotJson as exc:
        raise InputError(str(exc), file=path, hint=_HINT) from None
    if not isinstance(doc, dict) or doc.get("kind") != CANARY_KIND:
        raise InputError("not a canary file", file=path, field="kind", hint=_HINT)
    prefix, digits, canaries = doc.get("prefix"), doc.get("digits"), doc.get("canaries")
    if not isinstance(prefix, str) or not 0 < len(prefix) <= 200:
        raise InputError("must be a text of 1 to 200 characters", file=path, field="prefix", hint=_HINT)
    if type(digits) is not int or not 4 <= digits <= 32:
        raise InputError("must be a whole number from 4 to 32", file=path, field="digits", hint=_HINT)
    if not isinstance(canaries, list) or not 0 < len(canaries) <= MAX_CANARIES:
        raise InputError(f"must be a list of 1 to {MAX_CANARIES} canaries", file=path, field="canaries", hint=_HINT)
    _check_each(canaries, digits, path)
    if doc.get("sha256") != canary_seal(prefix, digits, canaries):
        raise InputError("the canaries do not match their seal (the file was edited)", file=path, field="sha256",
                         hint=_HINT)
    return prefix, canaries


def _check_each(canaries: list[Any], digits: int, path: Path) -> None:
    seen: set[str] = set()
    for i, c in enumerate(canaries):
        secret = c.get("secret") if isinstance(c, dict) else None
        name = c.get("id") if isinstance(c, dict) else None
        if not isinstance(secret, str) or not re.fullmatch(f"[0-9]{{{digits}}}", secret):
            raise InputError(f"must be {digits} digits 0-9", file=path, field=f"canaries[{i}].secret", hint=_HINT)
        if not isinstance(name, str) or not _ID.fullmatch(name) or name in seen:
            raise InputError("must be a unique id of letters, digits, '.', '_', '-'", file=path,
                             field=f"canaries[{i}].id", hint=_HINT)
        seen.add(name)
