"""Write the parts of the shipped schemas that mirror a registry in code, so they cannot drift from it.

    python scripts/build_schemas.py           rewrite src/releasegate/schemas/ where it differs
    python scripts/build_schemas.py --check   exit 1, naming the files, when a rewrite is due

From the backend registry: the `target.backend` enum and its description, the fields each backend requires, and
`backends.json` (what the config layer reads, as it cannot import the backends). From the scorer registry: the
answer and format types of a case. `releasegate validate` then reads plain files: no backend or scorer is imported.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SCHEMAS = Path(__file__).resolve().parents[1] / "src" / "releasegate" / "schemas"


def _enum(current: list, wanted) -> list:
    """`wanted` in the order the file already has, new names after (an error lists them in the file's order)."""
    wanted = list(wanted)
    return [v for v in current if v in wanted] + [v for v in wanted if v not in current]


def _config(schema: dict, specs) -> dict:
    target = schema["properties"]["target"]
    backend = target["properties"]["backend"]
    backend["enum"] = _enum(backend["enum"], [s.name for s in specs])
    backend["description"] = "; ".join(f"{s.name}: {s.summary}" for s in specs)
    target["allOf"] = [{"if": {"properties": {"backend": {"const": s.name}}}, "then": {"required": list(s.required)}}
                       for s in specs if s.required]
    return schema


def _case(schema: dict, scorers) -> dict:
    for family in ("answer", "format"):
        prop = schema["$defs"][family]["properties"]["type"]
        prop["enum"] = _enum(prop["enum"], [t for f, t in scorers if f == family])
    return schema


def expected() -> dict[str, str]:
    """File name -> the text it should have."""
    from releasegate.backends import BACKENDS
    from releasegate.inputs.backend_facts import specs_json
    from releasegate.scorers import SCORERS

    specs = sorted((e.spec for e in BACKENDS.values()), key=lambda s: s.name)
    out = {"backends.json": specs_json(specs)}
    for name, build, registry in (("config", _config, specs), ("case", _case, list(SCORERS))):
        text = (SCHEMAS / f"{name}.schema.json").read_text("utf-8")
        built = build(json.loads(text), registry)
        out[f"{name}.schema.json"] = text if built == json.loads(text) else json.dumps(built, indent=2) + "\n"
    return out


def stale() -> list[str]:
    """The shipped files that differ from what the registries say."""
    files = expected()
    return [n for n, text in files.items() if not (SCHEMAS / n).is_file() or (SCHEMAS / n).read_text("utf-8") != text]


def main(argv: list[str]) -> int:
    names = stale()
    if "--check" in argv:
        if names:
            print("stale: " + ", ".join(names) + " (run python scripts/build_schemas.py)")
        return 1 if names else 0
    for name, text in expected().items():
        if name in names:
            (SCHEMAS / name).write_text(text, encoding="utf-8")
            print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
