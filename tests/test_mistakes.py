"""The mistake table: `validate` on typical mistakes (tests/mistakes/), each one line naming the file, line and
key to fix, exit 2, no traceback; and docs/configuration.md shows exactly these lines."""

from pathlib import Path

import pytest

from conftest import load_script

ROOT = Path(__file__).resolve().parent.parent


def _table():
    return load_script("mistake_table")


TABLE = _table()
CASES = TABLE.cases()


def test_the_corpus_holds_twenty_mistakes_and_its_base_validates(tmp_path):
    assert len(CASES) >= 20
    code, out, err = TABLE.run_case(tmp_path)  # no file changed: the base project as it is
    assert code == 0 and err == "" and "valid" in out, err


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_validate_says_one_line_naming_where_to_fix(case):
    code, out, err = TABLE.run_case(case)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (out, err)
    assert "Traceback" not in out + err and out == ""
    assert lines == [TABLE.says(case)], f"{case.name}: run python scripts/mistake_table.py --record if this is better"


def test_the_docs_table_is_the_corpus():
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert TABLE.docs_table(text) == TABLE.render(), "run: python scripts/mistake_table.py"
    assert "## Mistakes and what validate says" in text
