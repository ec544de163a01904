"""Reading user files: safe YAML with line numbers, JSON Schema validation with file:line and field path.

Every loader goes through here so that every rejection reads the same way:
`suites/x.jsonl:12: field 'messages[0].role': 'bot' is not one of ['system', 'user', 'assistant']`.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from .errors import InputError

__all__ = ["read_text", "load_yaml", "validate", "field_path", "line_of", "schema", "exists", "is_file", "is_dir"]

MAX_FILE_BYTES = 64 * 1024 * 1024  # a larger suite is a mistake, not an input
MAX_YAML_BYTES = 4 * 1024 * 1024  # configs, rubrics, rule files and price tables are hand-written and small
MAX_YAML_NODES = 200_000  # after expanding aliases: a "billion laughs" document stops here
MAX_DEPTH = 64  # nesting of YAML collections; JSON lines are limited by the parser (RecursionError)


def exists(path: Path) -> bool:
    """Path.exists that says False for a path the OS cannot even look up (too long, NUL byte)."""
    try:
        return Path(path).exists()
    except (OSError, ValueError):
        return False


def is_file(path: Path) -> bool:
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


def is_dir(path: Path) -> bool:
    try:
        return Path(path).is_dir()
    except (OSError, ValueError):
        return False


def read_text(path: Path, *, what: str, max_bytes: int = MAX_FILE_BYTES) -> str:
    """Read a UTF-8 text file or raise an InputError that says what was expected there."""
    if not exists(path):
        raise InputError(f"{what} not found", file=path, hint="check the path")
    if is_dir(path):
        raise InputError(f"{what} is a directory, expected a file", file=path)
    try:
        if path.stat().st_size > max_bytes:
            raise InputError(f"{what} is larger than {max_bytes / 2**20:g} MiB", file=path)
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", file=path, hint="save it as UTF-8") from None
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror}", file=path) from None


def load_yaml(path: Path, *, what: str) -> tuple[Any, yaml.Node | None]:
    """Parse YAML safely (SafeLoader only: no Python objects); return the data and the node tree (for line
    numbers of later errors). Rejects files over MAX_YAML_BYTES, nesting deeper than MAX_DEPTH and documents
    whose aliases expand past MAX_YAML_NODES."""
    text = read_text(path, what=what, max_bytes=MAX_YAML_BYTES)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        _check_shape(node, path)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        line = mark.line + 1 if mark is not None else None
        raise InputError(f"malformed YAML: {problem}", file=path, line=line) from None
    except RecursionError:
        raise InputError(f"YAML nested too deeply (more than {MAX_DEPTH} levels)", file=path) from None
    except (ValueError, TypeError, OverflowError) as exc:  # a scalar the safe constructors reject: 2021-13-45
        raise InputError(f"malformed YAML value: {_first_line(exc)}", file=path) from None
    return data, node


def _check_shape(root: yaml.Node | None, path: Path) -> None:
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
    best = node.start_mark.line + 1
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


@cache
def schema(name: str) -> dict:
    """A JSON Schema shipped inside the package (config, case, rubric)."""
    text = resources.files("releasegate.schemas").joinpath(f"{name}.schema.json").read_text("utf-8")
    return json.loads(text)


@cache
def _validator(name: str):
    import jsonschema
    from referencing import Registry, Resource

    registry = Registry().with_resources(
        (schema(n)["$id"], Resource.from_contents(schema(n))) for n in ("config", "case", "rubric")
    )
    if name == "forbidden":  # a standalone forbidden-rules file is a sub-schema of the rubric
        return jsonschema.Draft202012Validator({"$ref": schema("rubric")["$id"] + "#/$defs/rules_file"}, registry=registry)
    return jsonschema.Draft202012Validator(schema(name), registry=registry)


def _describe(error) -> tuple[list[str | int], str]:
    """Turn a jsonschema error into (field path, short human message)."""
    parts = list(error.absolute_path)
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})), key=str)
        allowed = ", ".join(sorted(error.schema.get("properties", {})))
        return parts + [extra[0]], f"unknown key '{extra[0]}' (allowed: {allowed})"
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return parts + [missing], "required key is missing"
    if error.validator == "type":
        want = error.validator_value
        want = " or ".join(want) if isinstance(want, list) else want
        return parts, f"expected {want}, got {type(error.instance).__name__} {_short(error.instance)}"
    if error.validator == "oneOf" and not error.context:
        return parts, "matches more than one allowed form"
    return parts, error.message if len(error.message) < 200 else error.message[:197] + "..."


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def validate(
    data: Any, schema_name: str, *, file: Path, node: yaml.Node | None = None, line: int | None = None
) -> None:
    """Validate against a shipped schema; raise InputError at the most relevant error."""
    import jsonschema

    try:
        errors = list(_validator(schema_name).iter_errors(data))
    except RecursionError:
        raise InputError("nested too deeply", file=file, line=line) from None
    if not errors:
        return
    error = jsonschema.exceptions.best_match(errors)
    if error.validator == "oneOf" and schema_name == "case" and not error.absolute_path:
        raise InputError("a case needs exactly one of 'messages' or 'prompt'", file=file, line=line)
    parts, message = _describe(error)
    where = line if line is not None else line_of(node, parts)
    raise InputError(message, file=file, line=where, field=field_path(parts) or None)
