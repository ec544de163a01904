"""Embeddings for the response-cache probe, from a real component: an OpenAI-compatible `/v1/embeddings`
endpoint (llama.cpp with its embeddings option, vLLM, TGI, OpenAI) or a local transformers model (the last
hidden states, mean-pooled over the text's tokens).

Vectors are kept per (text, model fingerprint) in a JSON-lines file of the run directory, so that a second
probe of the same texts by the same model asks nothing. The fingerprint of an endpoint is its URL and model
name; of a local model, a hash of its config and weight files. What was asked (texts, seconds, tokens the
endpoint reported) is returned with the vectors: the embedding cost and latency a semantic cache adds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..border.env import env_secret
from ..border.files import append_regular, open_regular, regular_entries, sha256_file
from ..border.http import HttpError, Limits, post_json
from ..border.json_reader import NotJson, count, finite_float, read_json
from ..border.limits import DEFAULT_MAX_BYTES, endpoint_url
from ..errors import InputError, TargetError
from ..inputs.cache_config import EmbeddingSource
from ..redaction import mask_url, secret_from_env

__all__ = ["Embedded", "embed", "source_fingerprint", "EMBEDDINGS_FILE", "stored_vectors", "probe_embeddings"]

EMBEDDINGS_FILE = "embeddings.jsonl"
"""The run directory's embedding cache: one {key, vector} per line."""
READ_TIMEOUT_S = 20.0
"""Seconds the endpoint may stay silent within one request (`timeout_s` bounds the request as a whole)."""
BYTES_PER_TEXT = 512 * 1024
"""Bytes of reply allowed per text, above the border's 16 MiB: a vector of 8,192 dimensions written as JSON
floats takes about 200 KB, so a batch of large vectors is never refused, and a reply without end always is."""
CACHE_FILE_MAX = 64 * 1024**3
"""Bytes the run's embeddings cache may hold before it is not read at all (every text embedded again)."""
CACHE_LINE_MAX = 4 * 1024 * 1024
"""Bytes one embeddings.jsonl row may hold; a longer one is ignored (that text is embedded again)."""


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
    out = Embedded(vectors=[], fingerprint=fingerprint)
    todo = sorted({t for t, k in zip(texts, keys) if k not in known})
    if todo:
        new = _compute(todo, source, out, fingerprint)
        dimension = len(next(iter(new.values())))
        known.update(new)
        # a cached vector of another dimension than the model's now (an edited cache): embedded again
        stale = sorted({t for t, k in zip(texts, keys) if len(known[k]) != dimension})
        if stale:
            again = _compute(stale, source, out, fingerprint)
            known.update(again)
            new.update(again)
        _append_cache(cache_path, new)
    out.vectors = [known[k] for k in keys]
    return out


def _compute(texts: list[str], source: EmbeddingSource, out: Embedded, fingerprint: str) -> dict[str, list[float]]:
    """Vectors for `texts` by key, from the endpoint or the local model; their count and time added to `out`."""
    started = time.perf_counter()
    vectors = _endpoint(texts, source, out) if source.local is None else _local(texts, source, out)
    out.seconds += time.perf_counter() - started
    out.computed += len(texts)
    return {_key(fingerprint, t): v for t, v in zip(texts, vectors)}


def source_fingerprint(source: EmbeddingSource) -> str:
    """What the vectors depend on: the endpoint's URL and model, or the local model's files."""
    digest = hashlib.sha256()
    if source.local is None:
        # the URL as shown (userinfo and secret query values masked): no credential hashed into run.json
        digest.update(f"endpoint\0{(mask_url(source.base_url) or '').rstrip('/')}\0{source.model}".encode())
    else:
        for path in regular_entries(Path(source.local), what="embedding model", suffixes=(".json", ".safetensors", ".bin")):
            digest.update(path.name.encode() + b"\0" + sha256_file(path).encode())
    return digest.hexdigest()[:16]


PROBE_DEADLINE_S = 15.0
"""Seconds `probe_embeddings` gives the endpoint for one short text (or `timeout_s`, if shorter)."""


