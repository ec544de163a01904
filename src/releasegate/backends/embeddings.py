"""Embeddings for the response-cache probe, from a real component: an OpenAI-compatible `/v1/embeddings`
endpoint (llama.cpp with its embeddings option, vLLM, TGI, OpenAI) or a local transformers model (the last
hidden states, mean-pooled over the text's tokens).

Vectors are kept per (text, model fingerprint) in a JSON-lines file of the run directory, so that a second
probe of the same texts by the same model asks nothing. The fingerprint of an endpoint is its URL and model
name; of a local model, a hash of its config and weight files. What was asked (texts, seconds, tokens the
endpoint reported) is returned with the vectors: the embedding cost and latency a semantic cache adds.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..border.files import regular_entries, sha256_file
from ..errors import TargetError
from ..inputs.cache_config import EmbeddingSource
from ..redaction import secret_from_env
from ._http import httpx

__all__ = ["Embedded", "embed", "source_fingerprint", "EMBEDDINGS_FILE", "stored_vectors"]

EMBEDDINGS_FILE = "embeddings.jsonl"
"""The run directory's embedding cache: one {key, vector} per line."""


@dataclass
class Embedded:
    """Vectors in the order of the texts asked for, and what computing the new ones cost."""

    vectors: list[list[float]]
    fingerprint: str
    computed: int = 0
    """Texts embedded now (the others came from the cache)."""
    seconds: float = 0.0
    """Wall time spent embedding them."""
    tokens: int | None = None
    """Prompt tokens the endpoint reported for them; None: not reported (a local model)."""
    latencies_ms: list[float] = field(default_factory=list)
    """Per request (or forward pass): its wall time, for the latency a semantic cache adds to each lookup."""


def embed(texts: list[str], source: EmbeddingSource, cache_path: Path | None = None) -> Embedded:
    """Vectors for `texts`, the cached ones read from `cache_path` and the new ones appended to it."""
    fingerprint = source_fingerprint(source)
    known = _read_cache(cache_path)
    keys = [_key(fingerprint, t) for t in texts]
    todo = sorted({t for t, k in zip(texts, keys) if k not in known})
    out = Embedded(vectors=[], fingerprint=fingerprint, computed=len(todo))
    if todo:
        started = time.perf_counter()
        vectors = _endpoint(todo, source, out) if source.local is None else _local(todo, source, out)
        out.seconds = time.perf_counter() - started
        new = {_key(fingerprint, t): v for t, v in zip(todo, vectors)}
        known.update(new)
        _append_cache(cache_path, new)
    out.vectors = [known[k] for k in keys]
    return out


def source_fingerprint(source: EmbeddingSource) -> str:
    """What the vectors depend on: the endpoint's URL and model, or the local model's files."""
    digest = hashlib.sha256()
    if source.local is None:
        digest.update(f"endpoint\0{(source.base_url or '').rstrip('/')}\0{source.model}".encode())
    else:
        for path in regular_entries(Path(source.local), what="embedding model", suffixes=(".json", ".safetensors", ".bin")):
            digest.update(path.name.encode() + b"\0" + sha256_file(path).encode())
    return digest.hexdigest()[:16]


def _endpoint(texts: list[str], source: EmbeddingSource, out: Embedded) -> list[list[float]]:
    secret_from_env(source.api_key_env)
    key = os.environ.get(source.api_key_env) if source.api_key_env else None
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    url = (source.base_url or "").rstrip("/") + "/embeddings"
    vectors: list[list[float]] = []
    tokens: int | None = 0
    with httpx.Client(timeout=120) as client:
        for i in range(0, len(texts), source.batch_size):
            batch = texts[i:i + source.batch_size]
            started = time.perf_counter()
            try:
                reply = client.post(url, json={"model": source.model, "input": batch}, headers=headers)
                reply.raise_for_status()
                body = reply.json()
            except (httpx.HTTPError, ValueError) as exc:
                raise TargetError(f"the embeddings endpoint {url} failed: {exc}") from None
            out.latencies_ms.append((time.perf_counter() - started) * 1e3)
            vectors += _vectors(body, len(batch), url)
            usage = body.get("usage")
            used = usage.get("prompt_tokens") if isinstance(usage, dict) else None
            tokens = tokens + used if tokens is not None and isinstance(used, int) else None
    out.tokens = tokens
    return vectors


def _local(texts: list[str], source: EmbeddingSource, out: Embedded) -> list[list[float]]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local directory: never the hub
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import torch
    from transformers import AutoModel, AutoTokenizer

    torch.set_num_threads(source.threads)
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(source.local))
        model = AutoModel.from_pretrained(str(source.local), dtype=torch.float32).eval()
    except (OSError, ValueError) as exc:
        raise TargetError(f"the embedding model {source.local} could not be loaded: {exc}") from None
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    vectors: list[list[float]] = []
    for i in range(0, len(texts), source.batch_size):
        started = time.perf_counter()
        batch = tokenizer(texts[i:i + source.batch_size], return_tensors="pt", padding=True)
        with torch.no_grad():
            hidden = model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)  # padding takes no part in the mean
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)
        vectors += pooled.tolist()
        out.latencies_ms.append((time.perf_counter() - started) * 1e3)
    return vectors


def _vectors(body: object, expected: int, url: str) -> list[list[float]]:
    """The vectors of one /embeddings reply, in input order; a reply of any other shape (not an object, a
    missing or non-numeric `embedding`, vectors of differing lengths, a value that is not finite) is a
    TargetError naming the endpoint, never a crash."""
    not_a_list = TargetError(f"the embeddings endpoint {url} sent a reply that is not an embeddings list")
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        raise not_a_list
    try:
        data = sorted(body["data"], key=lambda d: int(d.get("index", 0)))
        vectors = [[float(x) for x in d["embedding"]] for d in data]
    except (AttributeError, KeyError, TypeError, ValueError, OverflowError):
        raise not_a_list from None
    if len(vectors) != expected:
        raise TargetError(f"the embeddings endpoint {url} returned {len(vectors)} vectors for {expected} texts")
    if len({len(v) for v in vectors}) > 1 or not all(v and all(math.isfinite(x) for x in v) for v in vectors):
        raise TargetError(f"the embeddings endpoint {url} sent empty, unequal or non-finite vectors")
    return vectors


def _key(fingerprint: str, text: str) -> str:
    return hashlib.sha256(f"{fingerprint}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()


def _read_cache(path: Path | None) -> dict[str, list[float]]:
    if path is None or not path.is_file():
        return {}
    known = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
            known[row["key"]] = row["vector"]
        except (ValueError, KeyError, TypeError):  # a torn last line: that text is embedded again
            continue
    return known


def _append_cache(path: Path | None, new: dict[str, list[float]]) -> None:
    if path is None or not new:
        return
    with path.open("a", encoding="utf-8") as f:
        f.writelines(json.dumps({"key": k, "vector": v}) + "\n" for k, v in new.items())


def stored_vectors(texts: list[str], fingerprint: str, cache_path: Path) -> list[list[float]] | None:
    """The vectors a run stored for `texts` under `fingerprint` (its embeddings.jsonl); None when any is missing:
    what a re-judged probe reads instead of asking the embedding model again."""
    known = _read_cache(cache_path)
    keys = [_key(fingerprint, t) for t in texts]
    return [known[k] for k in keys] if all(k in known for k in keys) else None
