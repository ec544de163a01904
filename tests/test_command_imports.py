"""What each command imports: the commands that read saved runs, files and configs (`gate`, `report`,
`validate`, `history`, `bless`, `verify`, `attest`, `verify-attestation`) import no model library and no backend, so they start as fast as the
CLI itself. Each runs in a fresh interpreter as a user runs it; at its exit the interpreter lists which of the
denied modules it loaded (whatever the command's exit code: a refusal path must not import them either)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DENIED = ("torch", "transformers", "evaluate", "datasets", "peft", "openai", "httpx", "releasegate.backends")

PROBE = '''\
import atexit, json, sys
denied = json.loads(sys.argv[1])
def loaded():
    found = sorted({d for d in denied for m in list(sys.modules) if m == d or m.startswith(d + ".")})
    sys.stderr.write("\\nIMPORTED " + json.dumps(found) + "\\n")
atexit.register(loaded)
from releasegate.cli import main
sys.exit(main(sys.argv[2:]))
'''


def imported(args: list[str], cwd: Path) -> tuple[int, list[str]]:
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(DENIED), *args], cwd=cwd, capture_output=True,
                         text=True, timeout=300)
    line = [x for x in out.stderr.splitlines() if x.startswith("IMPORTED ")]
    assert line, out.stderr
    return out.returncode, json.loads(line[-1].removeprefix("IMPORTED "))


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> Path:
    """A scaffolded project checked through the replay backend (one right answer, one wrong): a sealed run
    with its reports."""
    from conftest import GOOD, write_jsonl
    from releasegate.inputs.scaffold import scaffold

    project = tmp_path_factory.mktemp("imports")
    scaffold(project)
    config = project / "releasegate.yaml"
    text = config.read_text().replace("  backend: hf ", "  backend: replay\n  responses: responses.jsonl\n  #")
    config.write_text(text.replace("  base: your-org/your-base-model", ""))
    write_jsonl(project / "responses.jsonl", [{"id": "example-001", "output": GOOD},
                                              {"id": "example-002", "output": GOOD}])
    code, _ = imported(["check", "-c", "releasegate.yaml", "--run-id", "r", "--no-progress", "--allow-pending"],
                       project)
    assert code in (0, 1, 3)
    assert imported(["attest", "--generate-key", "key.pem"], project)[0] == 0
    return project


@pytest.mark.parametrize("args", [
    ["gate", "reports/r", "--allow-pending"],
    ["gate", "reports/r", "--json"],
    ["report", "reports/r", "--format", "html"],
    ["report", "reports/r", "--format", "md"],
    ["report", "reports/r", "--format", "junit"],
    ["validate", "-c", "releasegate.yaml"],
    ["history", "--reports", "reports"],
    ["bless", "reports/r", "--name", "prod", "--reason", "import check"],
    ["verify", "reports/r"],
    ["attest", "reports/r", "--key", "key.pem"],  # refused (the replay run hashed no weights), as a user meets it
    ["verify-attestation", "missing.intoto.json", "--key", "key.pem.pub"],
], ids=lambda a: " ".join(a[:3]))
def test_a_command_on_saved_files_imports_no_model_library_or_backend(checked, args):
    code, found = imported(args, checked)
    assert code in (0, 1, 2, 3), code
    assert found == [], f"`releasegate {' '.join(args)}` imported {found}"