def probe_embeddings(source: EmbeddingSource) -> None:
    """Embed one short text, as a run would (`validate --probe`): a TargetError naming the endpoint and why, in
    seconds, when it cannot (unreachable, a server started without its embeddings option, a reply of another
    shape). A local model is not loaded here."""
    if source.local is None:
        deadline = min(source.timeout_s, PROBE_DEADLINE_S)
        _endpoint(["releasegate probe"], dataclasses.replace(source, timeout_s=deadline), Embedded([], ""))


def _endpoint(texts: list[str], source: EmbeddingSource, out: Embedded) -> list[list[float]]:
    """The vectors of `texts` from the endpoint, a request per batch, each read through the border's HTTP reader
    within `source.timeout_s`; a request that fails or a reply of another shape is a TargetError naming the
    endpoint (its URL masked) and why."""
    secret_from_env(source.api_key_env)
    field = "response_cache_probe.embeddings.api_key_env"
    key = env_secret(source.api_key_env, field=field) if source.api_key_env else None
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    url = endpoint_url(source.base_url or "", "/embeddings")
    where = mask_url(url) or url
    vectors: list[list[float]] = []
    tokens: int | None = 0
    for i in range(0, len(texts), source.batch_size):
        batch = texts[i:i + source.batch_size]
        limits = Limits(deadline_s=source.timeout_s, read_timeout_s=min(READ_TIMEOUT_S, source.timeout_s),
                        max_bytes=max(DEFAULT_MAX_BYTES, len(batch) * BYTES_PER_TEXT))
        try:
            body, reply = post_json(url, {"model": source.model, "input": batch}, headers=headers, limits=limits)
        except HttpError as exc:
            raise TargetError(f"the embeddings endpoint {where} failed: {exc.detail} ({exc.kind})") from None
        out.latencies_ms.append(reply.seconds * 1e3)
        got = _vectors(body, len(batch), where, distinct=len({" ".join(t.casefold().split()) for t in batch}))
        if vectors and len(got[0]) != len(vectors[0]):
            raise TargetError(f"the embeddings endpoint {where} sent vectors of {len(got[0])} dimensions after "
                              f"vectors of {len(vectors[0])}")
        vectors += got
        used = _usage(body, batch)
        tokens = tokens + used if tokens is not None and used is not None else None
    if not out.computed:  # the first round; a second (stale cached vectors) adds to it
        out.tokens = tokens
    else:
        out.tokens = out.tokens + tokens if out.tokens is not None and tokens is not None else None
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
    except (OSError, ValueError, RuntimeError) as exc:  # RuntimeError: weights of another shape than its config
        said = " ".join(str(exc).split())[:300]
        raise TargetError(f"the embedding model {source.local} could not be loaded: {said} (give a model directory "
                          "whose weights and config.json come from one save_pretrained)") from None
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


def _vectors(body: object, expected: int, where: str, distinct: int = 0) -> list[list[float]]:
    """The vectors of one /embeddings reply, in input order. Anything but `expected` vectors of finite numbers,
    all of one dimension, one per input (indexes 0..expected-1, each once, or none at all: the reply's order) is
    a TargetError naming the endpoint, never a crash: strings, booleans, nulls, NaN or Infinity, vectors of
    differing lengths, a repeated or missing index. So is a zero vector (no direction: no similarity can be
    taken from it) and one vector for every text of a batch of at least 3 texts that differ beyond case and
    spacing (`distinct` of them: a server answering a constant; an uncased model may well give two such texts
    one vector)."""
    not_a_list = TargetError(f"the embeddings endpoint {where} sent a reply that is not an embeddings list")
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        raise not_a_list
    if len(data) != expected:
        raise TargetError(f"the embeddings endpoint {where} returned {len(data)} vectors for {expected} texts")
    indexes = [d.get("index") for d in data]
    if all(i is None for i in indexes):
        indexes = list(range(expected))
    if sorted(i if count(i) is not None else -1 for i in indexes) != list(range(expected)):
        raise TargetError(f"the embeddings endpoint {where} sent indexes that are not each of 0..{expected - 1} once")
    vectors: list[list[float]] = [[] for _ in range(expected)]
    for index, d in zip(indexes, data):
        vector = _vector(d.get("embedding"))
        if vector is None:
            raise not_a_list
        vectors[index] = vector
    if len({len(v) for v in vectors}) > 1:
        raise TargetError(f"the embeddings endpoint {where} sent vectors of differing dimensions")
    if any(not any(v) for v in vectors):
        raise TargetError(f"the embeddings endpoint {where} sent a zero vector (it has no direction to compare)")
    if distinct >= 3 and all(v == vectors[0] for v in vectors):
        raise TargetError(f"the embeddings endpoint {where} sent one vector for {distinct} different texts")
    return vectors


