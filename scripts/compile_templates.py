"""report.html's template written as Python ahead of time.

`releasegate gate` and `report` render report.html from src/releasegate/report/templates/report.html.j2. Loading
jinja2 and its compiled template costs a fifth of a `gate` on the demo run, so the template is translated once,
here, into src/releasegate/report/report_page.py (`report.page_codegen`), which each command loads as it loads any
module; the page is byte for byte what jinja2 renders. Edit the template, then

    python scripts/compile_templates.py          # rewrite src/releasegate/report/report_page.py
    python scripts/compile_templates.py --check  # exit 1 when the module differs from a fresh translation

`make docs` runs the check, and tests/test_report_page.py does too.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generated_file import write_or_check  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "src" / "releasegate" / "report" / "report_page.py"
HEADER = ('"""report.html, rendered as jinja2 renders templates/report.html.j2 (see report.page_codegen).\n'
          "Written by scripts/compile_templates.py from the template: do not edit; run the script.\"\"\"")


def render() -> str:
    sys.path.insert(0, str(ROOT / "src"))
    from releasegate.report.page_codegen import module_source

    return module_source(HEADER)


def main() -> int:
    return write_or_check(OUT, render, sources="template", script="compile_templates.py", description=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    sys.exit(main())
