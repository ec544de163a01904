"""False PASSes and silent overspends of the newer features that need a live run (the stub server
`releasegate.testing`): each test once failed."""

from __future__ import annotations

import json

from releasegate.testing import StubBehaviour, StubServer
from test_budget import PRICES, WORST, _project, _run, _yes


def test_a_budget_cut_sends_no_draw_of_a_case_it_never_asked(tmp_path, cli):
    """Three draws a case and a cap that pays for two cases: the cut cases' repeated draws are never sent, and
    what was sent stays under the cap."""
    with StubServer(StubBehaviour(tokens=3, reply=_yes)) as stub:
        config = _project(tmp_path, stub.base_url, extra=PRICES + "budget: {usd: 1.0}\n")
        config.write_text(config.read_text().replace("generation: {max_new_tokens: 10}",
                                                     "generation: {max_new_tokens: 10, repeats: 3}"))
        code, report, said = _run(cli, config)
        sent = stub.requests
    assert code == 3 and report["budget_exhausted"] is True, said
    info = json.loads((tmp_path / "reports" / "r" / "run.json").read_text())
    asked = info["budget"]["asked"]
    assert 0 < asked < 40
    assert sent == 3 * asked, said  # draw 0 and draws 1..2 of the cases asked, nothing of the others
    assert sent * WORST <= 1.0 and report["budget"]["spent_usd"]["total"] <= 1.0
    draws = (tmp_path / "reports" / "r" / "draws.jsonl").read_text().splitlines()
    asked_ids = {json.loads(line)["case_id"] for line in
                 (tmp_path / "reports" / "r" / "records.jsonl").read_text().splitlines()}
    assert {json.loads(line)["case_id"] for line in draws} <= asked_ids