def _vector(value: object) -> list[float] | None:
    """A non-empty list of finite numbers as floats (no boolean, string or null among them); else None."""
    if not isinstance(value, list) or not value:
        return None
    numbers = [finite_float(x) for x in value]
    return None if any(x is None for x in numbers) else numbers  # type: ignore[return-value]


def _usage(body: dict[str, Any], batch: list[str]) -> int | None:
    """The prompt tokens a reply reports for `batch`; None (not reported) unless a whole number from 1 to what
    the texts could hold (one token per byte, and 16 special tokens per text)."""
    usage = body.get("usage")
    used = count(usage.get("prompt_tokens") if isinstance(usage, dict) else None,
                 at_most=sum(len(t.encode("utf-8", "surrogatepass")) for t in batch) + 16 * len(batch))
    return used if used else None


def _key(fingerprint: str, text: str) -> str:
    return hashlib.sha256(f"{fingerprint}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()


def _read_cache(path: Path | None) -> dict[str, list[float]]:
    """The cached vectors by key. A row that is not {key, vector} with a non-zero vector of finite numbers (a torn
    last line, an edited row) is ignored, and so is every row whose vector's dimension is not the one most rows
    have: those texts are embedded again."""
    if path is None or not path.is_file():
        return {}
    known: dict[str, list[float]] = {}
    try:
        lines_file = open_regular(path, what="embeddings cache", max_bytes=CACHE_FILE_MAX)
    except InputError:  # a FIFO or a device in its place: every text is embedded again
        return {}
    with lines_file as lines:
        while line := lines.readline(CACHE_LINE_MAX + 1):
            if len(line) > CACHE_LINE_MAX:  # never held whole: the rest of the row is skipped
                while not line.endswith(b"\n") and (line := lines.readline(CACHE_LINE_MAX)):
                    pass
                continue
            try:
                row = read_json(line, max_bytes=CACHE_LINE_MAX, max_depth=4, what="cache row")
            except NotJson:
                continue
            vector = _vector(row.get("vector")) if isinstance(row, dict) else None
            if isinstance(row.get("key") if isinstance(row, dict) else None, str) and vector and any(vector):
                known[row["key"]] = vector
    dimensions = Counter(len(v) for v in known.values())
    if len(dimensions) > 1:
        common = dimensions.most_common(1)[0][0]
        known = {k: v for k, v in known.items() if len(v) == common}
    return known


def _append_cache(path: Path | None, new: dict[str, list[float]]) -> None:
    if path is None or not new:
        return
    try:  # a cache that cannot take the vectors (a FIFO in its place) costs only their computing again
        append_regular(path, "".join(json.dumps({"key": k, "vector": v}) + "\n" for k, v in new.items()),
                       what="embeddings cache")
    except InputError:
        return


def stored_vectors(texts: list[str], fingerprint: str, cache_path: Path) -> list[list[float]] | None:
    """The vectors a run stored for `texts` under `fingerprint` (its embeddings.jsonl); None when any is missing:
    what a re-judged probe reads instead of asking the embedding model again."""
    known = _read_cache(cache_path)
    keys = [_key(fingerprint, t) for t in texts]
    return [known[k] for k in keys] if all(k in known for k in keys) else None
