"""`releasegate validate`: lint config, suites and rubric without loading any model."""

from __future__ import annotations

from pathlib import Path

from .. import DEFAULT_CONFIG
from ._common import ConfigOption, JsonOption, SetOption, consoles, print_json, set_values


def validate(config: ConfigOption = Path(DEFAULT_CONFIG), sets: SetOption = None, as_json: JsonOption = False) -> int:
    """Check config, suites and rubric (schemas, paths, regexes, metric names). Fast: no model is loaded."""
    from rich.table import Table

    from ..inputs.validation import input_summary, load_inputs

    cfg, rubric, per_suite = load_inputs(config, keep=False, overrides=set_values(sets))
    summary = input_summary(cfg, rubric, per_suite)
    if as_json:
        print_json(summary)
        return 0
    console = consoles(False)
    console.print(f"{cfg.path}: valid", markup=False, soft_wrap=True)
    if cfg.extends or cfg.overrides:
        console.print("composed: " + "; ".join(cfg.composition_lines()), markup=False, soft_wrap=True)
    table = Table()
    table.add_column("suite")
    table.add_column("cases", justify="right")
    for name, n in per_suite.items():
        table.add_row(name, str(n))
    console.print(table)
    console.print(f"target: {summary['target']}\nrubric: {rubric.path} ({len(rubric.criteria)} criteria, "
                  f"{len(rubric.forbidden)} forbidden rules)", markup=False)
    if cfg.judge is not None:
        console.print(f"judge: {summary['judge']} ({len(cfg.judge.criteria)} named criteria)", markup=False)
    for line in summary["warnings"]:
        console.print(f"warning: {line}", markup=False, soft_wrap=True)
    return 0
