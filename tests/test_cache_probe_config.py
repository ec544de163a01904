"""The `response_cache_probe:` config section: parsed with its defaults, and one-line errors naming the field."""

from __future__ import annotations

import pytest

from releasegate.errors import InputError
from releasegate.inputs.config import load_config


def with_probe(project, section: str):
    config = project / "releasegate.yaml"
    config.write_text(config.read_text() + "response_cache_probe:\n" + section)
    return config


def test_a_semantic_probe_with_a_local_model(project):
    config = load_config(with_probe(project, "  threshold: 0.9\n  thresholds: [0.8, 0.95]\n  ttl_s: 60\n"
                                             "  group_tag: group\n  embeddings: {local: models/base}\n"))
    probe = config.response_cache_probe
    assert probe.mode == "semantic" and probe.threshold == 0.9 and probe.thresholds == (0.8, 0.9, 0.95)
    assert probe.ttl_s == 60 and probe.arrival_interval_s == 1.0 and probe.group_tag == "group"
    assert probe.embeddings.local == (project / "models/base").resolve() and probe.embeddings.base_url is None


def test_exact_mode_needs_no_embeddings_and_no_config_means_no_probe(project):
    assert load_config(project / "releasegate.yaml").response_cache_probe is None
    probe = load_config(with_probe(project, "  mode: exact\n  time_sensitive_tag: prices\n")).response_cache_probe
    assert probe.mode == "exact" and probe.thresholds == () and probe.embeddings is None
    assert probe.time_sensitive_tag == "prices"


@pytest.mark.parametrize(("section", "field", "message"), [
    ("  embeddings: {local: m}\n", "response_cache_probe.threshold", "needs a threshold"),
    ("  threshold: 0.9\n", "response_cache_probe.embeddings", "needs embeddings"),
    ("  threshold: 1.5\n  embeddings: {local: m}\n", "response_cache_probe.threshold", ""),
    ("  threshold: 0.9\n  embeddings: {local: m, base_url: 'http://h/v1'}\n", "response_cache_probe.embeddings",
     "one of base_url"),
    ("  threshold: 0.9\n  embeddings: {base_url: 'http://h/v1'}\n", "response_cache_probe.embeddings.model", "model"),
    ("  mode: fuzzy\n", "response_cache_probe.mode", ""),
    ("  mode: exact\n  ttl_s: 0\n", "response_cache_probe.ttl_s", ""),
])
def test_a_bad_value_is_one_line_naming_the_field(project, section, field, message):
    with pytest.raises(InputError) as caught:
        load_config(with_probe(project, section))
    error = caught.value
    assert error.field == field and message in error.message and "\n" not in str(error)
