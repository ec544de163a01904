"""`releasegate verify RUN_DIR`: re-hash a run's inputs and own files and say what changed since it ran."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._common import JsonOption, consoles, print_json


def verify(
    run_dir: Annotated[Path, typer.Argument(help="A run directory, e.g. reports/<run-id>.")],
    as_json: JsonOption = False,
) -> int:
    """Re-hash every input in the run's manifest.json (config, suites, rubric, model, adapter, tokenizer, chat
    template...), compare package versions, and check the run's own files (records, judgments, reviews, rubric and
    config snapshots, run.json, report.json) against their seal. Exit 0: nothing changed and everything was
    checked; 1: something changed, or a run file was edited since releasegate sealed it; 3: nothing that could be
    checked changed, but some inputs could not be verified (a hub id that was not on disk, the model behind an
    endpoint, a run no stage sealed); 2: not a run."""
    from ..decision.verdicts import verify_exit
    from ..pipeline.verify import verification
    from ..report.verify import changes_table, seal_notes, verify_summary

    result = verification(run_dir)
    if as_json:
        print_json(result.model_dump(exclude={"manifest"}))
    console = consoles(as_json)
    if result.changes:
        console.print(changes_table(result.manifest, result.changes))
    for line in seal_notes(result.changes):
        console.print(line, markup=False, soft_wrap=True)
    console.print(verify_summary(result.model_dump()), markup=False, soft_wrap=True)
    for path in result.not_hashed:
        console.print(f"could not be verified: {path}", markup=False, soft_wrap=True)
    if result.outcome == "unverified":
        console.print("outcome: unverified (nothing checked changed, but not every input could be checked)",
                      markup=False, soft_wrap=True)
    return verify_exit(result.outcome)
