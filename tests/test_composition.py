"""Every pair of registered gate features, on fixtures with a known truth (`releasegate.testing.composition`): all
good the pair passes, with one part set to fail it fails, or `releasegate validate` refuses the pair in one line
naming both keys. The pairs come from the registry, so a new feature joins the matrix, and fails it until it has a
fixture part."""

from __future__ import annotations

import json
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from conftest import load_script
from releasegate.gate.feature import GateFeature, register, registered, unregister
from releasegate.pipeline import features as _built_in  # noqa: F401  # registers the built-in features
from releasegate.record.records import RunDir
from releasegate.testing import StubBehaviour, StubServer
from releasegate.testing import composition as mx
from releasegate.testing.composition_labels import label_rows, read_csv, write_csv

ROOT = Path(__file__).resolve().parent.parent
NAMES = [f.name for f in registered()]


def _params():
    out = []
    for a, b in mx.pairs(NAMES):
        key = frozenset({a, b})
        modes = ["refused"] if key in mx.REFUSED else ["good", "bad"]
        for mode in modes:
            marks = []
            wrong = mx.WRONG.get((key, mode))
            if wrong is not None:
                marks.append(pytest.mark.xfail(strict=True, reason=f"gives {wrong[0]}: {wrong[1]}"))
            out.append(pytest.param(a, b, mode, marks=marks, id=f"{a}-{b}-{mode}"))
    return out


@pytest.fixture(scope="module")
def stub():
    """The shared stub (target, guard and judge) and the mode every stub answers by; `stub[2](fields)`: the stub
    with those StubBehaviour fields changed, one per behaviour, started when first asked for."""
    yield from composition_stubs()


def composition_stubs():
    """`stub`'s servers, for a fixture of another module."""
    mode = mx.Mode()
    with ExitStack() as stack:
        servers: dict[tuple, StubServer] = {}

        def server(fields: tuple = ()) -> StubServer:
            if fields not in servers:
                behaviour = StubBehaviour(ttft_ms=mx.TTFT_MS, itl_ms=0, tokens=4, reply=mx.reply_for(mode))
                servers[fields] = stack.enter_context(StubServer(replace(behaviour, **dict(fields))))
            return servers[fields]

        yield server(), mode, server


def _check(cli, config: Path, run_id: str) -> tuple[int, dict, RunDir]:
    code, out, err = cli("check", "-c", config, "--run-id", run_id, "--no-progress", "--json")
    assert "Traceback" not in err and out.strip(), err
    return code, json.loads(out), RunDir(config.parent / "reports" / run_id)


def _label(cli, run: RunDir, review_bad: bool) -> None:
    """Export the review sample and import every copy labelled by what each reply says (two reviewers when the
    rubric asks two labels a case)."""
    code, _, err = cli("review", "export", run.path)
    assert code == 0, err
    copies = sorted(run.path.glob("review_queue*.csv"))
    assert copies, list(run.path.iterdir())
    outputs = {r.case_id: r.output or "" for r in run.read_records()}
    for k, path in enumerate(copies):
        rows = label_rows(read_csv(path), outputs, review_bad, ("ana", "bo")[k])
        filled = path.with_name(f"labelled-{k}.csv")
        write_csv(filled, rows)
        code, _, err = cli("review", "import", run.path, filled)
        assert code == 0, err


def _prepare(cli, root: Path, features: tuple[str, ...]) -> None:
    """The commands the parts run before a check (the leakage suite, built by the command a user runs)."""
    for command in mx.commands(features):
        code, _, err = cli(*[str(root / word) if (root / word).suffix in (".jsonl", ".json") else word
                             for word in command])
        assert code == 0, err


def decide(root: Path, cli, stub, a: str, b: str, bad: str | None) -> tuple[str, str, dict]:
    """The pair's verdict: ('REFUSED', validate's message, {}) or (verdict, verdict_reason, report)."""
    return decide_features(root, cli, stub, (a, b), bad)


def decide_features(root: Path, cli, stub, features: tuple[str, ...], bad: str | None,
                    adjust=None, wrong_every: int = 4) -> tuple[str, str, dict]:
    """The verdict of the parts `features` met in one project (`bad` set to fail); with served variants, every
    variant's (`releasegate matrix`): one verdict when they agree. `adjust(rubric, baseline_run)`: changes the
    rubric (a meeting's) after it is built."""
    server, mode, stub_with = stub
    mode.wrong_every = wrong_every
    for name in features:
        assert name in mx.PARTS, (f"the gate feature {name!r} has no fixture part: a new feature needs one in "
                                  "releasegate.testing.composition.PARTS to join the composition matrix")
    labels = mx.needs_labels(features)
    target = stub_with(mx.target_stub(features, bad)).base_url
    if any(mx.PARTS[f].baseline for f in features):
        mode.bad, mode.baseline_run = bad, True
        base_config = mx.build(root, server.base_url, features, bad, baseline_run=True, target_url=target)
        _adjusted(root, adjust, True)
        _prepare(cli, root, features)
        code, report, base = _check(cli, base_config, "base")
        if labels:
            _label(cli, base, review_bad=False)
    mode.bad, mode.baseline_run = bad, False
    config = mx.build(root, server.base_url, features, bad, target_url=target)
    _adjusted(root, adjust, False)
    _prepare(cli, root, features)
    code, out, err = cli("validate", "-c", config)
    if code == 2:
        return "REFUSED", err.strip(), {}
    assert code == 0, err
    if mx.SERVED in features:
        return _matrix(cli, config)
    code, report, run = _check(cli, config, "r")
    if labels:
        _label(cli, run, review_bad=bad == "review")
        code, out, err = cli("gate", run.path, "--json")
        assert out.strip(), err
        report = json.loads(out)
    return report["verdict"], report["verdict_reason"], report


