"""The cache sections of a config: the response cache (`cache:`) and the prefix-cache probe (`prefix_cache:`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from .backend_facts import capabilities
from .files import read_text, resolve_under

__all__ = ["CacheConfig", "PrefixCacheConfig", "parse_cache", "parse_prefix_cache", "DEFAULT_CACHE"]

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


def parse_cache(raw: dict | None, here: Path) -> CacheConfig | None:
    """The `cache:` section; None (no response cache) when the config has none."""
    if raw is None:
        return None
    return CacheConfig(path=resolve_under(here, raw.get("path", DEFAULT_CACHE)), ttl_s=raw.get("ttl_s"))


def parse_prefix_cache(raw: dict | None, target: dict, here: Path, at) -> PrefixCacheConfig | None:
    """The `prefix_cache:` section, its system prompt read; None (not measured) when the config has none."""
    if raw is None:
        return None
    if not capabilities(target["backend"]).prefix_cache_probe:
        raise InputError("the prefix-cache probe measures a server: it needs the openai backend",
                         **at("prefix_cache"), hint="remove prefix_cache: or serve the model")
    if ("system" in raw) == ("system_file" in raw):
        raise InputError("prefix_cache needs one of system (the text) or system_file (a path)", **at("prefix_cache"))
    system = raw.get("system")
    if system is None:
        system = read_text(resolve_under(here, raw["system_file"]), what="system prompt")
    return PrefixCacheConfig(system=system, requests=raw.get("requests", 16))
