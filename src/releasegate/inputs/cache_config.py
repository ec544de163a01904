"""The cache sections of a config: the response cache (`cache:`), the prefix-cache probe (`prefix_cache:`) and
the response-cache probe (`response_cache_probe:`, a cache in front of the deployed model, simulated)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field

from ..border.http import url_problem
from ..data_classes import dataclass
from ..errors import InputError
from ..model_base import Model
from ..redaction import mask_url
from .backend_facts import capabilities
from .files import KeyAt, named_file, read_text, resolve_under
from .read_doc import read_doc

__all__ = ["CacheConfig", "PrefixCacheConfig", "parse_cache", "parse_prefix_cache", "DEFAULT_CACHE", "EmbeddingSource",
           "ResponseCacheProbeConfig", "parse_response_cache_probe"]

DEFAULT_CACHE = ".releasegate/cache.sqlite"
"""Where `cache: {}` keeps responses, relative to the config."""


@dataclass(frozen=True)
class CacheConfig:
    """The response cache (off unless the config has a `cache:` section): a SQLite file, optional TTL."""

    path: Path
    ttl_s: float | None = None


@dataclass(frozen=True)
class PrefixCacheConfig:
    """`prefix_cache`: TTFT of requests sharing a long system prompt, with the server's prefix cache warm and cold."""

    system: str
    """The shared system prompt (`system`, or the text of `system_file`)."""
    requests: int = 16
    """Measured pairs: each case's question once after the same prompt (warm) and once after a new one (cold)."""


Number = int | float
"""A number as written (an int stays an int in what is recorded)."""


class _Doc(Model):
    model_config = ConfigDict(frozen=True, extra="allow")


class CacheDoc(_Doc):
    path: str = DEFAULT_CACHE
    ttl_s: Number | None = None


class PrefixCacheDoc(_Doc):
    system: str | None = None
    system_file: str | None = None
    requests: int = 16


class EmbeddingsDoc(_Doc):
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    local: str | None = None
    threads: int = 1
    batch_size: int = 16
    timeout_s: Number = 60.0


class ResponseCacheProbeDoc(_Doc):
    mode: str = "semantic"
    threshold: Number | None = None
    thresholds: list[Number] = Field(default_factory=list)
    embeddings: EmbeddingsDoc | None = None
    ttl_s: Number | None = None
    arrival_interval_s: Number = 1.0
    group_tag: str | None = None
    time_sensitive_tag: str | None = None
    time_sensitive_max_age_s: Number = 0.0


class BackendDoc(_Doc):
    backend: str


def parse_cache(raw: dict[str, Any] | None, here: Path) -> CacheConfig | None:
    """The `cache:` section; None (no response cache) when the config has none."""
    if raw is None:
        return None
    doc = read_doc(CacheDoc, raw, None)
    return CacheConfig(path=resolve_under(here, doc.path), ttl_s=doc.ttl_s)


def parse_prefix_cache(raw: dict[str, Any] | None, target: dict[str, Any], here: Path, at: KeyAt) -> PrefixCacheConfig | None:
    """The `prefix_cache:` section, its system prompt read; None (not measured) when the config has none."""
    if raw is None:
        return None
    if not capabilities(read_doc(BackendDoc, target, None).backend).prefix_cache_probe:
        raise InputError("the prefix-cache probe measures a server: it needs the openai backend",
                         **at("prefix_cache"), hint="remove prefix_cache: or serve the model")
    if ("system" in raw) == ("system_file" in raw):
        raise InputError("prefix_cache needs one of system (the text) or system_file (a path)", **at("prefix_cache"))
    doc = read_doc(PrefixCacheDoc, raw, None)
    system = doc.system
    if system is None:
        where = at("prefix_cache", "system_file")
        system = read_text(named_file(resolve_under(here, str(doc.system_file)), what="system prompt", where=where,
                                      base=here), what="system prompt")
    return PrefixCacheConfig(system=system, requests=doc.requests)


