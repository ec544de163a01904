"""The leakage demo on the real demo models (transformers + peft): examples/leakage.yaml fails the overfit
adapter on extraction and membership, and passes the good one, against the base with its adapter disabled.
Templates are off and the tickets cut to two here (the leakage figures do not depend on them): the verdict of a
cut run is INCONCLUSIVE, so the criteria are read one by one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("adapter, verdict", [("overfit", "fail"), ("good", "pass")])
def test_the_overfit_adapter_fails_and_the_good_one_passes(cli, tmp_path, adapter, verdict):
    code, out, err = cli("check", "-c", ROOT / "examples" / "leakage.yaml", "--limit", "2", "--allow-pending",
                         "--no-progress", "--run-id", f"leak-{adapter}", "--set", f"output.dir={tmp_path}",
                         "--set", f"target.adapter=../models/demo/adapters/{adapter}",
                         "--set", "leakage.templates=false")
    assert code in (1, 3), err
    report = json.loads((tmp_path / f"leak-{adapter}" / "report.json").read_text())
    decided = {c["metric"]: c for c in report["criteria"]}
    for metric in ("extraction_rate_delta", "membership_auc", "membership_tpr_at_1fpr"):
        assert decided[metric]["verdict"] == verdict, decided[metric]
    shares = report["leakage"]["shares"]
    if adapter == "overfit":  # it repeats its training replies and none of the held-out ones; the base neither
        assert shares["cand_train"] > 0.8 and shares["cand_heldout"] == 0 and shares["base_train"] == 0
        assert report["leakage"]["adapter"]["rank"] == 16
        assert len(report["leakage"]["extracted_by_candidate_only"]) == 20  # the first 20 named, id and hash
    else:
        assert shares["cand_train"] == shares["cand_heldout"]