def _adjusted(root: Path, adjust, baseline_run: bool) -> None:
    if adjust is not None:
        rubric = yaml.safe_load((root / "rubric.yaml").read_text())
        adjust(rubric, baseline_run)
        (root / "rubric.yaml").write_text(yaml.safe_dump(rubric, sort_keys=False))


def _matrix(cli, config: Path) -> tuple[str, str, dict]:
    code, out, err = cli("matrix", "-c", config, "--no-progress", "--json")
    assert "Traceback" not in err and out.strip(), err
    result = json.loads(out)
    rows = {v.get("variant") or v.get("name"): v.get("verdict") for v in result["variants"]}
    verdicts = set(rows.values())
    return (verdicts.pop() if len(verdicts) == 1 else f"MIXED {rows}"), str(result.get("reason")), result


LOAD_CAUSES = {"client", "capacity"}
"""The undecided causes a busy machine can give a run: its client saturated (the product's own measure of its
event loop's lateness), or a capacity sweep the loaded stub broke at its lowest rate."""


def load_bound(report: dict) -> bool:
    """Whether the run is INCONCLUSIVE only because this machine was too busy to measure it, as the report itself
    says: every undecided criterion is undecided for the client or the capacity, and the client's lateness was
    measured. Such a verdict is the product telling the truth about the machine, never the opposite of the truth;
    a test of latency on a shared machine accepts it in place of the known verdict."""
    undecided = [c for c in report.get("criteria", []) if c.get("verdict") == "insufficient"]
    return (report.get("verdict") == "INCONCLUSIVE" and bool(undecided)
            and all(c.get("undecided_cause") in LOAD_CAUSES for c in undecided)
            and bool(report.get("client_saturated") or report.get("client_lateness_ms")))


def as_known(verdict: str, report: dict, truth: str) -> bool:
    """`verdict` is the truth, or (the truth a decided one) the machine was too busy to tell (`load_bound`); with
    served variants, each variant's run so judged."""
    if verdict == truth:
        return True
    if truth == "INCONCLUSIVE":
        return False
    if "variants" in report:  # a matrix: every variant the truth or load-bound
        runs = [json.loads((Path(v["run_dir"]) / "report.json").read_text()) for v in report["variants"]]
        return all(r["verdict"] == truth or load_bound(r) for r in runs) and any(r["verdict"] == truth for r in runs)
    return load_bound(report)


def test_every_registered_feature_has_a_fixture_part():
    missing = [n for n in NAMES if n not in mx.PARTS]
    assert not missing, (f"gate feature(s) {missing} have no fixture part: a new feature needs one in "
                         "releasegate.testing.composition.PARTS to join the composition matrix")


MUST_DECIDE = [("stability", "guard"), ("stability", "forbidden"), ("guard", "baseline"), ("guard", "review"),
               ("capacity", "latency")]
"""Repeats with a guard and with probes, a guard with a baseline and with double-labelled review, a load sweep with
a latency criterion: pairs the gate decides, never refused."""


def test_the_pairs_that_must_be_decided_are_in_the_matrix_and_not_refused():
    for a, b in MUST_DECIDE:
        assert (a, b) in mx.pairs(NAMES) or (b, a) in mx.pairs(NAMES)
        assert frozenset({a, b}) not in mx.REFUSED
    assert mx.PARTS["review"].rubric(False)["review"]["labels_per_case"] == 2


def test_a_newly_registered_feature_joins_the_matrix_and_fails_it_without_a_part(tmp_path):
    register(GateFeature("toy"))
    try:
        names = [f.name for f in registered()]
        assert ("guard", "toy") in mx.pairs(names)
        with pytest.raises(AssertionError, match="'toy' has no fixture part: a new feature needs one"):
            decide(tmp_path, None, (None, mx.Mode(), None), "guard", "toy", None)
        assert "| toy | **no fixture part** |" in _table().render()
    finally:
        unregister("toy")


@pytest.mark.slow  # about 90 runs of check against the stub: minutes on a small machine
@pytest.mark.parametrize(("a", "b", "mode"), _params())
def test_pair(a, b, mode, stub, cli, tmp_path):
    if mode == "refused":
        keys, why = mx.REFUSED[frozenset({a, b})]
        verdict, message, _ = decide(tmp_path, cli, stub, a, b, None)
        assert verdict == "REFUSED", f"validate accepted {a} x {b}; expected a refusal naming {keys}"
        lines = [line for line in message.splitlines() if line.strip()]
        assert len(lines) == 1 and all(k in lines[0] for k in keys), message
        return
    bad = None if mode == "good" else mx.bad_part(a, b, NAMES)
    verdict, reason, report = decide(tmp_path, cli, stub, a, b, bad)
    expected = mx.truth(a, b, mode)
    assert as_known(verdict, report, expected), f"{a} x {b} ({mode}, {bad or 'all good'} set to fail): {verdict}: {reason}"


def _table():
    return load_script("composition_table")


def test_the_docs_table_matches_the_matrix(tmp_path, monkeypatch):
    table = _table()
    assert table.main(["--check"]) == 0, "run: python scripts/composition_table.py"
    monkeypatch.setattr(table, "DOCS", tmp_path / "composition.md")
    monkeypatch.setattr(table, "ROOT", tmp_path)
    assert table.main(["--check"]) == 1
    assert table.main([]) == 0 and table.main(["--check"]) == 0
    text = (tmp_path / "composition.md").read_text()
    assert all(f"| {a} x {b} |" in text for a, b in mx.pairs(NAMES))
