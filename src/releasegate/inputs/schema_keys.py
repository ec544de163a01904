"""Which key paths the config's JSON Schema knows: a `--set` key is checked here before it is applied, so a typo
is refused with the closest known key instead of being merged and rejected as somebody else's line."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from .files import field_path
from .schema_check import schema

if TYPE_CHECKING:
    from .composition import Override

__all__ = ["check_key"]


def check_key(override: Override) -> None:
    """InputError unless every part of `override.parts` is a key (or a list item) the config schema allows there.
    Below a free-form mapping (`extra_body`, `headers`) any key goes."""
    options = [schema("config")]
    for i, part in enumerate(override.parts):
        options = _expand(options, "config")
        if not options or any(_free(s, part) for s in options):
            return
        following = [child for s in options for child in _child(s, part)]
        if not following:
            _refuse(override, i, options)
        options = following


def _expand(options: list[Any], name: str) -> list[dict[str, Any]]:
    """The schemas `options` stand for, with `$ref`s followed and allOf / anyOf / oneOf branches flattened."""
    out: list[dict[str, Any]] = []
    stack = list(options)
    while stack and len(out) < 256:
        s = stack.pop(0)
        if not isinstance(s, dict):
            continue
        if "$ref" in s:
            stack.append(_resolve(s["$ref"], name))
        stack += [sub for key in ("allOf", "anyOf", "oneOf") for sub in s.get(key, ())]
        stack += [s[key] for key in ("then", "else") if isinstance(s.get(key), dict)]
        out.append(s)
    return out


def _resolve(ref: str, name: str) -> dict[str, Any]:
    document, _, pointer = ref.partition("#")
    root = schema(document.removesuffix(".schema.json").rsplit("/", 1)[-1] if document else name)
    node: Any = root
    for token in filter(None, pointer.split("/")):
        node = node.get(token.replace("~1", "/").replace("~0", "~"), {}) if isinstance(node, dict) else {}
    return node if isinstance(node, dict) else {}


def _free(s: dict[str, Any], part: str | int) -> bool:
    """A schema that takes any key there: an object with no `properties` and no `additionalProperties: false`."""
    if isinstance(part, int):
        return False
    return _is_object(s) and "properties" not in s and "additionalProperties" not in s \
        and "patternProperties" not in s


def _is_object(s: dict[str, Any]) -> bool:
    kind = s.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind)


def _child(s: dict[str, Any], part: str | int) -> list[Any]:
    if isinstance(part, int):
        return [s["items"]] if isinstance(s.get("items"), dict) else []
    if part in s.get("properties", {}):
        return [s["properties"][part]]
    extra = s.get("additionalProperties")
    return [extra] if isinstance(extra, dict) else []


def _refuse(override: Override, i: int, options: list[dict[str, Any]]) -> None:
    part, before = override.parts[i], list(override.parts[:i])
    where = field_path(before) or "the config"
    if isinstance(part, int):
        raise InputError(f"--set {override.key}: {where} is not a list")
    names = sorted({k for s in options for k in s.get("properties", {})})
    if not names and any("items" in s or s.get("type") == "array" for s in options):
        raise InputError(f"--set {override.key}: {where} is a list", hint=f"name an item: {where}[0].{part}")
    if not names:
        raise InputError(f"--set {override.key}: {where} takes a value, not keys")
    close = difflib.get_close_matches(part, names, n=1, cutoff=0.6)
    hint = f"did you mean {field_path([*before, close[0]])}?" if close else f"known keys: {', '.join(names)}"
    raise InputError(f"--set {override.key}: unknown key '{part}'" + (f" under {where}" if before else ""),
                     hint=hint)
