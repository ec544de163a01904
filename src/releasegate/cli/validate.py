"""`releasegate validate`: lint config, suites and rubric without loading any model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .. import DEFAULT_CONFIG
from ..errors import first_named
from ._common import ConfigOption, JsonOption, SetOption, consoles, print_json, set_values

ProbeOption = Annotated[bool, typer.Option(
    "--probe", help="Also reach every endpoint the config names (target, judge, embeddings): exit 4 with one line "
                    "naming the one that fails and why.")]


def validate(config: ConfigOption = Path(DEFAULT_CONFIG), sets: SetOption = None, as_json: JsonOption = False,
             probe: ProbeOption = False) -> int:
    """Check config, suites and rubric (schemas, paths, regexes, metric names). Fast: no model is loaded.
    With --probe, also reach every endpoint the config names, each within seconds."""
    from rich.table import Table

    from ..inputs.judging_keys import effective_sha256_of
    from ..inputs.validation import input_summary, load_inputs
    from ..pipeline.input_summary import Reached, Summary
    from ..run.manifest import case_digests

    cfg, rubric, per_suite = load_inputs(config, keep=False, overrides=set_values(sets))
    summary = Summary.model_validate(input_summary(cfg, rubric, per_suite))
    # what a deploy pins (verify-attestation --rubric-sha256): the rubric, the config's judging keys, the cases' files
    summary.effective_rubric_sha256 = effective_sha256_of(cfg, rubric, case_digests(cfg))
    if probe:
        from ..pipeline.endpoints import reach_endpoints

        reached = reach_endpoints(cfg)
        summary.endpoints = [Reached(name=r.name, where=r.where, seconds=r.seconds) for r in reached]
        summary.warnings += [w for r in reached for w in r.warnings]
    if as_json:
        print_json(summary.model_dump(exclude_unset=True))
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
    console.print(f"target: {summary.target}\nrubric: {rubric.path} ({len(rubric.criteria)} criteria, "
                  f"{len(rubric.forbidden)} forbidden rules)\neffective rubric sha256: "
                  f"{summary.effective_rubric_sha256}", markup=False)
    if summary.judging_overrides:
        console.print("overrides of judging keys (a run of them is not releasable unless the rubric allows them by "
                      "name): " + ", ".join(summary.judging_overrides), markup=False, soft_wrap=True)
    if cfg.judge is not None:
        console.print(f"judge: {summary.judge} ({len(cfg.judge.criteria)} named criteria)", markup=False)
    for r in summary.endpoints:
        console.print(f"reached {r.name}: {r.where} in {r.seconds:.2f} s", markup=False, soft_wrap=True)
    for line in first_named(summary.warnings, "warning(s)"):
        console.print(f"warning: {line}", markup=False, soft_wrap=True)
    return 0
