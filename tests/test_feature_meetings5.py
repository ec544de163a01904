"""The process modes that are no registered gate feature, met with the gate features: the response cache (an
answer cached by this model, and one cached by another model or config), `check --resume` after a kill (the
journal cut as a kill leaves it, and a real kill -9 during generation and during the load phase), served variants
(`releasegate matrix`, whose runs keep their cases where `check` lets its own go), `--set` overrides and
`extends:` layers, and what the newest code carries a verdict on: report.json's capped failing-case details,
`judged_by.records_sha256` (which `report` holds the journal to) and run.json's `composition_sha256` (which
`bless` holds manifest.json's composition to).

Each project is the composition matrix's (`releasegate.testing.composition`), answered by one stub whose answers
follow a planted truth: all good PASS, with a part set to fail FAIL, or `validate` refuses in one line naming
both keys. Every verdict is taken through the real CLI, and `report` must render the same verdict from the run's
files (no false refusal of an honest run)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import HANG_S, as_killed
from releasegate.record.records import RunDir
from releasegate.testing import composition as mx
from test_composition import _label
from test_false_pass_hunt import _project
from test_new_features_meet import Stub, _edit, assert_verdict, check, project, stub  # noqa: F401

EXIT = {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 3, "NEEDS_REVIEW": 3}
CACHE = {"cache": {"path": "cache.sqlite"}}


def labelled(cli, run: RunDir, features: tuple[str, ...], bad: str | None) -> tuple[int, dict]:
    """The run's verdict once reviewers labelled its sample (when a part needs labels), by `gate`."""
    if not mx.needs_labels(features):
        report = json.loads((run.path / "report.json").read_text())
        return report["exit_code"], report
    _label(cli, run, review_bad=bad == "review")
    code, out, err = cli("gate", run.path, "--json")
    assert "Traceback" not in err and out.strip(), err
    return code, json.loads(out)


def reported(cli, run: RunDir) -> str:
    """The verdict `report` renders from the run's files: an honest run is never refused."""
    code, out, err = cli("report", run.path, "--format", "json")
    assert code == 0 and "Traceback" not in err, err
    return json.loads(out)["verdict"]


def decided(cli, run: RunDir, features: tuple[str, ...], bad: str | None, truth: str) -> dict:
    code, report = labelled(cli, run, features, bad)
    assert_verdict(code, report, truth)
    assert reported(cli, run) == report["verdict"]
    return report


# --- the response cache ------------------------------------------------------------------------------------------

CACHED = ["quality", "forbidden", "judge", "stopping", "cache", "guard"]
"""Parts whose evidence is the target's answers, which a cache serves again."""


@pytest.mark.parametrize("feature", CACHED)
def test_answers_cached_by_this_model_are_its_answers_the_next_run(cli, tmp_path, stub, feature):  # noqa: F811
    """The first run fills the cache set to fail; the model then answers right, but the second run is served
    the first's answers from the cache: it is judged on them (FAIL), as its records say (`cached`)."""
    features = (feature,)
    config = project(cli, tmp_path, stub, features, feature, CACHE)
    _, _, first = check(cli, config, "r1")
    decided(cli, first, features, feature, "FAIL")
    stub.mode.bad = None  # the same model, answering right now: the cache still holds what it said
    _, _, second = check(cli, config, "r2")
    assert any(r.cached for r in second.read_records())
    decided(cli, second, features, feature, "FAIL")


@pytest.mark.parametrize("feature", ["quality", "forbidden", "judge", "guard"])
@pytest.mark.parametrize("other", ["model", "temperature", "max_new_tokens", "set", "extends"])
def test_a_cache_made_by_another_model_or_config_is_never_served(cli, tmp_path, stub, feature, other):  # noqa: F811
    """The cache is filled all good by another model (or config); this run's model fails the part: nothing of
    the other's may be served to it (truth FAIL), whether the difference is in the config, a `--set` or an
    `extends:` layer."""
    features = (feature,)
    config = project(cli, tmp_path, stub, features, None, CACHE)
    if other in ("model", "set", "extends"):
        _edit(config, {"target": {"model": "older"}})
    elif other == "temperature":
        _edit(config, {"generation": {"temperature": 0.5}})
    else:
        _edit(config, {"generation": {"max_new_tokens": 12}})
    _, _, first = check(cli, config, "r1")
    decided(cli, first, features, None, "PASS")
    config = project(cli, tmp_path, stub, features, feature, CACHE)  # the candidate, set to fail
    args: tuple[str, ...] = ()
    if other == "set":
        _edit(config, {"target": {"model": "older"}})
        args = ("--set", "target.model=stub")
    elif other == "extends":
        _edit(config, {"target": {"model": "older"}})
        layer = tmp_path / "layer.yaml"
        layer.write_text(yaml.safe_dump({"extends": "releasegate.yaml", "target": {"model": "stub"}}))
        config = layer
    _, _, run = check(cli, config, "r2", *args)
    assert not any(r.cached for r in run.read_records())
    decided(cli, run, features, feature, "FAIL")


