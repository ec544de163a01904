"""The configuration reference pages, generated from the JSON Schemas so they cannot drift from what is validated.

Each schema in src/releasegate/schemas/ (config, rubric, case) becomes one Markdown page under docs/reference/: a
table with one row per key path (`suites[].source.format`), its type and bounds, default, allowed values and the
schema's own `description`. The descriptions are the one source of the text: edit them in the schema, then run

    python scripts/config_reference.py          # rewrite docs/reference/*.md
    python scripts/config_reference.py --check  # exit 1, naming the page, when one differs from a fresh generation

`make docs` runs the check before `mkdocs build --strict`, and tests/test_docs.py runs it too.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "src" / "releasegate" / "schemas"
OUT = ROOT / "docs" / "reference"

# schema file -> (page, title, what the page documents)
PAGES = {
    "config.schema.json": ("config.md", "Config keys (`releasegate.yaml`)",
                           "Every key of `releasegate.yaml`. Paths are relative to the config file; unknown keys "
                           "are errors (exit 2, with the closest known key)."),
    "rubric.schema.json": ("rubric.md", "Rubric keys",
                           "Every key of a rubric, the gate's policy (`rubric:` in the config)."),
    "case.schema.json": ("case.md", "Suite case keys",
                         "Every key of a suite case (one JSONL line, or one row of a tabular source), and the "
                         "answer and format specs a suite or a case gives."),
}

# "(default X)" in a description, or "; default X;" as a clause of it: the Default column shows X
_DEFAULT_PAREN = re.compile(r"\(default:? ([^()]+)\)")
_DEFAULT_CLAUSE = re.compile(r"(?:^|[;,] )default:? ([^;()]+?)(?=;|$)")


@dataclass
class Row:
    """One key of a schema as the page shows it."""

    path: str
    type: str
    default: str
    values: str
    description: str


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """A node with its local `$ref` followed (its own description kept first); a ref into another schema file is
    not followed, its file name is returned so the row links to that page."""
    ref = node.get("$ref")
    if ref is None:
        return node, None
    file, _, pointer = ref.partition("#")
    if file:
        return node, file
    target: Any = root
    for part in pointer.strip("/").split("/"):
        target = target[part]
    merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return _resolve(merged, root) if "$ref" in merged else (merged, None)


def _bounds(node: dict[str, Any]) -> str:
    lo = node.get("minimum", node.get("exclusiveMinimum"))
    hi = node.get("maximum", node.get("exclusiveMaximum"))
    if lo is None and hi is None:
        return ""
    left = "(" if "exclusiveMinimum" in node else "["
    right = ")" if "exclusiveMaximum" in node else "]"
    return f" {left}{'' if lo is None else lo}..{'' if hi is None else hi}{right}"


def _type(node: dict[str, Any], other_file: str | None) -> str:
    if other_file:
        page = PAGES[other_file][0]
        return f"[{node['$ref'].rsplit('/', 1)[-1]}]({page})"
    if "enum" in node:
        return "enum"
    if "const" in node:
        return "const"
    kind = node.get("type")
    if kind is None:
        alternatives = node.get("oneOf") or node.get("anyOf") or []
        kinds = [_type(*_alt(a)) for a in alternatives if isinstance(a, dict)]
        return " or ".join(k for k in kinds if k) or "any"
    text = " or ".join(kind) if isinstance(kind, list) else kind
    if text == "array" and isinstance(node.get("items"), dict) and node["items"].get("type") in ("string", "number",
                                                                                               "integer"):
        text = f"list of {node['items']['type']}s"
    return text + _bounds(node)


def _alt(node: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    ref = node.get("$ref", "")
    return node, (ref.partition("#")[0] or None) if ref else None


def _default(node: dict[str, Any]) -> str:
    if "default" in node:
        return f"`{json.dumps(node['default'])}`"
    description = node.get("description", "")
    found = _DEFAULT_PAREN.search(description) or _DEFAULT_CLAUSE.search(description)
    # the value alone: "(default 0: greedy)" shows 0, the rest stays in the description
    return _inline(re.split(r"[;:] ", found.group(1))[0]) if found else ""


def _values(node: dict[str, Any]) -> str:
    if "enum" in node:
        return ", ".join(f"`{json.dumps(v) if not isinstance(v, str) else v}`" for v in node["enum"])
    if "const" in node:
        return f"`{node['const']}`"
    if "pattern" in node:
        return f"pattern `{node['pattern']}`"
    return ""


def _inline(text: str) -> str:
    """Plain schema text made safe inside a Markdown table cell; `code` spans are kept as written."""
    parts = re.split(r"(`[^`]*`)", text)
    out = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(part.replace("|", "\\|"))
            continue
        part = part.replace("\\", "\\\\").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        for char in "*_[]|":
            part = part.replace(char, "\\" + char)
        out.append(part)
    return "".join(out)


def rows(schema: dict[str, Any]) -> list[Row]:
    """Every key path of a schema, parents before children, in the schema's own order."""
    found: list[Row] = []

    def walk(raw: dict[str, Any], path: str) -> None:
        node, other_file = _resolve(raw, schema)
        if path:
            found.append(Row(path, _type(node, other_file), _default(node), _values(node),
                             _inline(node.get("description", ""))))
        if other_file:
            return
        for key, child in node.get("properties", {}).items():
            walk(child, f"{path}.{key}" if path else key)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and (extra.get("properties") or extra.get("$ref") or extra.get("description")):
            walk(extra, f"{path}.NAME" if path else "NAME")
        items = node.get("items")
        if isinstance(items, dict) and (items.get("properties") or items.get("$ref")):
            walk(items, f"{path}[]")
        for alternative in node.get("oneOf", []) + node.get("anyOf", []):
            if isinstance(alternative, dict) and "$ref" in alternative and "#/$defs/" in alternative["$ref"]:
                target, _ = _resolve(alternative, schema)
                if target.get("properties") or isinstance(target.get("items"), dict):
                    walk(alternative, path + "[]" if target.get("type") == "array" else path)

    walk(schema, "")
    # a $defs entry reached from no property (e.g. the case schema's answer and format specs) gets its own rows
    reached = json.dumps(schema.get("properties", {}))
    for name, definition in schema.get("$defs", {}).items():
        if f"#/$defs/{name}" not in reached:
            if definition.get("properties") or isinstance(definition.get("items"), dict):
                walk(definition, f"<{name}>")
    return _dedupe(found)


