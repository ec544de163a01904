"""The rubric that judged is bound into a release, end to end with the real demo model: an override of a judging
key (`--set`, an `extends:` layer over the config naming the rubric) that turns the regressed adapter's FAIL into
a PASS is refused by attest, bless and promote naming it, unless the rubric allows it by name; an override that
judges nothing stays releasable; a deploy can require the official effective rubric hash, and must give every
weights file the run loaded."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, write_jsonl
from releasegate.cli import main
from releasegate.inputs.composition import compose, parse_override
from releasegate.inputs.judging_keys import NOT_JUDGING, judges, key_parts, layered_over_official

DEMO = ROOT / "models" / "demo"
CASES = [{"id": f"case-{i}", "messages": [{"role": "user", "content": text}],
          "expected": {"intent": "billing", "priority": "low"}, "tags": {"domain": "billing"}}
         for i, text in enumerate(["charged twice", "refund please", "where is my invoice"])]
# the official bar: every answer right. The regressed adapter misses it.
STRICT = {"name": "strict", "criteria": [{"metric": "accuracy", "op": ">=", "threshold": 0.99}]}
LOOSER_ANSWER = "suites[0].answer={type: rouge, min: 0}"  # every answer "passes": the held-out review's attack


def _project(root: Path, rubric: dict) -> Path:
    root.mkdir(parents=True)
    shutil.copytree(DEMO / "base", root / "models" / "base")
    shutil.copytree(DEMO / "adapters" / "regressed", root / "models" / "adapter")
    write_jsonl(root / "suite.jsonl", CASES)
    (root / "rubric.yaml").write_text(yaml.safe_dump(rubric))
    config = {"target": {"backend": "hf", "base": "models/base", "adapter": "models/adapter", "dtype": "float32",
                         "threads": 1, "batch_size": 8},
              "generation": {"max_new_tokens": 8},
              "suites": [{"path": "suite.jsonl", "answer": {"type": "json_fields", "fields": ["intent", "priority"]}}],
              "rubric": "rubric.yaml", "output": {"dir": "reports"}}
    (root / "releasegate.yaml").write_text(yaml.safe_dump(config))
    return root


def _check(config: Path, run_id: str, *sets: str) -> Path:
    args = ["check", "-c", str(config), "--run-id", run_id, "--no-progress", "--json"]
    for s in sets:
        args += ["--set", s]
    main(args)
    return config.parent / "reports" / run_id


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Real runs of the regressed demo adapter: under the official config (FAIL), with the answer check loosened
    by --set and by an extends: layer (PASS), the same --set under a rubric that allows it by name, and a --set
    that judges nothing."""
    tmp = tmp_path_factory.mktemp("rubric")
    official = _project(tmp / "p", STRICT)
    allowing = _project(tmp / "a", {**STRICT, "release": {"allow_overrides": ["suites[*].answer"]}})
    layer = official / "mine.yaml"
    layer.write_text(yaml.safe_dump({"extends": "releasegate.yaml", "suites": [
        {"path": "suite.jsonl", "answer": {"type": "rouge", "min": 0}}]}))
    found = {"official": _check(official / "releasegate.yaml", "official"),
             "set": _check(official / "releasegate.yaml", "set", LOOSER_ANSWER),
             "layer": _check(layer, "layer"),
             "allowed": _check(allowing / "releasegate.yaml", "allowed", LOOSER_ANSWER)}
    verdicts = {k: json.loads((v / "report.json").read_text())["verdict"] for k, v in found.items()}
    assert verdicts == {"official": "FAIL", "set": "PASS", "layer": "PASS", "allowed": "PASS"}
    assert main(["attest", "--generate-key", str(tmp / "key")]) == 0
    return tmp, official, found


def _statement(envelope: Path) -> dict:
    return json.loads(base64.b64decode(json.loads(envelope.read_text())["payload"]))


def _official_hash(cli, config: Path, *sets: str) -> str:
    args: list = ["validate", "-c", config, "--json"]
    for s in sets:
        args += ["--set", s]
    code, out, err = cli(*args)
    assert code == 0, err
    return json.loads(out)["effective_rubric_sha256"]