def test_repeats_ask_every_draw_anew_beside_a_cache(cli, tmp_path, stub):  # noqa: F811
    """Repeats switch the cache off: the model that answers right now is judged on its own answers (PASS)."""
    features = ("stability", "quality")
    config = project(cli, tmp_path, stub, features, "stability", CACHE)
    _, _, first = check(cli, config, "r1")
    decided(cli, first, features, "stability", "FAIL")
    stub.mode.bad = None
    _, _, second = check(cli, config, "r2")
    assert not any(r.cached for r in second.read_records())
    decided(cli, second, features, None, "PASS")


# --- check --resume after a real kill -9 ---------------------------------------------------------------------------

MAIN = 96
"""Main-suite cases of a killed run: more than the openai backend's journal batch (64), so a kill mid-generation
leaves a whole batch journaled and the rest to ask."""


class Held(Stub):
    """The shared stub, holding every target request after the first `hold_after` (until `go` is set): a run killed
    there has journaled exactly what was answered before."""

    def __init__(self) -> None:
        super().__init__()
        import threading

        self.go = threading.Event()
        self.hold_after: int | None = None
        self.answered = 0
        inner = self.server.behaviour.reply

        def reply(body: dict) -> str:
            text = str((body.get("messages") or [{}])[-1].get("content", ""))
            target = body.get("model") == "stub" and "<END CONVERSATION>" not in text and "<response-" not in text
            if target and self.hold_after is not None:
                self.answered += 1
                if self.answered > self.hold_after:
                    self.go.wait(HANG_S)
            return inner(body)

        self.server.behaviour = type(self.server.behaviour)(**{**self.server.behaviour.__dict__, "reply": reply})


@pytest.fixture(scope="module")
def held():
    s = Held()
    with s.server:
        yield s


def _more_cases(root: Path) -> None:
    rows = [json.loads(line) for line in (root / "main.jsonl").read_text().splitlines()]
    rows += [{**rows[0], "id": f"m{i:02d}", "messages": [{"role": "user", "content": f"ticket {i}"}],
              "tags": {**rows[0]["tags"], "group": f"g{i}"}} for i in range(len(rows), MAIN)]
    (root / "main.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _killed(held: Held, config: Path, run_id: str, hold_after: int, journal: str, lines: int, children) -> RunDir:
    """`check` in its own process, killed -9 once `hold_after` target requests were answered and `journal` has
    `lines` lines (or its process ended first: nothing left to kill)."""
    run = RunDir(config.parent / "reports" / run_id)
    held.go.clear()
    held.answered, held.hold_after = 0, hold_after
    log = config.parent / f"{run_id}.log"
    with log.open("w") as err:
        proc = children.start([sys.executable, "-m", "releasegate", "check", "-c", config, "--run-id", run_id,
                               "--no-progress"], cwd=config.parent, stdout=err, stderr=err,
                              env={**os.environ, "COLUMNS": "200"})
    deadline = time.monotonic() + HANG_S
    path = run.path / journal
    while proc.poll() is None and not (held.answered > hold_after and path.exists()
                                       and path.read_bytes().count(b"\n") >= lines):
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.005)
    ended = proc.poll() is not None
    proc.kill()
    proc.wait(30)
    held.hold_after = None
    held.go.set()
    assert not ended, f"the run ended before the kill: {log.read_text()}"
    return run


KILLS = [
    # (features, set to fail, answers right after the kill, kill during: 'generation' or 'load')
    (("quality",), "quality", True, "generation"),
    (("forbidden",), "forbidden", True, "generation"),
    (("guard",), "guard", True, "generation"),
    (("quality", "stability"), "quality", True, "generation"),
    (("quality", "baseline"), "baseline", False, "generation"),
    (("stopping",), "stopping", False, "generation"),
    (("stopping", "stability"), "stopping", False, "generation"),
    (("stopping", "stability"), None, False, "generation"),
    (("quality", "cache"), "cache", False, "generation"),
    (("quality", "review"), "review", True, "generation"),
    (("quality", "judge"), "judge", False, "generation"),
    (("quality", "latency"), None, False, "load"),
    (("quality", "latency"), "latency", False, "load"),
    (("quality", "latency"), "quality", True, "load"),
]