def _dedupe(found: list[Row]) -> list[Row]:
    seen: set[str] = set()
    unique = []
    for row in found:
        if row.path not in seen:
            seen.add(row.path)
            unique.append(row)
    return unique


def render(schema_file: str) -> str:
    """One reference page, as Markdown."""
    page, title, intro = PAGES[schema_file]
    schema = json.loads((SCHEMAS / schema_file).read_text())
    lines = [
        f"# {title}",
        "",
        f"<!-- generated by scripts/config_reference.py from src/releasegate/schemas/{schema_file}: "
        "edit the schema's descriptions, not this page -->",
        "",
        intro + f" Generated from `src/releasegate/schemas/{schema_file}`, the schema `validate` checks against.",
        "`NAME` stands for a key of your choosing, `[]` for each item of a list, `<name>` for a shape defined once "
        "and used in several places.",
        "",
        "| key | type | default | values | description |",
        "|---|---|---|---|---|",
    ]
    for row in rows(schema):
        lines.append(f"| `{row.path}` | {row.type} | {row.default} | {row.values} | {row.description} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when a committed page differs")
    args = parser.parse_args(argv)
    stale = []
    for schema_file, (page, _, _) in PAGES.items():
        path = OUT / page
        fresh = render(schema_file)
        if args.check:
            if not path.is_file() or path.read_text() != fresh:
                stale.append(str(path.relative_to(ROOT)))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(fresh)
    if stale:
        print(f"stale: {', '.join(stale)} (run: python scripts/config_reference.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