def test_a_loosened_answer_check_is_never_released(runs, cli):
    tmp, _, found = runs
    for which, named in (("set", "--set suites[0].answer"), ("layer", "suites (set by ")):
        code, _, err = cli("attest", found[which], "--key", tmp / "key", "-o", tmp / f"{which}.json")
        assert code == 1 and named in err and "allow_overrides" in err and err.count("\n") == 1, err
        assert not (tmp / f"{which}.json").exists()
        code, _, err = cli("bless", found[which], "--as", "prod", "--reason", "looks good")
        assert code == 1 and named in err
        code, _, err = cli("promote", found[which], "--mlflow-model", "m", "--alias", "prod")
        assert code == 1 and named in err


def test_an_override_the_rubric_allows_by_name_is_released_and_recorded(runs, cli):
    tmp, official, found = runs
    out = tmp / "allowed.json"
    code, _, err = cli("attest", found["allowed"], "--key", tmp / "key", "-o", out)
    assert code == 0, err
    rubric = _statement(out)["predicate"]["rubric"]
    assert rubric["overrides"] == [{"key": "suites[0].answer", "by": "--set", "judges": True}]
    assert rubric["official_sha256"] == rubric["sha256"] and rubric["effective_sha256"] != rubric["sha256"]
    project = found["allowed"].parents[1]
    assert rubric["effective_sha256"] == _official_hash(cli, project / "releasegate.yaml", LOOSER_ANSWER)
    artifacts = ["--artifact", project / "models" / "base" / "model.safetensors",
                 "--artifact", project / "models" / "adapter" / "adapter_model.safetensors"]
    assert cli("verify-attestation", out, "--key", tmp / "key.pub", *artifacts)[0] == 0
    # a deploy that requires the official rubric refuses it: another rubric judged
    official_hash = _official_hash(cli, project / "releasegate.yaml")
    code, _, err = cli("verify-attestation", out, "--key", tmp / "key.pub", *artifacts, "--rubric-sha256", official_hash)
    assert code == 1 and "is not the one required" in err
    # and even under the hash the override gave, an override is no official rubric
    code, _, err = cli("verify-attestation", out, "--key", tmp / "key.pub", *artifacts,
                       "--rubric-sha256", rubric["effective_sha256"])
    assert code == 1 and "suites[0].answer" in err
    code, _, err = cli("bless", found["allowed"], "--as", "prod", "--reason", "allowed by the rubric")
    assert code == 0, err
    blessing = json.loads((found["allowed"].parent / "baselines.jsonl").read_text().splitlines()[-1])
    assert blessing["rubric"]["effective_sha256"] == rubric["effective_sha256"]
    assert blessing["rubric"]["overrides"][0]["key"] == "suites[0].answer"


def test_a_deploy_requires_the_official_rubric_and_every_weights_file(runs, cli, tmp_path):
    """A run under the official config with a --set that judges nothing (where reports go) is attested; the deploy
    pins the hash validate gives for the official config, and the base weights alone are not what passed."""
    tmp, official, _ = runs
    lenient = tmp_path / "lenient"
    shutil.copytree(official, lenient, ignore=shutil.ignore_patterns("reports", "mine.yaml"))
    (lenient / "rubric.yaml").write_text(yaml.safe_dump({"name": "lenient", "criteria": [
        {"metric": "error_rate", "op": "<=", "threshold": 1.0}]}))
    run = _check(lenient / "releasegate.yaml", "ok", "output.dir=reports")
    out = tmp_path / "ok.json"
    code, _, err = cli("attest", run, "--key", tmp / "key", "-o", out)
    assert code == 0, err
    rubric = _statement(out)["predicate"]["rubric"]
    assert rubric["overrides"] == [{"key": "output.dir", "by": "--set", "judges": False}]
    pinned = _official_hash(cli, lenient / "releasegate.yaml")
    assert rubric["effective_sha256"] == pinned
    base = lenient / "models" / "base" / "model.safetensors"
    adapter = lenient / "models" / "adapter" / "adapter_model.safetensors"
    ok = cli("verify-attestation", out, "--key", tmp / "key.pub", "--artifact", base, "--artifact", adapter,
             "--rubric-sha256", pinned)
    assert ok[0] == 0, ok[2]
    code, _, err = cli("verify-attestation", out, "--key", tmp / "key.pub", "--artifact", base,
                       "--rubric-sha256", pinned)
    assert code == 1 and "adapter/adapter_model.safetensors" in err and err.count("\n") == 1
    code, _, err = cli("verify-attestation", out, "--key", tmp / "key.pub", "--artifact", base, "--artifact",
                       adapter, "--rubric-sha256", "not-a-hash")
    assert code == 2 and "--rubric-sha256" in err