@pytest.mark.parametrize(("features", "bad", "righted", "during"), KILLS,
                         ids=["-".join(k[0]) + f"-{k[1] or 'good'}-{k[3]}" + ("-righted" if k[2] else "")
                              for k in KILLS])
def test_a_run_killed_and_resumed_keeps_the_failures_it_had(cli, tmp_path, held, children, features, bad,
                                                            righted, during):
    """kill -9 mid-way, then `check --resume`: the verdict is the one the kept and the new answers give. With
    `righted`, the model answers right after the kill: the failures journaled before it still count (each part's
    failing answers among the first 64 cases are enough for FAIL alone)."""
    truth = "FAIL" if bad else "PASS"
    if "baseline" in features:
        held.mode.bad, held.mode.baseline_run = bad, True
        base = mx.build(tmp_path, held.server.base_url, features, bad, baseline_run=True)
        _more_cases(tmp_path)
        _, _, base_run = check(cli, base, "base")
    config = project(cli, tmp_path, held, features, bad)
    _more_cases(tmp_path)
    if during == "generation":
        hold = 8 if "stopping" in features else 64  # a stopping run's batches are its concurrency (8)
        run = _killed(held, config, "r", hold, "records.jsonl", hold, children)
        kept = len(run.read_records())
        assert 0 < kept < MAIN
    else:
        run = _killed(held, config, "r", MAIN + 30, "records.jsonl", MAIN, children)
        assert len(run.read_records()) == MAIN and run.read_info().load_phase is None
    if righted:
        held.mode.bad = None
    code, out, err = cli("check", "--resume", run.path, "--no-progress", "--json")
    assert "Traceback" not in err and out.strip(), err
    decided(cli, run, features, bad, truth)
    ids = [json.loads(line)["case_id"] for line in run.records_path.read_text().splitlines()]
    assert len(ids) == len(set(ids))


# --- served variants: each variant's run keeps its cases -----------------------------------------------------------


@pytest.fixture(scope="module")
def composed():
    """test_composition's stub: the shared one and one per target behaviour, answering by one mode."""
    from test_composition import composition_stubs

    yield from composition_stubs()


SERVED_WITH = ["quality", "forbidden", "stability", "cache", "tools", "latency", "stopping"]


@pytest.mark.slow  # 14 matrices of two variants each against the stub: a minute on a small machine
@pytest.mark.parametrize("bad", [False, True], ids=["good", "bad"])
@pytest.mark.parametrize("feature", SERVED_WITH)
def test_served_variants_with_each_feature(cli, tmp_path, composed, feature, bad):
    """Two endpoint variants of the target: each variant's run is the feature's whole run (the second variant
    is given the same cases as the first, which `check`'s own run would have let go)."""
    from releasegate.run.interruption import INTERRUPTION
    from test_composition import as_known, decide_features

    features = (feature, mx.SERVED)
    verdict, reason, result = decide_features(tmp_path, cli, composed, features, feature if bad else None)
    # no variant's verdict is the command's: a signal after one stops the matrix, never exits with its code
    assert INTERRUPTION.finished_with is None
    if verdict == "REFUSED":
        lines = [line for line in reason.splitlines() if line.strip()]
        assert len(lines) == 1 and "variants" in lines[0] and feature in lines[0], reason
        return
    truth = "FAIL" if bad else "PASS"
    assert as_known(verdict, result, truth), (verdict, reason)
    for variant in result["variants"]:
        run = RunDir(Path(variant["run_dir"]))
        report = json.loads((run.path / "report.json").read_text())
        assert report["counts"]["cases"] == json.loads((run.path / "run.json").read_text())["cases"]
        assert reported(cli, run) == report["verdict"] and as_known(report["verdict"], report, truth)


# --- --set overrides and extends: layers switching a feature's input off ------------------------------------------

SWITCHED_OFF = [
    ("forbidden", "probes", None),
    ("cache", "response_cache_probe", None),
    ("leakage", "leakage", None),
    ("latency", "load", None),
    ("guard", "guards", None),
    ("judge", "judge", None),
    ("stability", "generation.repeats", 1),
    ("stability", "generation.temperature", 0),
    ("leakage", "leakage.base.model", "stub"),
]


