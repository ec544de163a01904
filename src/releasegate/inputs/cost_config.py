"""The `cost:` section of a config: a self-hosted hourly price, or API prices given inline or by a price table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..data_classes import dataclass
from ..errors import InputError
from .files import KeyAt, load_yaml, named_file, resolve_under

__all__ = ["CostConfig", "parse_cost"]


@dataclass(frozen=True)
class CostConfig:
    """How cost per token is priced: self-hosted hourly price or an API price table."""

    mode: str
    hourly_usd: float | None = None
    input_usd_per_1m: float | None = None
    output_usd_per_1m: float | None = None


def parse_cost(raw: dict[str, Any] | None, here: Path, at: KeyAt) -> CostConfig | None:
    """The `cost:` section, a price table's row read; None (not priced) when the config has none."""
    if raw is None:
        return None
    if raw["mode"] == "self_hosted":
        return CostConfig(mode="self_hosted", hourly_usd=raw["hourly_usd"])
    prices: dict[str, Any] = {k: raw[k] for k in ("input_usd_per_1m", "output_usd_per_1m") if k in raw}
    if "price_table" in raw:
        table = named_file(resolve_under(here, raw["price_table"]), what="price table", where=at("cost", "price_table"),
                           base=here)
        prices = _price_row(table, raw.get("price_model"), at)
    missing = [k for k in ("input_usd_per_1m", "output_usd_per_1m") if k not in prices]
    if missing:
        raise InputError(
            "api cost needs input and output prices", **at("cost", missing[0]),
            hint="set both prices or a price_table with price_model",
        )
    return CostConfig(mode="api", **prices)


def _price_row(table: Path, model: str | None, at: KeyAt) -> dict[str, Any]:
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