# -- the rule over every config key ------------------------------------------------------------------------------

def _schema_keys() -> list[tuple[str, ...]]:
    schema = json.loads((ROOT / "src" / "releasegate" / "schemas" / "config.schema.json").read_text())
    keys = []
    for name, spec in schema["properties"].items():
        keys.append((name,))
        keys += [(name, sub) for sub in (spec.get("properties") or {})]
    return keys


@pytest.mark.parametrize("parts", _schema_keys(), ids=".".join)
def test_every_config_key_judges_unless_named_as_not_judging(parts):
    """Each key of the config schema, and anything below it, judges, except the sections and keys NOT_JUDGING
    names (where reports go, how the endpoint is reached, which model files answer): a new key judges."""
    named = parts[0] in NOT_JUDGING and (not NOT_JUDGING[parts[0]] or parts[1:2] and parts[1] in NOT_JUDGING[parts[0]])
    assert judges(parts) is not bool(named)
    assert judges((*parts, "deeper", 0)) is not bool(named) or len(parts) == 1
    assert judges(key_parts(".".join(parts))) == judges(parts)


@pytest.mark.parametrize("key, judging", [
    ("suites[0].answer", True), ("suites[0].format[1].max_chars", True), ("suites[0].sample.n", True),
    ("generation.max_new_tokens", True), ("rubric", True), ("judge.model", True), ("guards.g.threshold", True),
    ("target", True), ("target.dtype", True), ("target.extra_body", True), ("seed", True),
    ("output.dir", False), ("output", False), ("target.base_url", False), ("target.api_key_env", False),
    ("target.headers.X-Key", False), ("target.adapter", False), ("target.base", False),
])
def test_judging_keys_by_kind(key, judging):
    assert judges(key_parts(key)) is judging


def test_layers_over_the_config_naming_the_rubric_are_overrides(tmp_path):
    """Keys a base under the rubric's layer writes are official; keys a layer over it writes, null included, and
    every --set are overrides."""
    (tmp_path / "base.yaml").write_text(yaml.safe_dump({"target": {"backend": "replay", "responses": "r.jsonl"},
                                                        "generation": {"max_new_tokens": 8}}))
    (tmp_path / "official.yaml").write_text(yaml.safe_dump({"extends": "base.yaml", "rubric": "rubric.yaml",
                                                            "suites": [{"path": "s.jsonl"}]}))
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump({"extends": "official.yaml", "generation": {
        "max_new_tokens": None, "temperature": 0.5}, "output": {"dir": "elsewhere"}}))
    over = layered_over_official(compose(tmp_path / "mine.yaml", (parse_override("suites[0].limit=1"),)))
    mine = str((tmp_path / "mine.yaml").resolve())
    assert list(over) == [{"key": "generation.max_new_tokens", "by": mine}, {"key": "generation.temperature", "by": mine},
                          {"key": "output.dir", "by": mine}, {"key": "suites[0].limit", "by": "--set"}]
    assert layered_over_official(compose(tmp_path / "official.yaml")) == ()


def test_compare_and_history_name_the_rubric_that_judged(runs, cli):
    _, official, found = runs
    code, out, err = cli("compare", found["official"], found["set"], "--json")
    assert code in (0, 1, 3), err
    rubrics = json.loads(out)["rubrics"]
    assert rubrics["baseline"]["overrides"] == []
    assert rubrics["candidate"]["overrides"] == [{"key": "suites[0].answer", "by": "--set", "judges": True}]
    assert rubrics["baseline"]["effective_sha256"] != rubrics["candidate"]["effective_sha256"]
    assert rubrics["baseline"]["official_sha256"] == rubrics["candidate"]["official_sha256"]
    code, out, err = cli("history", "--reports", official / "reports", "--json")
    assert code == 0, err
    rows = {r["dir"]: r for r in json.loads(out)["runs"]}
    assert rows["official"]["rubric_overrides"] == [] and rows["set"]["rubric_overrides"] == ["suites[0].answer (--set)"]
    assert rows["layer"]["rubric_overrides"] == ["suites (mine.yaml)"]  # relative to the project: no machine path
    assert rows["official"]["effective_rubric_sha256"] == _official_hash(cli, official / "releasegate.yaml")
    assert len({r["effective_rubric_sha256"] for r in rows.values()}) == 2  # the loosened check, however laid over
