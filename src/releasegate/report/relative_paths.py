"""No machine's folders in a report: every path a report holds (the target's files, the rubric a snapshot came
from, the baseline run) is written relative to the run's own places, so report.json, report.md, the HTML page,
the JUnit properties, report.csv and a webhook's summary read the same on any machine and say nothing of the one
that ran them (a home folder, a user name, a CI runner's work tree).

The places, innermost first: the run directory, the reports folder that holds it, the project (the config file's
folder, as run.json records it), the working directory; then the home folder, shown as '~'. A path under none of
them (a model in /models) is kept: it is where the weights are, not where the run was made."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import ReleasegateError
from ..record.records import RunDir

__all__ = ["run_places", "folder_places", "relative_to_places"]


def run_places(run: RunDir) -> list[tuple[str, str]]:
    """(absolute folder, what replaces it with its separator) for the run, innermost (longest) first."""
    try:
        config = run.read_info().config_path
    except ReleasegateError:
        config = None
    return folder_places(run.path, run.path.parent, *([Path(config).parent] if config else []))


def folder_places(*folders: Path) -> list[tuple[str, str]]:
    """`run_places` for these folders (a reports folder, for the trend page), then the working directory and home."""
    places = [(p, "") for p in (*folders, Path.cwd())]
    found = {str(p.resolve()) if p.is_absolute() else str(p.absolute()): shown for p, shown in places}
    for folder, shown in list(found.items()):  # the folder as written too, when it holds a symlink
        found.setdefault(os.path.realpath(folder), shown)
    home = os.path.expanduser("~")
    pairs = sorted(((f, s) for f, s in found.items() if f not in ("/", home)), key=lambda p: -len(p[0]))
    return [(folder + os.sep, shown) for folder, shown in pairs] + ([(home + os.sep, "~" + os.sep)] if home != "/" else [])


_CASE_TEXT = frozenset({"failing_cases"})
"""Keys whose strings are the cases' own text (inputs, outputs): quoted as the model gave them, never rewritten."""


def relative_to_places(value: Any, places: list[tuple[str, str]]) -> Any:
    """`value` (a report as JSON data) with every string's absolute folders of `places` made relative, but the
    cases' own text."""
    if isinstance(value, str):
        for folder, shown in places:
            if folder in value:
                value = value.replace(folder, shown)
        return value
    if isinstance(value, dict):
        return {k: v if k in _CASE_TEXT else relative_to_places(v, places) for k, v in value.items()}
    if isinstance(value, list):
        return [relative_to_places(v, places) for v in value]
    return value
