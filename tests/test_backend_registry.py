"""The backend registry: a backend is one module and its registration; everything else asks its capabilities."""

from __future__ import annotations

from pathlib import Path

import pytest

from releasegate.backends import BACKENDS, Backend, BackendEntry, Generation, capabilities, create_backend, entry
from releasegate.errors import InputError
from releasegate.inputs import backend_facts
from releasegate.inputs.backend_facts import BackendSpec, Capabilities
from releasegate.inputs.load_profile import parse_load
from releasegate.inputs.target import TargetConfig


def at(*parts):
    return {"field": ".".join(str(p) for p in parts)}


class Echo(Backend):
    """Answers every request with its case id."""

    def __init__(self, target, generation=None) -> None:
        self.target = target

    def generate(self, requests, *, max_new_tokens):
        return [Generation(r.case_id) for r in requests]


def test_a_registered_backend_is_built_by_name(monkeypatch):
    spec = BackendSpec("echo", "answers with the case id", capabilities=Capabilities(load_phase=True))
    monkeypatch.setitem(BACKENDS, "echo", BackendEntry(spec, f"{__name__}:Echo"))
    built = create_backend(TargetConfig(backend="echo"))
    assert isinstance(built, Echo) and built.generate([], max_new_tokens=1) == []
    assert capabilities("echo").load_phase and not capabilities("echo").endpoint


def test_the_decorator_registers_a_class_defined_elsewhere():
    from releasegate.backends import backend

    backend("echo2")(Echo)
    try:
        assert entry("echo2").implementation == f"{__name__}:Echo"
        assert capabilities("echo2") == Capabilities()  # nothing beyond a plain run unless it says so
    finally:
        BACKENDS.pop("echo2", None)


def test_each_backend_says_what_it_can_do():
    hf, openai, replay = capabilities("hf"), capabilities("openai"), capabilities("replay")
    assert openai.load_phase and openai.capacity_sweep and openai.prefix_cache_probe and openai.stream_timings
    assert not (hf.load_phase or replay.load_phase or hf.prefix_cache_probe or replay.prefix_cache_probe)
    assert (hf.scale, openai.scale, replay.scale) == ("cases", "load", None)
    assert hf.judge and openai.judge and replay.judge and openai.response_format and not hf.response_format
    assert not replay.measures_latency and hf.measures_latency and openai.measures_latency
    assert entry("hf").scaled == "releasegate.scale.hf:RayHFBackend" and entry("openai").scaled is None


def test_the_registry_and_the_class_agree_on_latency():
    from releasegate.backends.replay import ReplayBackend

    assert ReplayBackend.measures_latency is capabilities("replay").measures_latency


def test_an_unknown_backend_is_named():
    with pytest.raises(KeyError, match="no backend 'nope' .known: hf, hf_classifier, openai, replay"):
        entry("nope")
    with pytest.raises(InputError, match="no backend 'nope'"):
        backend_facts.spec("nope")


def test_a_capability_the_backend_lacks_is_the_same_one_line_error():
    with pytest.raises(InputError, match="a load phase needs the openai backend"):
        parse_load({"concurrency": 2, "requests": 4}, {"backend": "hf"}, Path("."), at)
    assert parse_load({"concurrency": 2, "requests": 4}, {"backend": "openai"}, Path("."), at).concurrency == 2


def test_the_description_is_built_from_the_backend_s_templates():
    hf = TargetConfig(backend="hf", base="b", adapter=Path("a"), merge=True, quantize="int8", draft=Path("d"))
    assert hf.describe() == "hf b + adapter a (merged), int8, speculative with draft d"
    assert TargetConfig(backend="hf", base="b").describe() == "hf b"
    assert TargetConfig(backend="replay", responses=Path("r.jsonl")).describe() == "replay of r.jsonl"
    openai = TargetConfig(backend="openai", base_url="http://u:secretpw@h:1/v1", model="m")
    assert openai.describe().startswith("m at http://") and "secretpw" not in openai.describe()
    assert openai.describe().endswith(" (chat)")


def test_the_judge_s_required_fields_come_from_the_backend():
    from releasegate.inputs.judge_settings import parse_judge

    with pytest.raises(InputError, match="a judge with backend replay needs responses"):
        parse_judge({"backend": "replay"}, Path("."), lambda *p: at(*p), lambda raw: None)
    assert backend_facts.spec("openai").required == ("base_url", "model")


def _old_fingerprint(t, by_role):
    """The response cache's key as it was computed before the registry (by backend name), for comparison."""
    import hashlib
    import json

    if t.backend == "openai":
        masked = t.masked()
        facts = {"base_url": masked["base_url"], "model": t.model, "mode": t.mode, "extra_body": masked["extra_body"]}
        if masked.get("headers"):
            facts["headers"] = masked["headers"]
    elif t.backend == "hf":
        facts = {"merge": t.merge, "dtype": t.dtype, "device": t.device, "quantize": t.quantize}
    else:
        facts = {}
    facts = {"backend": t.backend, **facts, "files": by_role}
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()


@pytest.mark.parametrize("target", [
    TargetConfig(backend="hf", base="b", merge=True, dtype="bfloat16", quantize="int8"),
    TargetConfig(backend="openai", base_url="http://u:pw@h:1/v1?sig=abc", model="m", mode="completion",
                 extra_body={"lora": 1, "api_key": "k"}),
    TargetConfig(backend="openai", base_url="http://h:1/v1", model="m", headers={"X-Route": "blue"}),
    TargetConfig(backend="replay", responses=Path("r.jsonl")),
])
def test_the_target_fingerprint_is_unchanged(target):

    from releasegate.run.manifest import target_fingerprint

    inputs = [{"role": "model", "path": "/m/config.json", "name": "model/config.json", "sha256": "ab"}]
    by_role = {"model": {"model/config.json": "ab"}}
    assert target_fingerprint(target, inputs) == _old_fingerprint(target, by_role)
