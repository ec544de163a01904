"""The shipped schemas' validity tests, written as Python ahead of time.

`releasegate` validates every config, rubric and suite case against the JSON Schemas in src/releasegate/schemas/.
Each test is Python source made from its schema (`inputs.schema_compiler`); compiling that source costs about as
much as a bare start of the command, so the shipped schemas' tests are written once, here, into
src/releasegate/inputs/shipped_checks.py, and each command loads them as it loads any module. Edit a schema, then

    python scripts/compile_schemas.py          # rewrite src/releasegate/inputs/shipped_checks.py
    python scripts/compile_schemas.py --check  # exit 1 when the module differs from a fresh generation

`make docs` runs the check, and tests/test_schema_compiler.py does too.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generated_file import write_or_check  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "src" / "releasegate" / "inputs" / "shipped_checks.py"
HEADER = ('"""The shipped schemas\' validity tests (config, case, rubric, a forbidden-rules file), each answering as '
          "jsonschema's\n`is_valid`. Written by scripts/compile_schemas.py from src/releasegate/schemas/: do not edit; "
          'run the script."""')


def render() -> str:
    sys.path.insert(0, str(ROOT / "src"))
    from releasegate.inputs.schema_check import schema
    from releasegate.inputs.schema_codegen import module_source

    roots = {name: schema(name) for name in ("config", "case", "rubric")}
    roots["forbidden"] = {"$ref": schema("rubric")["$id"] + "#/$defs/rules_file"}
    return module_source(roots, schema, HEADER)


def main() -> int:
    return write_or_check(OUT, render, sources="schemas", script="compile_schemas.py", description=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    sys.exit(main())
