"""Hostile inputs to the readers of another run's files (a baseline's journals) and of a saved report's seal."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from releasegate.cli import main

_READ_UNDER_CAP = textwrap.dedent("""
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (1200 << 20, 1200 << 20))
    from releasegate.errors import InputError
    from releasegate.record.records import RunDir
    try:
        RunDir(sys.argv[1]).read_records(sys.argv[2], required=False)
    except InputError as exc:
        print("refused:", exc)
        sys.exit(2)
    except MemoryError:
        print("MemoryError")
        sys.exit(70)
""")


@pytest.mark.parametrize("name", ["draws.jsonl", "records.jsonl"])
def test_a_baseline_journal_with_one_huge_line_is_refused_in_bounded_memory(tmp_path, name):
    (tmp_path / "run.json").write_text("{}")
    with (tmp_path / name).open("wb") as fh:
        fh.truncate(1500 << 20)  # sparse: no disk used, no newline anywhere
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.run([sys.executable, "-c", _READ_UNDER_CAP, str(tmp_path), name], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 2 and name in proc.stdout, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def sealed_run_dir(tmp_path_factory) -> Path:
    """A real run, checked against the stub server, with its report.json and its seal."""
    from releasegate.testing import StubBehaviour, StubServer
    from test_feature_pairs import model_or_guard, project

    root = tmp_path_factory.mktemp("sealed")
    with StubServer(StubBehaviour(ttft_ms=1, itl_ms=0, tokens=2, reply=model_or_guard(lambda i, s: False))) as stub:
        config = project(root, stub.base_url, cases=4, repeats=1,
                         criteria='  - {metric: forbidden_rate, op: "<=", threshold: 0.5}\n')
        main(["check", "-c", str(config), "--run-id", "r", "--no-progress", "--json"])
    return root / "reports" / "r"


@pytest.mark.parametrize("sealed", ["x", [1], 5])
def test_report_names_the_manifest_when_its_seal_has_another_shape(sealed_run_dir, tmp_path, capsys, sealed):
    run = tmp_path / "r"
    shutil.copytree(sealed_run_dir, run)
    capsys.readouterr()
    assert main(["report", str(run)]) == 0, capsys.readouterr().err  # as the gate wrote it: read
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["sealed"] = sealed
    (run / "manifest.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    code = main(["report", str(run)])
    err = capsys.readouterr().err
    assert code == 2 and "manifest.json" in err, err
