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

__all__ = ["read_text", "load_yaml", "validate", "field_path", "line_of", "schema"]

MAX_FILE_BYTES = 64 * 1024 * 1024  # a larger config, suite or rubric is a mistake, not an input


def read_text(path: Path, *, what: str) -> str:
    """Read a UTF-8 text file or raise an InputError that says what was expected there."""
    if not path.exists():
        raise InputError(f"{what} not found", file=path, hint="check the path")
    if path.is_dir():
        raise InputError(f"{what} is a directory, expected a file", file=path)
    if path.stat().st_size > MAX_FILE_BYTES:
        raise InputError(f"{what} is larger than {MAX_FILE_BYTES // 2**20} MiB", file=path)
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", file=path, hint="save it as UTF-8") from None
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror}", file=path) from None


def load_yaml(path: Path, *, what: str) -> tuple[Any, yaml.Node | None]:
    """Parse YAML safely; return the data and the node tree (for line numbers of later errors)."""
    text = read_text(path, what=what)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        line = mark.line + 1 if mark is not None else None
        raise InputError(f"malformed YAML: {problem}", file=path, line=line) from None
    return data, node


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
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
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

    errors = list(_validator(schema_name).iter_errors(data))
    if not errors:
        return
    error = jsonschema.exceptions.best_match(errors)
    if error.validator == "oneOf" and schema_name == "case" and not error.absolute_path:
        raise InputError("a case needs exactly one of 'messages' or 'prompt'", file=file, line=line)
    parts, message = _describe(error)
    where = line if line is not None else line_of(node, parts)
    raise InputError(message, file=file, line=where, field=field_path(parts) or None)
