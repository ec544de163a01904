"""examples/stop.yaml on the real demo model (transformers + peft): stopping when decided saves at least half the
cases and gives the verdict the full run gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from releasegate.record.records import RunDir

ROOT = Path(__file__).resolve().parents[1]


def _full_run_project(tmp: Path) -> Path:
    """examples/stop.yaml with its rubric's stop_when_decided off, every path made absolute."""
    rubric = (ROOT / "rubrics" / "stop.yaml").read_text().replace("stop_when_decided: true", "stop_when_decided: false")
    (tmp / "stop.yaml").write_text(rubric.replace("forbidden: forbidden.yaml",
                                                  f"forbidden: {ROOT / 'rubrics' / 'forbidden.yaml'}"))
    config = (ROOT / "examples" / "stop.yaml").read_text().replace("../rubrics/stop.yaml", str(tmp / "stop.yaml"))
    (tmp / "full.yaml").write_text(config.replace("../", f"{ROOT}/"))
    return tmp / "full.yaml"


@pytest.mark.slow
def test_the_stop_example_saves_half_the_cases_with_the_full_run_s_verdict(tmp_path, cli):
    code, out, err = cli("check", "-c", ROOT / "examples" / "stop.yaml", "--run-id", "stop", "--output-dir",
                         tmp_path, "--no-progress", "--allow-pending")
    stopped = RunDir(tmp_path / "stop")
    info = stopped.read_info()
    asked = len(stopped.read_records())
    assert info.stopping["stopped_at"] == asked <= info.cases / 2, out + err
    full_code, full_out, full_err = cli("check", "-c", _full_run_project(tmp_path), "--run-id", "full",
                                        "--output-dir", tmp_path, "--no-progress", "--allow-pending")
    assert len(RunDir(tmp_path / "full").read_records()) == info.cases
    verdicts = [json.loads((tmp_path / name / "report.json").read_text())["verdict"] for name in ("stop", "full")]
    assert verdicts[0] == verdicts[1] and code == full_code, out + full_out + full_err