@pytest.mark.parametrize("how", ["set", "extends"])
@pytest.mark.parametrize(("feature", "key", "value"), SWITCHED_OFF,
                         ids=[f"{f}-{k}={v}" for f, k, v in SWITCHED_OFF])
def test_a_feature_switched_off_by_an_override_never_passes_its_failing_part(cli, tmp_path, composed, feature, key,
                                                                             value, how):
    """The part is set to fail and its input is switched off (or its measure defeated: the leakage base set to the
    candidate itself) by a `--set` or an `extends:` layer: `validate`/`check` refuse in one line naming the key,
    or the run is not PASS (a criterion with nothing to measure is unknown, never met); and a PASS of an override
    is never released (`bless` refuses it)."""
    server, mode, stub_with = composed
    features = (feature,)
    mode.bad, mode.baseline_run = feature, False
    config = mx.build(tmp_path, server.base_url, features, feature, target_url=stub_with(mx.target_stub(features, feature)).base_url)
    for command in mx.commands(features):
        assert cli(*[str(tmp_path / w) if (tmp_path / w).suffix in (".jsonl", ".json") else w for w in command])[0] == 0
    args: tuple[str, ...] = ()
    if how == "set":
        args = ("--set", f"{key}={json.dumps(value)}")
    else:
        node: dict = {}
        here = node
        parts = key.split(".")
        for part in parts[:-1]:
            here = here.setdefault(part, {})
        here[parts[-1]] = value
        layer = tmp_path / "layer.yaml"
        layer.write_text(yaml.safe_dump({"extends": "releasegate.yaml", **node}))
        config = layer
    code, out, err = cli("validate", "-c", config, *args)
    if key == "leakage.base.model":  # the base is the candidate: every delta 0, refused naming both
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 2 and len(lines) == 1 and "leakage.base" in lines[0] and "target" in lines[0], err
        return
    if code == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and "Traceback" not in err, err
        return
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress", "--json", *args)
    assert "Traceback" not in err, err
    if code == 2:
        assert len([line for line in err.splitlines() if line.strip()]) == 1, err
        return
    report = json.loads(out)
    run = RunDir(tmp_path / "reports" / "r")
    code, report = labelled(cli, run, features, feature)
    assert report["verdict"] != "PASS", (report["verdict_reason"], [(c["name"], c["verdict"], c.get("reason"))
                                                                    for c in report["criteria"]])


# --- a resumed run's composition, and a blessed baseline met with stop-when-decided ---------------------------------


def _replay_project(root: Path, right: bool, *, stopping: bool = False, baseline: dict | None = None) -> Path:
    """test_false_pass_hunt's project: a replay target over 40 cases, every reply right (`right`) or half wrong
    (truth FAIL at accuracy >= 0.7); `stopping`: the rubric stops when decided (one-sided e-process bound)."""
    criterion = {"metric": "accuracy", "op": ">=", "threshold": 0.7 if not baseline else 0}
    rubric: dict = {"name": "r", "review": {"required_domains": []}, "criteria": [criterion]}
    if stopping:
        rubric["stop_when_decided"] = True
        rubric["criteria"] = [{**criterion, "threshold": 0.3, "confidence": 0.95},
                              {"metric": "error_rate", "op": "<=", "threshold": 0.3}]
    if baseline:
        rubric["baseline"] = baseline
    return _project(root, right=right, rubric=rubric)


def _cut(run: Path, cases: int) -> None:
    """The run as a kill after its first `cases` records leaves it."""
    records = RunDir(run).records_path
    records.write_bytes(b"".join(records.read_bytes().splitlines(keepends=True)[:cases]))
    info = RunDir(run).read_info()
    info.status, info.finished_at, info.sessions[-1]["status"] = "running", None, "running"
    RunDir(run).write_info(info)
    for name in ("report.json", "report.md", "report.html", "report.junit.xml"):
        (run / name).unlink(missing_ok=True)
    as_killed(run)


