"""Validation suites: JSONL files, one case per line, validated line by line."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._loading import read_text, validate
from .config import SuiteConfig
from .errors import InputError

__all__ = ["Case", "load_suite", "load_suites"]


@dataclass(frozen=True)
class Case:
    """One validation case with the scoring that applies to it."""

    id: str
    suite: str
    expected: Any
    messages: tuple[dict, ...] | None = None
    prompt: str | None = None
    tags: dict = field(default_factory=dict)
    answer: dict | None = None
    format: tuple[dict, ...] = ()

    @property
    def input(self) -> dict:
        """The request as recorded: {'messages': [...]} or {'prompt': '...'}."""
        return {"messages": list(self.messages)} if self.messages is not None else {"prompt": self.prompt}


def load_suites(suites: tuple[SuiteConfig, ...], config_dir: Path) -> list[Case]:
    """Load every suite of a config; case ids must be unique across suites (records are keyed by them)."""
    cases: list[Case] = []
    seen: dict[str, str] = {}
    for suite in suites:
        for case in load_suite(suite, config_dir):
            if case.id in seen:
                raise InputError(
                    f"case id '{case.id}' appears in suites '{seen[case.id]}' and '{suite.name}'",
                    file=suite.path, hint="case ids must be unique across suites",
                )
            seen[case.id] = suite.name
            cases.append(case)
    return cases


def load_suite(suite: SuiteConfig, config_dir: Path) -> list[Case]:
    """Parse and validate one JSONL suite; raise InputError naming the line and field."""
    text = read_text(suite.path, what="suite")
    default_format = tuple(_resolve_format(f, config_dir, suite.path, None) for f in suite.format)
    _check_answer(suite.answer, suite.path, None)
    cases: list[Case] = []
    ids: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        case = _parse_line(line, number, suite, default_format)
        if case.id in ids:
            raise InputError(f"duplicate case id '{case.id}'", file=suite.path, line=number, field="id")
        ids.add(case.id)
        cases.append(case)
        if suite.limit and len(cases) >= suite.limit:
            break
    if not cases:
        raise InputError("suite has no cases", file=suite.path, hint="add one JSON object per line")
    return cases


def _parse_line(line: str, number: int, suite: SuiteConfig, default_format: tuple[dict, ...]) -> Case:
    try:
        raw = json.loads(line)
        json.dumps(raw, ensure_ascii=False).encode("utf-8")  # a lone surrogate (\\ud800) could never be written back
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg} (column {exc.colno})", file=suite.path, line=number) from None
    except RecursionError:
        raise InputError("JSON nested too deeply", file=suite.path, line=number) from None
    except (ValueError, UnicodeError) as exc:  # a 5000-digit number, a lone surrogate
        raise InputError(f"not valid JSON: {str(exc).splitlines()[0][:120]}", file=suite.path, line=number) from None
    if not isinstance(raw, dict):
        raise InputError("each line must be a JSON object", file=suite.path, line=number)
    validate(raw, "case", file=suite.path, line=number)
    _check_answer(raw.get("answer"), suite.path, number)
    formats = raw.get("format")
    fmt = tuple(_resolve_format(f, suite.path.parent, suite.path, number) for f in formats) if formats else default_format
    return Case(
        id=raw["id"],
        suite=suite.name,
        expected=raw["expected"],
        messages=tuple(raw["messages"]) if "messages" in raw else None,
        prompt=raw.get("prompt"),
        tags=dict(raw.get("tags", {})),
        answer=raw.get("answer") or suite.answer,
        format=fmt,
    )


def _check_answer(spec: dict | None, file: Path, line: int | None) -> None:
    if spec and "pattern" in spec:
        _compile(spec["pattern"], file, line, "answer.pattern")


def _resolve_format(spec: dict, base_dir: Path, file: Path, line: int | None) -> dict:
    """Inline a json_schema given as a path and check regexes compile, so records are self-contained."""
    spec = dict(spec)
    if "pattern" in spec:
        _compile(spec["pattern"], file, line, "format.pattern")
    schema = spec.get("schema")
    if isinstance(schema, str):
        path = base_dir / schema
        try:
            schema = json.loads(read_text(path, what="JSON Schema"))
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON: {exc.msg}", file=path, line=exc.lineno) from None
        except (ValueError, RecursionError) as exc:
            raise InputError(f"not valid JSON: {str(exc).splitlines()[0][:120]}", file=path) from None
    if schema is not None:
        import jsonschema

        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise InputError(f"invalid JSON Schema: {exc.message}", file=file, line=line, field="format.schema") from None
        except RecursionError:
            raise InputError("JSON Schema nested too deeply", file=file, line=line, field="format.schema") from None
        spec["schema"] = schema
    return spec


def _compile(pattern: str, file: Path, line: int | None, name: str) -> None:
    try:
        re.compile(pattern)
    except (re.error, OverflowError, RecursionError) as exc:  # a{99999999999}, 2000 nested groups
        raise InputError(f"invalid regex: {str(exc) or type(exc).__name__}", file=file, line=line, field=name) from None
