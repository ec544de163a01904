"""Reading user files: path checks, size-limited UTF-8 text, safe YAML with line numbers, field paths.

Every loader goes through here (and `schema_check` for JSON Schema validation) so that every rejection names
file, line and field the same way. The bytes come through the border (`releasegate.border.files`: regular files
only, read with a cap); its readers are named here too, so a loader imports one module.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from ..border.files import (
    MAX_FILE_BYTES,
    check_regular,
    exists,
    is_dir,
    is_file,
    open_regular,
    read_capped,
    read_text,
    sha256_file,
)
from ..border.structured import json_loads
from ..errors import InputError, Where

__all__ = [
    "read_text", "load_json", "load_yaml", "load_yaml_text", "field_path", "line_of", "exists", "is_file", "is_dir", "resolve_under", "open_regular",
    "check_regular", "read_capped", "sha256_file", "MAX_FILE_BYTES", "KeyAt", "nowhere", "key_at", "named_file",
]

KeyAt = Callable[..., Where]
"""`at(*parts)`: the file, line and field of the value at a key path of a YAML section (`['suites', 0, 'path']`),
the layer that wrote it for a composed config (`composition.Composed.at`)."""


def nowhere(*parts: str | int) -> Where:
    """A `KeyAt` for a section no file stands behind (built in code): the field only."""
    return Where(field=field_path(list(parts)) or None)


def _under(path: Path, base: Path | None) -> bool:
    """Whether `path` lies under `base` (a relative path resolved there, not an absolute one named elsewhere)."""
    if base is None or os.path.isabs(path) != os.path.isabs(base):
        return False
    return not os.path.relpath(path, base).startswith("..")


def key_at(file: Path, node: yaml.Node | None) -> KeyAt:
    """The `KeyAt` of a YAML file read on its own: the file, the line of the key (`line_of`), the field."""
    return lambda *parts: Where(file=file, line=line_of(node, list(parts)), field=field_path(list(parts)) or None)


def named_file(path: Path, *, what: str, where: Where, base: Path | None = None) -> Path:
    """`path`, which a key of a user's file names: a missing file is the key's error (its file, line and field,
    or the --set that gave it), not an error about a file nobody can open. `base`: the directory a relative
    path starts from, named in the hint (for a config, the directory of the config that is run, whichever
    `extends:` layer wrote the key)."""
    if not exists(path):
        start = f": it is read from {'the current directory' if str(base) == '.' else f'{base}/'}" if _under(path, base) else ""
        missing = "is a link to nothing (or a loop of links)" if os.path.lexists(path) else "not found"
        raise InputError(f"{what} {path} {missing}", **where, hint=f"check the path{start}")
    return Path(path)

_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_YAML_BYTES = 4 * 1024 * 1024  # configs, rubrics, rule files and price tables are hand-written and small
MAX_YAML_NODES = 200_000  # after expanding aliases: a "billion laughs" document stops here
MAX_DEPTH = 64  # nesting of YAML collections; JSON lines are limited by the parser (RecursionError)


def resolve_under(here: Path, relative: str) -> Path:
    """A config path resolved against the config's directory, `..` folded, so reports show clean paths."""
    return Path(os.path.normpath(here / relative))


def load_yaml(path: Path, *, what: str) -> tuple[Any, yaml.Node | None]:
    """Parse YAML safely (SafeLoader only: no Python objects); return the data and the node tree (for line
    numbers of later errors). Rejects files over MAX_YAML_BYTES, nesting deeper than MAX_DEPTH and documents
    whose aliases expand past MAX_YAML_NODES."""
    text = read_text(path, what=what, max_bytes=MAX_YAML_BYTES)
    return _parse_yaml(text, path)


def load_json(path: Path, *, what: str) -> Any:
    """A whole JSON file parsed by the border's parser (depth and non-finite numbers bounded); a parse error
    names the file and its line."""
    try:
        return json_loads(read_text(path, what=what))
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", file=path, line=exc.lineno) from None
    except (ValueError, RecursionError) as exc:
        raise InputError(f"not valid JSON: {str(exc).splitlines()[0][:120]}", file=path) from None


def stored_yaml(path: Path, *, what: str) -> dict[str, Any] | None:
    """A mapping releasegate wrote as YAML (a run's config.yaml snapshot), read with the same limits as any YAML;
    None when it is missing, unreadable or not a mapping: it then says nothing."""
    try:
        data, _ = load_yaml(path, what=what)
    except InputError:
        return None
    return data if isinstance(data, dict) else None