@pytest.mark.parametrize("right", [True, False], ids=["right", "half-wrong"])
@pytest.mark.parametrize("composed_by", ["plain", "set-output", "extends-output", "set-judging"])
def test_a_resumed_run_is_released_as_its_composition_says(cli, tmp_path, composed_by, right):
    """A run composed with a `--set` or an `extends:` layer, killed and resumed: the resumed run's composition is
    still the one its sealed run.json vouches for. A right run with no judging override blesses; a failing one,
    or one judged with an override, never does."""
    config = _replay_project(tmp_path, right)
    args: tuple[str, ...] = ()
    if composed_by == "set-output":
        args = ("--set", "output.dir=reports")
    elif composed_by == "set-judging":
        args = ("--set", "suites[0].answer.pattern=.")
    elif composed_by == "extends-output":
        layer = tmp_path / "layer.yaml"
        layer.write_text(yaml.safe_dump({"extends": "releasegate.yaml", "output": {"dir": "reports"}}))
        config = layer
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress", "--json", *args)
    assert "Traceback" not in err and out.strip(), err
    run = tmp_path / "reports" / "r"
    _cut(run, 17)
    code, out, err = cli("check", "--resume", run, "--no-progress", "--json")
    assert "Traceback" not in err and out.strip(), err
    truth = "PASS" if right or composed_by == "set-judging" else "FAIL"
    assert json.loads(out)["verdict"] == truth
    assert reported(cli, RunDir(run)) == truth
    code, _, err = cli("bless", run, "--as", "prod", "--reason", "r")
    released = right and composed_by != "set-judging"
    assert (code == 0) is released, err
    assert "Traceback" not in err


@pytest.mark.parametrize("bad", [False, True], ids=["good", "regressed"])
def test_stopping_against_a_blessed_baseline(cli, tmp_path, bad):
    """The blessed baseline answers every case right; the candidate, stopping when decided, answers every case
    right (PASS, decided early) or half wrong (FAIL: a loss of 0.5 against a margin of 0.2)."""
    base_root = tmp_path / "base"
    base_root.mkdir()
    base = _replay_project(base_root, True)
    code, out, err = cli("check", "-c", base, "--run-id", "base", "--no-progress", "--json")
    assert code == 0, err
    code, _, err = cli("bless", base_root / "reports" / "base", "--as", "prod", "--reason", "shipped")
    assert code == 0, err
    blessed = {"blessed": "prod", "reports": str(base_root / "reports"), "metrics": ["accuracy"],
               "margins": {"accuracy": 0.2}}
    config = _replay_project(tmp_path, not bad, stopping=True, baseline=blessed)
    code, out, err = cli("check", "-c", config, "--run-id", "cand", "--no-progress", "--json")
    assert "Traceback" not in err and out.strip(), err
    report = json.loads(out)
    truth = "FAIL" if bad else "PASS"
    assert (report["verdict"], code) == (truth, EXIT[truth]), (report["verdict_reason"], report["criteria"])
    assert reported(cli, RunDir(tmp_path / "reports" / "cand")) == truth


# --- what `gate` reads again: a what-if rubric over held records, double-labelled review after a resume -----------

WHATIF = ["cache", "stability", "tools", "quality", "latency", "forbidden"]


@pytest.mark.parametrize("bad", [False, True], ids=["good", "bad"])
@pytest.mark.parametrize("feature", WHATIF)
def test_a_whatif_rubric_judges_the_held_records_as_the_run_did(cli, tmp_path, composed, feature, bad):
    """`gate --rubric` with a copy of the run's own rubric (a what-if, which re-derives the cache probe's flags
    from the records' inputs, held packed): the same verdict as the run's."""
    from test_composition import as_known, decide_features

    verdict, reason, report = decide_features(tmp_path, cli, composed, (feature,), feature if bad else None)
    truth = "FAIL" if bad else "PASS"
    assert as_known(verdict, report, truth), reason
    other = tmp_path / "other.yaml"
    other.write_text((tmp_path / "rubric.yaml").read_text())
    code, out, err = cli("gate", tmp_path / "reports" / "r", "--rubric", other, "--json")
    assert "Traceback" not in err and out.strip(), err
    assert json.loads(out)["verdict"] == verdict, json.loads(out)["verdict_reason"]  # judged on the same records


@pytest.mark.parametrize("bad", [None, "review", "quality"])
def test_double_labelled_review_of_a_resumed_run(cli, tmp_path, composed, bad):
    """Two reviewers label the sample of a run killed and resumed: the sample is the resumed run's whole one, and
    the verdict the one its labels and answers give."""
    server, mode, stub_with = composed
    features = ("review", "quality")
    mode.bad, mode.baseline_run = bad, False
    config = mx.build(tmp_path, server.base_url, features, bad)
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress", "--json")
    assert out.strip(), err
    run = RunDir(tmp_path / "reports" / "r")
    _cut(run.path, 17)
    code, out, err = cli("check", "--resume", run.path, "--no-progress", "--json")
    assert "Traceback" not in err and out.strip(), err
    decided(cli, run, features, bad, "FAIL" if bad else "PASS")
