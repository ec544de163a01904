"""`releasegate servers` recommends only a target whose run is still whole: a report.json that said PASS before
the run was resumed and cut short is not a pass."""

from __future__ import annotations

import json

from releasegate.record.records import RunDir
from test_compare_review import built
from test_false_pass import Run, _healthy


def test_a_run_cut_short_after_its_pass_is_not_recommended(tmp_path, cli):
    runs = [built(Run(_healthy(100)), tmp_path / name, name) for name in ("a", "b")]
    for path in runs:
        assert cli("gate", path)[0] == 0
    run = RunDir(runs[1])
    info = run.read_info()
    info.status = "interrupted"  # a resume killed after the report was written
    run.write_info(info)
    code, out, _ = cli("servers", *runs, "--json")
    result = json.loads(out)
    row = result["targets"][1]
    assert row["verdict"] == "INCONCLUSIVE" and "not complete" in row["verdict_reason"]
    assert code == 0 and result["recommended"] == result["targets"][0]["run_id"]
