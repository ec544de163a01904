"""Config composition: an `extends:` chain and `--set KEY=VALUE` overrides, merged into the one config that runs.

A config may name a base config (`extends: base.yaml`, relative to the file that names it), which may extend
another; a file met twice on the chain is a cycle and refused. The chain is merged from the first base to the
config that is run: mappings key by key, anything else (a list, a scalar) replaced whole, and a key set to null
removed (its default applies). `--set` overrides come last, in the order given; each key is checked against the
config's JSON Schema before it is applied (`schema_keys.check_key`: an unknown key names the closest known one).

The composed mapping is then validated and parsed like a single file, and every error names the layer that
wrote the field (`Composed.at`): its file and line, or the `--set` that gave it. Paths in every layer resolve
against the directory of the config that is run, as if all its keys were written there.
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import field
from pathlib import Path
from typing import Any

import yaml

from ..data_classes import dataclass
from ..errors import InputError, Where
from .files import exists, field_path, line_of, load_yaml, load_yaml_text
from .schema_keys import check_key

__all__ = ["Override", "Composed", "parse_override", "recorded_override", "compose", "value_at", "MAX_CHAIN"]

MAX_CHAIN = 16
"""Configs an `extends:` chain may hold, the config that is run included."""
MAX_VALUE_CHARS = 4096  # a --set value is typed on a command line
MAX_KEY_PARTS = 16  # the config schema nests 6 levels at most; a longer key path names nothing there
MAX_KEY_CHARS = 512
_PART = re.compile(r"([^.\[\]=\s]+)|\[(\d+)\]")


@dataclass(frozen=True)
class Override:
    """One `--set KEY=VALUE`: the key as written, its path (names and list indices) and the value as YAML read it."""

    key: str
    parts: tuple[str | int, ...]
    value: Any

    def as_record(self, value: Any = ...) -> dict[str, Any]:
        """What a run records of it (manifest.json): the key and the value, `value` in place of its own."""
        return {"key": self.key, "value": self.value if value is ... else value}


def parse_override(text: str) -> Override:
    """`KEY=VALUE` -> Override; the value is read as YAML (`8` a number, `true` a boolean, empty or `null`: remove
    the key; `[a, b]` and `{k: v}` replace a list or a mapping). Raises InputError naming the `--set`."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise InputError(f"--set {text!r}: expected KEY=VALUE", hint="e.g. --set generation.max_new_tokens=32")
    if not key.isprintable():
        raise InputError(f"--set {text!r}: the key has a control character")
    parts = _key_parts(key, text)
    if parts[0] == "extends":
        raise InputError("--set extends: the chain is read from the files", hint="give the config to run with -c")
    if len(raw) > MAX_VALUE_CHARS:
        raise InputError(f"--set {key}: the value is longer than {MAX_VALUE_CHARS} characters")
    value = load_yaml_text(raw, source=f"--set {key}") if raw.strip() else None
    if isinstance(value, dict | list) and not raw.lstrip().startswith(("[", "{")):
        raise InputError(f"--set {key}: {raw!r} reads as a YAML {'mapping' if isinstance(value, dict) else 'list'}",
                         hint="quote it to give a string, or write [a, b] / {k: v}")
    return Override(key=key, parts=parts, value=value)


def recorded_override(record: dict[str, Any]) -> Override:
    """An override as a run recorded it (`Override.as_record`), to compose the original config again."""
    key = str(record.get("key", ""))
    return Override(key=key, parts=_key_parts(key, key), value=record.get("value"))


def value_at(data: Any, parts: tuple[str | int, ...]) -> Any:
    """The value at a key path of a mapping; None where there is none."""
    for part in parts:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _key_parts(key: str, text: str) -> tuple[str | int, ...]:
    if len(key) > MAX_KEY_CHARS:
        raise InputError(f"--set {_shown(text)}: the key is longer than {MAX_KEY_CHARS} characters")
    parts: list[str | int] = []
    pos = 0
    while pos < len(key):
        if len(parts) >= MAX_KEY_PARTS:
            raise InputError(f"--set {_shown(text)}: the key path is more than {MAX_KEY_PARTS} levels deep",
                             hint="no config key is nested that deep")
        if parts and key[pos] == ".":
            pos += 1
        match = _PART.match(key, pos)
        if match is None:
            raise InputError(f"--set {text!r}: {key!r} is not a key path",
                             hint="names joined by '.', list items as [0]: suites[0].path")
        parts.append(match.group(1) if match.group(1) is not None else int(match.group(2)))
        pos = match.end()
    return tuple(parts)


