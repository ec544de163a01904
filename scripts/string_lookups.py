"""Count string-key lookups in src/releasegate: a subscript by a string constant (`d["x"]`, read or written) or a
call `.get("literal")`, per package and per 1,000 lines.

A JSON document read into a typed model once is used by attribute; a lookup by a literal key is a place where a
misspelt key, a missing field or a wrong type only shows at run time. `python scripts/string_lookups.py` prints
the totals, the packages and the worst files; tests/test_string_lookups.py holds each package to a ceiling.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "releasegate"


def is_string_lookup(node: ast.AST) -> bool:
    """A subscript by a string constant, or `.get(...)` whose first argument is a string constant."""
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            and bool(node.args) and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str))


def _annotations(tree: ast.AST) -> set[int]:
    """The ids of the nodes inside type annotations: `list["Row"]` names a type, it looks nothing up."""
    roots: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            roots.append(node.returns)
        elif isinstance(node, ast.arg) and node.annotation is not None:
            roots.append(node.annotation)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
    return {id(inner) for root in roots for inner in ast.walk(root)}


def file_lookups(path: Path) -> int:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typed = _annotations(tree)
    return sum(is_string_lookup(node) and id(node) not in typed for node in ast.walk(tree))


def package_of(path: Path, root: Path = PACKAGE) -> str:
    parts = path.relative_to(root).parts
    return parts[0] if len(parts) > 1 else "(top)"


def count(root: Path = PACKAGE) -> tuple[Counter[str], Counter[str], Counter[str]]:
    """(lookups per package, lines per package, lookups per file)."""
    lookups: Counter[str] = Counter()
    lines: Counter[str] = Counter()
    files: Counter[str] = Counter()
    for path in sorted(root.rglob("*.py")):
        n = file_lookups(path)
        lookups[package_of(path, root)] += n
        lines[package_of(path, root)] += path.read_text(encoding="utf-8").count("\n") + 1
        files[str(path.relative_to(root))] = n
    return lookups, lines, files


def main() -> int:
    lookups, lines, files = count()
    total, total_lines = sum(lookups.values()), sum(lines.values())
    print(f"{total} string-key lookups in {total_lines} lines: {1000 * total / total_lines:.1f} per 1k lines")
    for package, n in lookups.most_common():
        print(f"  {package:12} {n:5} in {lines[package]:6} lines  {1000 * n / lines[package]:6.1f} per 1k")
    print("worst files:")
    for name, n in files.most_common(int(sys.argv[1]) if len(sys.argv) > 1 else 15):
        print(f"  {n:4}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
