"""The README and the documentation site say what the code does: the generated key references match the JSON
Schemas, every command, metric and config key is documented, the README stays a short entry with no figure that
goes stale, and the site builds with --strict (broken links and pages left out of the nav fail)."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from conftest import load_script
from releasegate.cli.app import app
from releasegate.record.metrics import KNOWN_METRICS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _config_reference():
    return load_script("config_reference")


def test_reference_pages_match_a_fresh_generation():
    reference = _config_reference()
    for schema_file, (page, _, _) in reference.PAGES.items():
        committed = (DOCS / "reference" / page).read_text()
        assert committed == reference.render(schema_file), f"run: python scripts/config_reference.py ({page})"


def test_check_mode_fails_on_a_stale_page(tmp_path, monkeypatch):
    reference = _config_reference()
    monkeypatch.setattr(reference, "OUT", tmp_path)
    monkeypatch.setattr(reference, "ROOT", tmp_path.parent)
    assert reference.main([]) == 0 and reference.main(["--check"]) == 0
    (tmp_path / "config.md").write_text("edited by hand\n")
    assert reference.main(["--check"]) == 1


def test_every_config_key_has_a_description():
    reference = _config_reference()
    import json
    schema = json.loads((reference.SCHEMAS / "config.schema.json").read_text())
    undocumented = [row.path for row in reference.rows(schema) if not row.description]
    assert undocumented == []


def test_a_reference_row_shows_type_default_and_values():
    page = (DOCS / "reference" / "config.md").read_text()
    row = next(line for line in page.splitlines() if line.startswith("| `target.mode` |"))
    assert "| enum | chat |" in row and "`chat`, `completion`" in row
    assert any(line.startswith("| `suites[].source.format` |") for line in page.splitlines())
    assert any(line.startswith("| `judge.criteria.NAME.pass_mark` |") for line in page.splitlines())


def test_every_command_is_documented():
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    page = (DOCS / "commands.md").read_text()
    for name, command in commands.items():
        assert f"`releasegate {name}" in page, name
        for sub in getattr(command, "commands", {}):
            assert f"`releasegate {name} {sub}" in page, f"{name} {sub}"


def test_every_metric_is_defined():
    text = (DOCS / "metrics.md").read_text() + (DOCS / "guarantees.md").read_text()
    # a percentile family is defined once as `name_p50/p95/p99`
    missing = [m for m in KNOWN_METRICS if m not in text and re.sub(r"_p\d+$", "", m) not in text]
    assert missing == []


def test_readme_is_a_short_entry_with_no_stale_count():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    assert not re.search(r"\b\d[\d,]* tests\b", readme), "a test count goes stale"
    first_screen = "\n".join(readme.splitlines()[:40])
    for must in ("pip install -e", "make demo", "make test"):
        assert must in first_screen
    for target in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / target).is_file(), target


def test_readme_make_targets_exist():
    makefile = (ROOT / "Makefile").read_text()
    readme = (ROOT / "README.md").read_text()
    for target in set(re.findall(r"`make ([a-z-]+)`", readme)):
        assert re.search(rf"^{re.escape(target)}:", makefile, re.M), target


@pytest.mark.skipif(shutil.which("mkdocs", path=str(Path(sys.executable).parent)) is None,
                    reason="mkdocs is not installed (pip install -e '.[dev]')")
def test_site_builds_strict(tmp_path):
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    done = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                          capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1"},
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "config" / "index.html").is_file()