def _shown(text: str) -> str:
    """A --set as an error shows it: its first 80 characters, quoted."""
    return repr(text if len(text) <= 80 else text[:77] + "...")


@dataclass
class _Origin:
    """Which layer wrote a value; `children` for a mapping (or a list an override reached into)."""

    layer: int
    children: dict[str | int, _Origin] | None = None


@dataclass(frozen=True)
class Layer:
    """One source of the composed config: a file (with its YAML nodes, for line numbers) or one override."""

    file: Path | None
    node: yaml.Node | None = None
    override: Override | None = None
    written: dict[str, Any] | None = None
    """A file layer's mapping as written (`extends` left out): the keys it sets, null ones included."""


@dataclass
class Composed:
    """The merged config and where each of its values came from."""

    data: dict[str, Any]
    layers: list[Layer]
    origin: _Origin
    extends: list[Path] = field(default_factory=list)
    """The files the config extends, nearest first, resolved."""
    overrides: tuple[Override, ...] = ()

    @property
    def plain(self) -> bool:
        """One file, nothing merged into it: the config as written."""
        return not self.extends and not self.overrides

    def layer_of(self, parts: list[str | int]) -> Layer:
        """The layer that wrote the value at `parts` (or, for a key it lacks, the mapping around it)."""
        origin = self.origin
        for part in parts:
            if origin.children is None or part not in origin.children:
                break
            origin = origin.children[part]
        return self.layers[origin.layer]

    def at(self, *parts: str | int) -> Where:
        """InputError's `file`, `line` and `field` for the value at `parts`: the file and line of the layer that
        wrote it, or `--set KEY` for an override."""
        layer, where = self.layer_of(list(parts)), field_path(list(parts))
        if layer.override is not None:
            return Where(file=f"--set {layer.override.key}", line=None, field=where)
        return Where(file=layer.file, line=line_of(layer.node, list(parts)), field=where)

    def relocate(self, error: InputError) -> InputError:
        """A schema error of the composed config, moved to the layer that wrote its field."""
        if self.plain or error.field is None:
            return error if self.plain else InputError(error.message, **self.at(), hint=error.hint)
        return InputError(error.message, **self.at(*_field_parts(error.field)), hint=error.hint)


def _field_parts(text: str) -> list[str | int]:
    """'suites[0].path' -> ['suites', 0, 'path'] (the inverse of `field_path`)."""
    return [m.group(1) if m.group(1) is not None else int(m.group(2)) for m in _PART.finditer(text)]


def compose(path: Path, overrides: tuple[Override, ...] = ()) -> Composed:
    """The config at `path` with its `extends:` chain merged under it and `overrides` applied over it."""
    chain = _chain(Path(path))
    layers = [Layer(file=p, node=n, written=copy.deepcopy(raw)) for p, raw, n in reversed(chain)]
    data: Any = None
    origin = _Origin(0)
    for index, (_, raw, _) in enumerate(reversed(chain)):
        data, origin = _merge(data, origin, raw, index) if index else (raw, _origins(raw, 0))
    for override in overrides:
        check_key(override)
        layers.append(Layer(file=None, override=override))
        _apply(data, origin, override, len(layers) - 1)
    return Composed(data=data, layers=layers, origin=origin, extends=[p for p, _, _ in chain[1:]],
                    overrides=tuple(overrides))


