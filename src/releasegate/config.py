"""The run configuration (`releasegate.yaml`): what to run, on which suites, judged by which rubric.

Paths in a config are relative to the config file's directory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._loading import field_path, line_of, load_yaml, validate
from .errors import InputError

__all__ = ["Config", "TargetConfig", "SuiteConfig", "CostConfig", "load_config", "DEFAULT_CONFIG"]

DEFAULT_CONFIG = "releasegate.yaml"
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass(frozen=True)
class TargetConfig:
    """The model under test and how to run it."""

    backend: str
    base: str | None = None
    adapter: Path | None = None
    merge: bool = False
    dtype: str = "float32"
    threads: int = 1
    batch_size: int = 8
    device: str = "cpu"
    responses: Path | None = None

    def describe(self) -> str:
        if self.backend == "replay":
            return f"replay of {self.responses}"
        text = f"hf {self.base}"
        if self.adapter:
            text += f" + adapter {self.adapter}" + (" (merged)" if self.merge else "")
        return text


@dataclass(frozen=True)
class SuiteConfig:
    """One validation suite and the scoring it uses unless a case overrides it."""

    path: Path
    name: str
    limit: int | None = None
    answer: dict | None = None
    format: tuple[dict, ...] = ()


@dataclass(frozen=True)
class CostConfig:
    """How cost per token is priced: self-hosted hourly price or an API price table."""

    mode: str
    hourly_usd: float | None = None
    input_usd_per_1m: float | None = None
    output_usd_per_1m: float | None = None


@dataclass(frozen=True)
class Config:
    """A validated, path-resolved `releasegate.yaml`."""

    path: Path
    raw: dict
    target: TargetConfig
    suites: tuple[SuiteConfig, ...]
    rubric: Path
    max_new_tokens: int = 64
    cost: CostConfig | None = None
    output_dir: Path = field(default_factory=lambda: Path("reports"))
    run_id: str | None = None
    seed: int = 0


def load_config(path: Path) -> Config:
    """Load, validate and resolve a config file; raise InputError naming file, line and field."""
    path = Path(path)
    data, node = load_yaml(path, what="config")
    if not isinstance(data, dict):
        raise InputError("a config must be a mapping of keys (target, suites, rubric, ...)", file=path, line=1)
    validate(data, "config", file=path, node=node)
    here = path.parent

    def at(*parts: str | int) -> dict:
        return {"file": path, "line": line_of(node, list(parts)), "field": field_path(list(parts))}

    target = _target(data["target"], here, at)
    suites = tuple(_suite(s, here) for s in data["suites"])
    _unique_names(suites, at)
    output = data.get("output", {})
    return Config(
        path=path,
        raw=data,
        target=target,
        suites=suites,
        rubric=here / data["rubric"],
        max_new_tokens=data.get("generation", {}).get("max_new_tokens", 64),
        cost=_cost(data.get("cost"), here, at),
        output_dir=here / output.get("dir", "reports"),
        run_id=output.get("run_id"),
        seed=data.get("seed", 0),
    )


def _target(raw: dict, here: Path, at) -> TargetConfig:
    base = raw.get("base")
    if base is not None:
        local = here / base
        if local.exists():
            base = str(local)
        elif not _HUB_ID.match(base):
            raise InputError(f"base model '{base}' is neither a directory nor a hub id", **at("target", "base"))
    adapter = here / raw["adapter"] if raw.get("adapter") else None
    if adapter is not None and not (adapter / "adapter_config.json").exists():
        raise InputError(
            f"no adapter_config.json in {adapter}", **at("target", "adapter"), hint="point at a peft adapter directory"
        )
    if raw.get("merge") and adapter is None:
        raise InputError("merge: true needs an adapter", **at("target", "merge"))
    responses = here / raw["responses"] if raw.get("responses") else None
    keys = ("backend", "merge", "dtype", "threads", "batch_size", "device")
    return TargetConfig(**{k: raw[k] for k in keys if k in raw}, base=base, adapter=adapter, responses=responses)


def _suite(raw: dict, here: Path) -> SuiteConfig:
    path = here / raw["path"]
    return SuiteConfig(
        path=path,
        name=raw.get("name", path.stem),
        limit=raw.get("limit"),
        answer=raw.get("answer"),
        format=tuple(raw.get("format", ())),
    )


def _unique_names(suites: tuple[SuiteConfig, ...], at) -> None:
    seen: set[str] = set()
    for i, suite in enumerate(suites):
        if suite.name in seen:
            raise InputError(
                f"two suites are named '{suite.name}'", **at("suites", i), hint="give each a distinct name"
            )
        seen.add(suite.name)


def _cost(raw: dict | None, here: Path, at) -> CostConfig | None:
    if raw is None:
        return None
    if raw["mode"] == "self_hosted":
        return CostConfig(mode="self_hosted", hourly_usd=raw["hourly_usd"])
    prices: dict[str, Any] = {k: raw[k] for k in ("input_usd_per_1m", "output_usd_per_1m") if k in raw}
    if "price_table" in raw:
        prices = _price_row(here / raw["price_table"], raw.get("price_model"), at)
    missing = [k for k in ("input_usd_per_1m", "output_usd_per_1m") if k not in prices]
    if missing:
        raise InputError(
            "api cost needs input and output prices", **at("cost", missing[0]),
            hint="set both prices or a price_table with price_model",
        )
    return CostConfig(mode="api", **prices)


def _price_row(table: Path, model: str | None, at) -> dict:
    """A price table is YAML: {model-name: {input_usd_per_1m: x, output_usd_per_1m: y}}."""
    if model is None:
        raise InputError("price_table needs price_model", **at("cost", "price_model"))
    data, _ = load_yaml(table, what="price table")
    row = data.get(model) if isinstance(data, dict) else None
    if not isinstance(row, dict) or not all(isinstance(row.get(k), (int, float)) for k in ("input_usd_per_1m", "output_usd_per_1m")):
        raise InputError(
            f"no prices for '{model}'", file=table, hint="add {model: {input_usd_per_1m: N, output_usd_per_1m: N}}"
        )
    return {k: float(row[k]) for k in ("input_usd_per_1m", "output_usd_per_1m")}