@dataclass(frozen=True)
class EmbeddingSource:
    """Where the response-cache probe's embeddings come from: an OpenAI-compatible endpoint or a local model."""

    base_url: str | None = None
    """An OpenAI-compatible API root (`.../v1`): its `/embeddings` is asked."""
    model: str | None = None
    """The endpoint's model name."""
    api_key_env: str | None = None
    """The environment variable holding the endpoint's API key; None: no key sent."""
    local: Path | None = None
    """A local transformers model directory: mean-pooled last hidden states."""
    threads: int = 1
    """torch threads for the local model."""
    batch_size: int = 16
    """Texts per request or forward pass."""
    timeout_s: float = 60.0
    """Seconds one /embeddings request may take, connect to last byte (`border.http.Limits.deadline_s`)."""

    def describe(self) -> str:
        """What makes the embeddings, for the reports (never a credential)."""
        return f"local model {self.local}" if self.local is not None else f"{self.model} at {mask_url(self.base_url)}"


@dataclass(frozen=True)
class ResponseCacheProbeConfig:
    """`response_cache_probe`: a cache in front of the deployed model (exact or semantic), simulated on the
    suite's own answers (`releasegate.gate.cache_probe`)."""

    mode: str = "semantic"
    """`exact` (normalised text) or `semantic` (embedding similarity)."""
    threshold: float | None = None
    """The similarity the deployment would use (semantic): the gate's `cache_*` metrics are taken there."""
    thresholds: tuple[float, ...] = ()
    """Every similarity threshold simulated (the curve), `threshold` among them."""
    ttl_s: float | None = None
    """The cache's TTL: an older entry serves nothing; None: entries never expire."""
    arrival_interval_s: float = 1.0
    """Seconds between two cases arriving, in suite order."""
    group_tag: str | None = None
    """The case tag naming its paraphrase group."""
    time_sensitive_tag: str | None = None
    """The case tag marking a time-sensitive case (prices, policies)."""
    time_sensitive_max_age_s: float = 0.0
    """The oldest answer a time-sensitive case may be served without a warning."""
    embeddings: EmbeddingSource | None = None
    """Where embeddings come from (semantic mode)."""


def parse_response_cache_probe(raw: dict[str, Any] | None, here: Path, at: KeyAt) -> ResponseCacheProbeConfig | None:
    """The `response_cache_probe:` section; None (not simulated) when the config has none."""
    if raw is None:
        return None
    doc = read_doc(ResponseCacheProbeDoc, raw, None)
    mode, threshold = doc.mode, doc.threshold
    if mode == "semantic" and threshold is None:
        raise InputError("semantic mode needs a threshold", **at("response_cache_probe", "threshold"),
                         hint="e.g. threshold: 0.95, or mode: exact")
    embeddings = doc.embeddings
    if mode == "semantic" and embeddings is None:
        raise InputError("semantic mode needs embeddings", **at("response_cache_probe", "embeddings"),
                         hint="embeddings: {base_url: ..., model: ...} or {local: a model directory}")
    thresholds = tuple(sorted({*doc.thresholds, *([threshold] if threshold is not None else [])}))
    return ResponseCacheProbeConfig(
        mode=mode, threshold=threshold, thresholds=thresholds if mode == "semantic" else (),
        ttl_s=doc.ttl_s, arrival_interval_s=doc.arrival_interval_s,
        group_tag=doc.group_tag, time_sensitive_tag=doc.time_sensitive_tag,
        time_sensitive_max_age_s=doc.time_sensitive_max_age_s,
        embeddings=_embeddings(embeddings, here, at) if mode == "semantic" and embeddings is not None else None,
    )


def _embeddings(raw: EmbeddingsDoc, here: Path, at: KeyAt) -> EmbeddingSource:
    given = raw.model_fields_set
    if ("local" in given) == ("base_url" in given):
        raise InputError("embeddings needs one of base_url (an endpoint) or local (a model directory)",
                         **at("response_cache_probe", "embeddings"))
    if raw.base_url is not None and (problem := url_problem(raw.base_url)) is not None:
        raise InputError(f"embeddings.base_url is {problem}", **at("response_cache_probe", "embeddings", "base_url"),
                         hint="write it as http(s)://host[:port]/v1")
    if "base_url" in given and not raw.model:
        raise InputError("an embeddings endpoint needs its model", **at("response_cache_probe", "embeddings", "model"))
    local = resolve_under(here, raw.local) if raw.local is not None else None
    return EmbeddingSource(base_url=raw.base_url, model=raw.model, api_key_env=raw.api_key_env, local=local,
                           threads=raw.threads, batch_size=raw.batch_size, timeout_s=raw.timeout_s)
