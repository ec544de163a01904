"""What each command imports: the commands that read saved runs, files and configs (`gate`, `report`,
`validate`, `history`, `bless`, `verify`, `attest`, `verify-attestation`) import no model library and no backend, so they start as fast as the
CLI itself; only `gate`, which re-computes the run's bounds, loads numpy. A `check` on answers that need no model in
process (replayed, or from an endpoint through the default lean client) loads no model library, no HTTP library
and no `evaluate` (that loads only for a metric that is an `evaluate` module). Each runs in a fresh interpreter as a
user runs it; at its exit the interpreter lists which of the denied modules it loaded (whatever the command's exit
code: a refusal path must not import them either)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

MODEL_LIBRARIES = ("torch", "transformers", "evaluate", "datasets", "peft", "tokenizers", "huggingface_hub",
                   "safetensors", "accelerate", "scipy", "sympy")
HTTP_LIBRARIES = ("openai", "httpx", "httpx2")  # httpx is published as httpx2 in newer releases
DENIED = (*MODEL_LIBRARIES, *HTTP_LIBRARIES, "releasegate.backends")
ONLY_GATE = ("numpy",)
"""Loaded by `gate` alone (its latency bounds are re-computed by bootstrap), by no other command on saved files."""
NOT_REPORTS = ("jinja2",)
"""Loaded by neither `gate` nor `report`: report.html's template is rendered from its Python translation
(report/report_page.py)."""

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


def imported(args: list[str], cwd: Path, denied: tuple[str, ...] = DENIED) -> tuple[int, list[str]]:
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(denied), *args], cwd=cwd, capture_output=True,
                         text=True, timeout=300)
    line = [x for x in out.stderr.splitlines() if x.startswith("IMPORTED ")]
    assert line, out.stderr
    return out.returncode, json.loads(line[-1].removeprefix("IMPORTED "))


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> Path:
    """A scaffolded project checked through the replay backend (one right answer, one wrong): a sealed run
    with its reports."""
    from conftest import GOOD, replay_scaffold

    project = tmp_path_factory.mktemp("imports")
    replay_scaffold(project, {"example-001": GOOD, "example-002": GOOD})
    code, found = imported(["check", "-c", "releasegate.yaml", "--run-id", "r", "--no-progress", "--allow-pending"],
                           project, (*MODEL_LIBRARIES, *HTTP_LIBRARIES))
    assert code in (0, 1, 3)
    assert found == [], f"a check on replayed answers imported {found}"
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
    denied = DENIED + (ONLY_GATE if args[0] != "gate" else ()) + (NOT_REPORTS if args[0] in ("gate", "report") else ())
    code, found = imported(args, checked, denied)
    assert code in (0, 1, 2, 3), code
    assert found == [], f"`releasegate {' '.join(args)}` imported {found}"


def test_an_endpoint_check_imports_no_model_library_no_http_library_and_no_evaluate(tmp_path):
    """The demo's 100 ticket cases answered by an OpenAI-compatible server (the stub), through the default lean
    client."""
    from conftest import ROOT
    from releasegate.testing.stub_server import StubBehaviour, StubServer

    suites = "".join(f"  - {{path: {ROOT / 'suites/demo' / name}, answer: {{type: json_fields, fields: [intent]}}}}\n"
                     for name in ("tickets.jsonl", "tickets_shifted.jsonl"))
    (tmp_path / "releasegate.yaml").write_text(
        "target: {backend: openai, base_url: BASE, model: demo, mode: chat, concurrency: 8}\n"
        f"generation: {{max_new_tokens: 8}}\nsuites:\n{suites}rubric: {ROOT / 'rubrics' / 'demo.yaml'}\n")
    with StubServer(StubBehaviour(ttft_ms=1, itl_ms=0.2, tokens=8)) as stub:
        config = tmp_path / "releasegate.yaml"
        config.write_text(config.read_text().replace("BASE", stub.base_url))
        code, found = imported(["check", "-c", "releasegate.yaml", "--run-id", "e", "--no-progress", "--allow-pending"],
                               tmp_path, (*MODEL_LIBRARIES, *HTTP_LIBRARIES))
    assert (tmp_path / "reports" / "e" / "run.json").exists(), code
    assert found == [], f"an endpoint check imported {found}"
