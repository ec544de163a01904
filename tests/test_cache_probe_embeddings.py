"""Embeddings for the response-cache probe: the run directory's cache, and real components (llama.cpp's
/v1/embeddings serving the demo model, the demo model loaded locally with transformers)."""

from __future__ import annotations

import json
import math

import pytest

import llamacpp
from releasegate.backends.embeddings import EMBEDDINGS_FILE, embed, source_fingerprint
from releasegate.errors import TargetError
from releasegate.inputs.cache_config import EmbeddingSource

NOWHERE = EmbeddingSource(base_url="http://127.0.0.1:9/v1", model="m")  # port 9 (discard): nothing answers


def test_cached_vectors_are_read_not_asked_for(tmp_path):
    cache = tmp_path / EMBEDDINGS_FILE
    with pytest.raises(TargetError, match="embeddings endpoint"):
        embed(["a"], NOWHERE, cache)
    from releasegate.backends import embeddings

    key = embeddings._key(source_fingerprint(NOWHERE), "a")
    cache.write_text(json.dumps({"key": key, "vector": [1.0, 2.0]}) + "\n" + '{"key": "torn')
    out = embed(["a", "a"], NOWHERE, cache)
    assert out.vectors == [[1.0, 2.0], [1.0, 2.0]] and out.computed == 0
    other = EmbeddingSource(base_url="http://127.0.0.1:9/v1", model="another")
    assert source_fingerprint(other) != source_fingerprint(NOWHERE)  # another model: nothing cached for it


def cos(a, b):
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


@pytest.fixture(scope="module")
def embedding_server(tmp_path_factory):
    pytest.importorskip("xllamacpp", reason="llama.cpp bindings (pip install xllamacpp) not installed")
    pytest.importorskip("gguf", reason="gguf (pip install gguf) not installed")
    if not llamacpp.demo_available():
        pytest.skip(f"demo model not built: {llamacpp.DEMO}")
    model, _ = llamacpp.export_demo(tmp_path_factory.mktemp("embed"), adapters=())
    server = llamacpp.start_server(model, n_parallel=1, embeddings=True)
    try:
        yield server
    finally:
        server.stop()


TEXTS = ["When will I see my refund?", "when will i see my refund?", "My invoice shows the wrong amount."]


@pytest.mark.slow
def test_llamacpp_serves_embeddings_and_they_are_cached(embedding_server, tmp_path):
    source = EmbeddingSource(base_url=embedding_server.base_url, model=embedding_server.model, batch_size=2)
    cache = tmp_path / EMBEDDINGS_FILE
    first = embed(TEXTS + TEXTS[:1], source, cache)
    assert first.computed == 3 and len(first.latencies_ms) == 2 and first.tokens and first.tokens > 5
    vectors = first.vectors
    assert len(vectors) == 4 and len(vectors[0]) == len(vectors[2]) > 16 and vectors[3] == vectors[0]
    assert cos(vectors[0], vectors[1]) > cos(vectors[0], vectors[2])  # a paraphrase is nearer than another intent
    again = embed(TEXTS, source, cache)
    assert again.computed == 0 and again.vectors == vectors[:3]


@pytest.mark.slow
def test_the_local_model_mean_pools_its_hidden_states(tmp_path):
    if not llamacpp.demo_available():
        pytest.skip(f"demo model not built: {llamacpp.DEMO}")
    source = EmbeddingSource(local=llamacpp.DEMO / "base", batch_size=2)
    out = embed(TEXTS, source, tmp_path / EMBEDDINGS_FILE)
    assert out.computed == 3 and out.tokens is None and len(out.latencies_ms) == 2
    alone = embed(TEXTS[2:], source, None).vectors[0]  # padded in a batch or alone: the same mean
    assert cos(out.vectors[2], alone) > 0.9999
    assert cos(out.vectors[0], out.vectors[1]) > cos(out.vectors[0], out.vectors[2])
