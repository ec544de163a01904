from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import socket_origins
from children import Children
from releasegate.cli import main
from releasegate.inputs.scaffold import scaffold

# llamacpp_server: a real llama.cpp server (tests/llamacpp.py); vllm_server: a real vLLM server (.venv-vllm)
pytest_plugins = ["llamacpp_fixtures", "vllm_fixtures"]
ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
# whatever the commands the tests run keep in the user's cache ($XDG_CACHE_HOME) goes to a folder of this test
# process, removed at its end: a test run leaves nothing in the user's ~/.cache
_CACHE = tempfile.mkdtemp(prefix="releasegate-test-cache-")
os.environ["XDG_CACHE_HOME"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
socket_origins.install()  # a socket left unclosed names the code that made it

GOOD = '{"intent": "billing", "priority": "high"}'
HANG_S = 600
"""How long a test waits for a subprocess or a file before it calls it hung: a bound on a hang, never a measure of
speed (a busy machine may take minutes where a quiet one takes a second)."""


@pytest.fixture(autouse=os.environ.get("RELEASEGATE_TEST_GC") == "1")
def collect_after() -> Iterator[None]:
    """RELEASEGATE_TEST_GC=1: collect garbage after each test, so an unclosed socket or file fails the test that
    leaked it (slow: for hunting a leak, not for every run)."""
    yield
    import gc

    gc.collect()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A scaffolded project switched to the replay backend, with one right and one wrong answer."""
    replay_scaffold(tmp_path, {"example-001": GOOD, "example-002": '{"intent": "shipping", "priority": "medium"}'})
    return tmp_path


def replay_scaffold(root: Path, outputs: dict[str, str] | None = None) -> Path:
    """The scaffolded project at `root` switched to the replay backend, answering from responses.jsonl (written
    from `outputs`, case id -> answer, when given); returns its config's path."""
    scaffold(root)
    config = root / "releasegate.yaml"
    text = config.read_text().replace("  backend: hf ", "  backend: replay\n  responses: responses.jsonl\n  #")
    config.write_text(text.replace("  base: your-org/your-base-model", ""))
    if outputs is not None:
        write_jsonl(root / "responses.jsonl", [{"id": cid, "output": out} for cid, out in outputs.items()])
    return config


def load_script(name: str):
    """scripts/NAME.py as a module (the scripts are no package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture
def cli(capsys):
    """Run the CLI in-process; returns (exit code, stdout, stderr)."""

    def run(*args: str):
        code = main([str(a) for a in args])
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def run_subprocess(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `releasegate` as a user would: a separate process, real exit code, real stderr."""
    return subprocess.run(
        [sys.executable, "-m", "releasegate", *map(str, args)],
        cwd=cwd or ROOT, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200", **(env or {})}, timeout=600,
    )


@pytest.fixture
def children() -> Iterator[Children]:
    """Starts the processes a test signals (`children.start(args, **popen)`): SIGINT at its default in each, also
    when the suite runs as a background job (SIGINT ignored); each one killed if still running, and reaped, when
    the test ends, passed or failed (tests/children.py)."""
    started = Children()
    yield started
    started.reap_all()


@pytest.fixture(autouse=True)
def _no_job_summary(monkeypatch):
    """Tests run inside CI must not append their runs to the real job summary."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def heavy_imports_after(commands: list[list[str]], modules: tuple[str, ...]) -> list[str]:
    """Run CLI commands in a fresh interpreter (each must exit 0); which of `modules` got imported."""
    calls = "".join(f"assert main({[str(a) for a in cmd]!r}) == 0\n" for cmd in commands)
    probe = (
        "import sys\nfrom releasegate.cli import main\n" + calls
        + f"print('HEAVY', sorted(m for m in {modules!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=HANG_S)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.split("HEAVY", 1)[1].strip().replace("'", '"'))


def as_killed(run_path: Path) -> None:
    """Give a finished run the seal a run killed while `check` wrote it has: its snapshots sealed when the run
    started, no journal sealed whole, run.json not complete (see `releasegate.record.seal.guard_seal`). Tests that
    cut a finished run short to play a kill call it, or the cut is an edit made outside releasegate."""
    manifest = json.loads((run_path / "manifest.json").read_text())
    files = manifest["sealed"]["files"]
    manifest["sealed"] = {**manifest["sealed"], "complete": False,
                          "files": {k: v for k, v in files.items() if k in ("config.yaml", "rubric.yaml")}}
    (run_path / "manifest.json").write_text(json.dumps(manifest))


def overall_verdict(results, *, review_pending: bool = False, allow_insufficient: bool = False,
                    incomplete: bool = False, target_failed: bool = False) -> str:
    """The overall verdict `decision.decide_gate` gives criteria results on an otherwise whole, healthy run."""
    from releasegate.decision.criterion import awaits_labels, relaxable
    from releasegate.decision.gate import decide_gate
    from releasegate.record.decision_evidence import (
        GateEvidence,
        Health,
        Obligations,
        Outcome,
        Population,
        Provenance,
        Requests,
    )

    outcomes = tuple(Outcome(r.criterion.name, r.criterion.origin, r.verdict, r.cause, relaxable(r), awaits_labels(r))
                     for r in results)
    evidence = GateEvidence(
        outcomes=outcomes, population=Population(10, 10, ()), requests=Requests(10, 0, 10, 0, 10),
        obligations=Obligations(review_pending, False, ()),
        health=Health(("incomplete",) if incomplete else (), "target failed" if target_failed else None, None),
        provenance=Provenance("rubric.yaml", (), ()), allow_insufficient=allow_insufficient, sample_only=())
    return decide_gate(evidence).verdict


def comparison_verdict(comparison: dict) -> str:
    """The verdict of a comparison's paired rows alone (`decision.comparison.pairs_verdict`)."""
    from releasegate.decision.comparison import pairs_verdict
    from releasegate.gate.paired_comparison import metric_verdicts

    return pairs_verdict(metric_verdicts(comparison), comparison["pairs_answered"], comparison["changed_cases"])


def gate_run(info, records, rubric, cost, load_records=None, *, labels=None, allow_pending=False, verdicts=None,
             edited=(), corpus_scores=None, scores=None, rubric_file="", inputs_changed=(), draws=None,
             drawn=()) -> dict:
    """The gate on records built in a test, in report.json's form (`pipeline.gate.judge_run` over `GateInputs`);
    `drawn`: the rows of its review sample (`record.review_cover.DrawnRow`)."""
    from releasegate.pipeline.gate import GateInputs, judge_run

    return judge_run(GateInputs(info, records, rubric, cost, load_records or [], list(labels or []), allow_pending,
                                verdicts, edited, corpus_scores, scores, rubric_file, inputs_changed,
                                draws or [], tuple(drawn))).as_json()