def load_yaml_text(text: str, *, source: str) -> Any:
    """YAML given as text (a `--set` value), read with the same safe loader and limits as a file; errors name
    `source`."""
    return _parse_yaml(text, source)[0]


_Loader = Callable[[str], Any]  # yaml.SafeLoader or yaml.CSafeLoader: no common base class
_FAST_LOADER: _Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser when PyYAML was built with it (the same safe constructors and resolver, a C scanner and
parser): a config or rubric parses several times faster. A document it rejects is parsed again by the pure-Python
loader, so an error names the line with the same words whichever parser is installed."""


def _parse_yaml(text: str, path: Path | str) -> tuple[Any, yaml.Node | None]:
    if _FAST_LOADER is not yaml.SafeLoader:
        try:
            return _compose_and_construct(text, path, _FAST_LOADER)
        except (yaml.YAMLError, RecursionError, ValueError, TypeError, OverflowError):
            pass  # rejected: parsed again below, so the error reads as the pure-Python loader words it
    return _read_or_reject(text, path, yaml.SafeLoader)


def _read_or_reject(text: str, path: Path | str, loader: _Loader) -> tuple[Any, yaml.Node | None]:
    """The document and its node tree, or the InputError naming what is wrong with it and where."""
    try:
        return _compose_and_construct(text, path, loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        line = mark.line + 1 if mark is not None else None
        raise InputError(f"malformed YAML: {problem}", file=path, line=line) from None
    except RecursionError:
        raise InputError(f"YAML nested too deeply (more than {MAX_DEPTH} levels)", file=path) from None
    except (ValueError, TypeError, OverflowError) as exc:  # a scalar the safe constructors reject: 2021-13-45
        raise InputError(f"malformed YAML value: {_first_line(exc)}", file=path) from None


def _compose_and_construct(text: str, path: Path | str, loader_class: _Loader) -> tuple[Any, yaml.Node | None]:
    """One parse: the node tree (checked by `_check_shape` before anything is built from it), then the data
    constructed from that tree, as `yaml.safe_load` would build it."""
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        _check_shape(node, path)
        return (loader.construct_document(node) if node is not None else None), node
    finally:
        loader.dispose()


def _check_shape(root: yaml.Node | None, path: Path | str) -> None:
    """Depth and expanded size of a node tree (an alias counts as often as it is used); no NUL in scalars."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node, depth: int) -> int:
        if depth > MAX_DEPTH:  # also what a recursive alias (&a [*a]) runs into
            line = node.start_mark.line + 1
            raise InputError(f"YAML nested too deeply (more than {MAX_DEPTH} levels)", file=path, line=line)
        if id(node) in sizes:
            return sizes[id(node)]
        if isinstance(node, yaml.MappingNode):
            total = 1 + sum(size(k, depth + 1) + size(v, depth + 1) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            total = 1 + sum(size(child, depth + 1) for child in node.value)
        else:
            if "\x00" in node.value:  # no file name, pattern or label has one; the OS rejects it in paths
                raise InputError("NUL character in a value", file=path, line=node.start_mark.line + 1)
            if not node.value.isascii() and _SURROGATE.search(node.value):  # only ever from an escape: "\ud800"
                raise InputError("a lone surrogate (an escape such as \\ud800) in a value: it is no text",
                                 file=path, line=node.start_mark.line + 1, hint="write the character itself")
            total = 1
        if total > MAX_YAML_NODES:
            raise InputError(f"YAML too large: more than {MAX_YAML_NODES} values once aliases are expanded",
                             file=path, line=node.start_mark.line + 1)
        sizes[id(node)] = total
        return total

    if root is not None:
        size(root, 0)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def field_path(parts: list[str | int]) -> str:
    """['suites', 0, 'path'] -> 'suites[0].path'."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def line_of(node: yaml.Node | None, parts: list[str | int]) -> int | None:
    """Walk the YAML node tree to the deepest node on `parts`; return its 1-based line."""
    if node is None:
        return None
    best: int = node.start_mark.line + 1
    for part in parts:
        child = None
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == part:
                    child, best = value, key.start_mark.line + 1
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            child = node.value[part]
            best = child.start_mark.line + 1
        if child is None:
            break
        node = child
    return best
