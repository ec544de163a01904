"""`releasegate validate`: lint config, suites and rubric without loading any model."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from .. import DEFAULT_CONFIG
from ..errors import InputError
from ._common import ConfigOption, JsonOption, consoles, print_json


def load_inputs(config_path: Path, *, limit: int | None = None):
    """Config, rubric and cases, each validated; raises InputError at the first problem.

    `limit` (`check --limit N`): only the first N cases over the suites in config order, the same cases as
    `load_inputs(...)[2][:N]`, and only the suite lines up to them are read (see `load_suites`). The completion-mode
    check is then about the cases that run; a slice is still refused only if no case of the suites has it (the
    rest of the suites is scanned for its tags, unvalidated, when the cases that run do not have it)."""
    from ..config import load_config
    from ..rubric import load_rubric
    from ..suites import load_suites, suite_tags

    config = load_config(config_path)
    rubric = load_rubric(config.rubric)
    cases = load_suites(config.suites, config.path.parent, limit=limit)
    _check_mode(config, cases)
    _check_slices(rubric, cases, beyond=(lambda: suite_tags(config.suites)) if limit else None)
    return config, rubric, cases


def _check_slices(rubric, cases, beyond=None) -> None:
    """A slice that matches no case decides nothing: a typo in it would silently drop a criterion or the review
    requirement of a high-risk slice, so it is an input error. `beyond`: for a limited load, (suite, tags) of
    every line of the suites, where a slice the loaded cases lack is looked for before it is refused."""
    def matches(slice_: dict, tagged) -> bool:
        return any(all(str(suite if k == "suite" else tags.get(k)) == str(v) for k, v in slice_.items())
                   for suite, tags in tagged)

    named = [(f"criteria[{i}].slice", c.slice) for i, c in enumerate(rubric.criteria) if c.slice]
    named += [(f"review.required_slices[{i}]", s) for i, s in enumerate(rubric.review.required_slices)]
    missing = [(where, slice_) for where, slice_ in named if not matches(slice_, ((c.suite, c.tags) for c in cases))]
    if missing and beyond is not None:
        for suite, tags in beyond():
            missing = [(where, slice_) for where, slice_ in missing if not matches(slice_, [(suite, tags)])]
            if not missing:
                break
    if missing:
        where, slice_ = missing[0]
        shown = ", ".join(f"{k}={v}" for k, v in slice_.items())
        raise InputError(f"slice {shown} matches no case of the suites", file=rubric.path, field=where,
                         hint="check the tag name and value against the suites' tags")


def _check_mode(config, cases) -> None:
    """An endpoint in completion mode takes raw prompts: refuse chat cases before anything is sent."""
    if config.target.backend == "openai" and config.target.mode == "completion":
        chat = next((c for c in cases if c.messages is not None), None)
        if chat is not None:
            suite = next(s.path for s in config.suites if s.name == chat.suite)
            raise InputError(f"case '{chat.id}' has messages but target.mode is completion", file=suite,
                             field="messages", hint="use mode: chat, or give the case a prompt")


def validate(config: ConfigOption = Path(DEFAULT_CONFIG), as_json: JsonOption = False) -> int:
    """Check config, suites and rubric (schemas, paths, regexes, metric names). Fast: no model is loaded."""
    cfg, rubric, cases = load_inputs(config)
    per_suite = Counter(c.suite for c in cases)
    summary = {
        "config": str(cfg.path),
        "target": cfg.target.describe(),
        "rubric": str(rubric.path),
        "criteria": len(rubric.criteria),
        "forbidden_rules": len(rubric.forbidden),
        "suites": dict(per_suite),
        "cases": len(cases),
        "valid": True,
    }
    if as_json:
        print_json(summary)
        return 0
    console = consoles(False)
    console.print(f"{cfg.path}: valid", markup=False, soft_wrap=True)
    from rich.table import Table

    table = Table()
    table.add_column("suite")
    table.add_column("cases", justify="right")
    for name, n in per_suite.items():
        table.add_row(name, str(n))
    console.print(table)
    console.print(f"target: {summary['target']}\nrubric: {rubric.path} ({len(rubric.criteria)} criteria, "
                  f"{len(rubric.forbidden)} forbidden rules)", markup=False)
    return 0
