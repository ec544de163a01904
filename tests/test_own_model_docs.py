"""docs/own-model.md run as a team would follow it: its files written as the page shows them (the demo model under
models/ standing in for the team's, six demo tickets as the suite), every `$ releasegate ...` line run in page
order, each exit code the page gives checked; where the page says a person acts (pasting alice's public key into
the rubric, filling the review CSV), the test does it. A command added to the page runs here, or fails here."""

from __future__ import annotations

import csv
import json
import os
import re
import shlex
import shutil
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow  # the real demo model (transformers + peft), twice

PAGE = ROOT / "docs" / "own-model.md"
DEMO = ROOT / "models" / "demo"
BLOCK = re.compile(r"```(yaml|console)\n(.*?)```", re.S)
COMMAND = re.compile(r"^\$ (?P<env>(?:[A-Z_]+=\S+ )*)releasegate (?P<args>.*?)\s+# exit (?P<code>\d+)")
KEY_TEXT = "(the text of ~/.releasegate/alice.key.pub)"


def steps() -> list[tuple[str, object]]:
    """The page in order: ('file', (path, text, append)) for each YAML block that names its file on its first line,
    ('run', (env, args, code)) for each command line."""
    out: list[tuple[str, object]] = []
    for kind, body in BLOCK.findall(PAGE.read_text(encoding="utf-8")):
        if kind == "yaml":
            first, _, rest = body.partition("\n")
            name = first.lstrip("# ").split(":")[0]
            out.append(("file", (name, rest, first.rstrip().endswith(": added"))))
            continue
        for line in body.splitlines():
            found = COMMAND.match(line)
            assert found or not line.startswith("$"), f"a command with no '# exit N': {line}"
            if found:
                env = dict(pair.split("=", 1) for pair in found["env"].split())
                out.append(("run", (env, found["args"], int(found["code"]))))
    return out


def _pasted_key(text: str, home: Path) -> str:
    """The rubric with alice's public key where the page says to paste it."""
    indent = re.search(rf"^( *){re.escape(KEY_TEXT)}", text, re.M)
    assert indent, "the rubric shows no place for alice's key"
    pub = (home / ".releasegate" / "alice.key.pub").read_text().strip().splitlines()
    body = "\n".join(indent[1] + line for line in pub if "-----" not in line)
    return text.replace(indent[0], body)


def _label(project: Path, args: list[str]) -> None:
    """Before `review sign reviews/RUN.csv`: alice fills the export, every row approved under her name."""
    labels = project / args[2]
    queue = project / "reports" / labels.stem / "review_queue.csv"
    with queue.open(encoding="utf-8-sig", newline="") as fh:
        rows = [{**r, "label": "approve", "reviewer": "alice"} for r in csv.DictReader(fh)]
    assert rows
    labels.parent.mkdir(exist_ok=True)
    with labels.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_the_pages_commands_run_in_order_with_the_exit_codes_it_gives(tmp_path, cli, monkeypatch):
    if not (DEMO / "base" / "config.json").is_file():
        pytest.skip(f"demo model not built: {DEMO}")
    project, home = tmp_path / "team", tmp_path / "home"
    (home / ".releasegate").mkdir(parents=True)
    shutil.copytree(DEMO / "base", project / "models" / "base")
    shutil.copytree(DEMO / "adapters" / "good", project / "models" / "adapter")
    lines = (ROOT / "suites" / "demo" / "tickets.jsonl").read_text(encoding="utf-8").splitlines()[:6]
    (project / "suites").mkdir()
    (project / "suites" / "support.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.chdir(project)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("RELEASEGATE_CHANGE_AUTHOR", raising=False)
    ran = []
    for kind, step in steps():
        if kind == "file":
            name, text, append = step
            path = project / name
            path.parent.mkdir(parents=True, exist_ok=True)
            text = _pasted_key(text, home) if KEY_TEXT in text else text
            path.write_text((path.read_text() if append else "") + text)
            continue
        env, args, code = step
        argv = [os.path.expanduser(a) for a in shlex.split(args)]
        if argv[:2] == ["review", "sign"]:
            _label(project, argv)
        with monkeypatch.context() as scoped:
            for name, value in env.items():
                scoped.setenv(name, value)
            got, out, err = cli(*argv)
        assert got == code, (args, out[-1500:], err[-1500:])
        ran.append(argv[0])
    assert ran.count("check") == 2 and "verify-attestation" in ran and "bless" in ran  # the page's whole path
    second = json.loads((project / "reports" / "second" / "report.json").read_text())
    blessing = second["comparison"]["baseline_blessing"]
    assert (blessing["name"], blessing["run"], blessing["by"]) == ("production", "first", "alice")
    assert "accuracy vs baseline" in {c["name"] for c in second["criteria"]}
