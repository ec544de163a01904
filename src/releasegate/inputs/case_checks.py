"""A case's scoring settings checked before anything runs: the regex of its answer check, the regexes and JSON
Schemas of its format checks (a schema given as a path is read and inlined, so records are self-contained).

Every error names where the setting was written (`at`, a `files.KeyAt`): the config's file and line for a
suite's defaults (`suites[i].format[j].schema`), the suite file's line for a case's own settings.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import InputError, Where
from .files import KeyAt, load_json, named_file
from .schema_refs import check_refs

__all__ = ["check_answer", "check_regex", "resolve_format"]


def check_answer(spec: dict[str, Any] | None, at: KeyAt) -> None:
    """An answer check's regex compiles (`at("pattern")` names it otherwise)."""
    if spec and "pattern" in spec:
        check_regex(spec["pattern"], at("pattern"))


def resolve_format(spec: dict[str, Any], base_dir: Path, at: KeyAt) -> dict[str, Any]:
    """A format check with its JSON Schema inlined (a path read relative to `base_dir`) and its regex compiled."""
    spec = dict(spec)
    if "pattern" in spec:
        check_regex(spec["pattern"], at("pattern"))
    schema = spec.get("schema")
    if isinstance(schema, str):
        path = named_file(base_dir / schema, what="JSON Schema", where=at("schema"), base=base_dir)
        schema = load_json(path, what="JSON Schema")
    if schema is not None:
        import jsonschema

        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise InputError(f"invalid JSON Schema: {exc.message}", **at("schema")) from None
        except RecursionError:
            raise InputError("JSON Schema nested too deeply", **at("schema")) from None
        check_refs(schema, at("schema"))
        spec["schema"] = schema
    return spec


def check_regex(pattern: str, where: Where) -> None:
    """A pattern that does not compile is an error at `where`, the pattern shown as written in the file (not as
    a Python string, which would double every backslash)."""
    try:
        re.compile(pattern)
    except (re.error, OverflowError, RecursionError) as exc:  # a{99999999999}, 2000 nested groups
        shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
        raise InputError(f"invalid regex '{shown}': {str(exc) or type(exc).__name__}", **where) from None