def _chain(path: Path) -> list[tuple[Path, dict[str, Any], yaml.Node | None]]:
    """[(file, mapping without `extends`, nodes)] from the config that is run to its first base."""
    chain: list[tuple[Path, dict[str, Any], yaml.Node | None]] = []
    seen: list[Path] = []
    here: Path | None = path
    while here is not None:
        data, node = load_yaml(here, what="config" if not chain else "extended config")
        if not isinstance(data, dict):
            raise InputError("a config must be a mapping of keys (target, suites, rubric, ...)", file=here, line=1)
        data = dict(data)
        seen.append(Path(os.path.realpath(here)))
        named = data.pop("extends", None)
        chain.append((here, data, node))
        here = _base_of(named, here, node, seen) if named is not None else None
    return chain


def _base_of(named: Any, path: Path, node: yaml.Node | None, seen: list[Path]) -> Path:
    """The file `extends:` names in `path`, refused when missing, not a file name, a cycle or too deep."""
    where = Where(file=path, line=line_of(node, ["extends"]), field="extends")
    if not isinstance(named, str) or not named.strip():
        raise InputError("expected the path of a config file to extend", **where)
    base = Path(os.path.normpath(path.parent / named))
    if not exists(base):
        raise InputError(f"extended config {base} not found", **where, hint="a path relative to this file")
    if Path(os.path.realpath(base)) in seen:
        cycle = " -> ".join(p.name for p in [*seen, base])
        raise InputError(f"extends makes a cycle: {cycle}", **where, hint="a config cannot extend itself")
    if len(seen) >= MAX_CHAIN:
        raise InputError(f"more than {MAX_CHAIN} configs on the extends chain", **where)
    return base


def _origins(value: Any, layer: int) -> _Origin:
    if isinstance(value, dict):
        return _Origin(layer, {k: _origins(v, layer) for k, v in value.items()})
    return _Origin(layer)


def _merge(base: Any, origin: _Origin, over: Any, layer: int) -> tuple[Any, _Origin]:
    """`over` (layer `layer`) merged onto `base`: mappings key by key, null removes a key, the rest replaced."""
    if not (isinstance(base, dict) and isinstance(over, dict)):
        return copy.deepcopy(over), _origins(over, layer)
    merged, children = dict(base), dict(origin.children or {})
    for key, value in over.items():
        if value is None:
            merged.pop(key, None)
            children.pop(key, None)
        elif key in merged:
            merged[key], children[key] = _merge(merged[key], children.get(key, _Origin(origin.layer)), value, layer)
        else:
            merged[key], children[key] = copy.deepcopy(value), _origins(value, layer)
    return merged, _Origin(layer, children)


def _apply(data: dict[str, Any], origin: _Origin, override: Override, layer: int) -> None:
    """Set (or, for null, remove) the value at the override's path; missing mappings on the way are created."""
    node: Any = data  # a mapping or a list, as the path walks into it
    here = origin
    for i, part in enumerate(override.parts):
        last = i == len(override.parts) - 1
        _check_container(node, part, override.parts[:i], override)
        if here.children is None:
            here.children = {k: _Origin(here.layer) for k in (node if isinstance(node, dict) else range(len(node)))}
        if last:
            if override.value is None and isinstance(node, dict):
                node.pop(part, None)
                here.children.pop(part, None)
            else:
                node[part] = copy.deepcopy(override.value)
                here.children[part] = _Origin(layer)
            return
        if isinstance(node, dict) and not isinstance(node.get(part), dict | list):
            node[part] = {}  # a section the config does not have yet
            here.children[part] = _Origin(layer, {})
        node, here = node[part], here.children.setdefault(part, _Origin(layer))


def _check_container(node: Any, part: str | int, before: tuple[str | int, ...], override: Override) -> None:
    """The value the path walks into takes this part: a name in a mapping, an existing index in a list."""
    where = field_path(list(before)) or "the config"
    if isinstance(part, int):
        if not isinstance(node, list):
            raise InputError(f"--set {override.key}: {where} is not a list")
        if part >= len(node):
            raise InputError(f"--set {override.key}: {where} has {len(node)} item(s), there is no [{part}]",
                             hint="replace the whole list instead: --set 'KEY=[...]'")
    elif isinstance(node, list):
        raise InputError(f"--set {override.key}: {where} is a list, not a mapping",
                         hint=f"name an item, e.g. {where}[0].{part}")
    elif not isinstance(node, dict):
        raise InputError(f"--set {override.key}: {where} is a value, not a mapping")
