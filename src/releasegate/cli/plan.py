"""`releasegate plan -c CONFIG`: what a check will ask and spend, before the first request."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .. import DEFAULT_CONFIG
from ..errors import InputError
from ._common import ConfigOption, JsonOption, SetOption, consoles, print_json, set_values


def plan(
    config: ConfigOption = Path(DEFAULT_CONFIG),
    budget_usd: Annotated[
        Optional[float], typer.Option("--budget-usd", metavar="USD", help="Warn when the plan's spend may exceed it.")
    ] = None,
    sets: SetOption = None,
    as_json: JsonOption = False,
) -> int:
    """Count what `check -c CONFIG` will ask: cases, draws, requests, judge and guard calls, tokens, spend and wall
    time. Tokens and wall time come from the newest complete run of the same target in the config's reports
    folder; without one, tokens are the worst case (every answer max_new_tokens long) and the wall time unknown.
    Loads no model and sends nothing. Exit 0, or 2 for a bad config."""
    from ..pipeline.plan import plan_check

    if budget_usd is not None and not (budget_usd >= 0 and budget_usd < float("inf")):
        raise InputError(f"--budget-usd must be a number of dollars, got {budget_usd}")
    result = plan_check(config, overrides=set_values(sets), budget_usd=budget_usd)
    if as_json:
        print_json(result.as_dict())
        return 0
    console = consoles(as_json)
    spend = result.spend_usd
    rows = [
        ("cases", f"{result.cases}"), ("draws", f"{result.draws}"), ("requests", f"{result.requests}"),
        ("judge calls", f"{result.judge_calls}"), ("guard calls", f"{result.guard_calls}"),
        ("tokens", f"{result.input_tokens} in, {result.output_tokens} out ({result.tokens_from})"),
        ("generation", "unknown (no run of this target yet)" if result.wall_s is None else f"{result.wall_s:.0f} s"),
        ("spend", ", ".join(f"{part} {_usd(value)}" for part, value in spend.items())),
    ]
    for label, value in rows:
        console.print(f"{label:<12} {value}", markup=False, soft_wrap=True)
    for line in result.warnings:
        console.print(f"warning: {line}", markup=False, soft_wrap=True)
    return 0


def _usd(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4g}"
