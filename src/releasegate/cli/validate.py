"""`releasegate validate`: lint config, suites and rubric without loading any model."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from .. import DEFAULT_CONFIG
from ..errors import InputError
from ._common import ConfigOption, JsonOption, consoles, print_json


def load_inputs(config_path: Path, *, limit: int | None = None, keep: bool = True):
    """Config, rubric and cases, each validated; raises InputError at the first problem.

    `limit` (`check --limit N`): only the first N cases over the suites in config order, the same cases as
    `load_inputs(...)[2][:N]`, and only the suite lines up to them are read (see `load_suites`). The completion-mode
    check is then about the cases that run; a slice is still refused only if no case of the suites has it (the
    rest of the suites is scanned for its tags, unvalidated, when the cases that run do not have it).
    `keep=False` (`validate`): the cases are read one at a time and not kept, their ids as 8-byte hashes
    (`stream_cases`), and a Counter of cases per suite is returned in their place, so a suite of a million rows
    validates in bounded memory."""
    from ..inputs.config import load_config
    from ..inputs.rubric import load_rubric
    from ..inputs.suites import load_suites, stream_cases, suite_tags

    config = load_config(config_path)
    rubric = load_rubric(config.rubric)
    cases = load_suites(config.suites, config.path.parent, limit=limit) if keep else None
    per_suite: Counter = Counter()
    chat = []

    def tagged():
        for case in cases if keep else stream_cases(config.suites, config.path.parent, limit=limit):
            per_suite[case.suite] += 1
            if case.messages is not None and not chat:
                chat.append(case)
            if (case.answer or {}).get("type") == "judge":  # a judge to ask, and a criterion it knows
                from ..llm_judge.settings import check_judged_cases

                check_judged_cases(config, [case])
            yield case.suite, case.tags

    missing = _unmatched(_named_slices(rubric), tagged())  # every case read (and validated) here
    _check_mode(config, chat)
    if missing and limit:
        missing = _unmatched(missing, suite_tags(config.suites), stop=True)
    _refuse_slices(rubric, missing)
    return config, rubric, cases if keep else per_suite


def _named_slices(rubric) -> list[tuple[str, dict]]:
    named = [(f"criteria[{i}].slice", c.slice) for i, c in enumerate(rubric.criteria) if c.slice]
    return named + [(f"review.required_slices[{i}]", s) for i, s in enumerate(rubric.review.required_slices)]


def _unmatched(named: list[tuple[str, dict]], tagged, *, stop: bool = False) -> list[tuple[str, dict]]:
    """The slices no (suite, tags) of `tagged` matches. `tagged` is read to its end (reading it validates the
    cases), unless `stop`: then only until every slice is matched."""
    def matches(slice_: dict, suite: str, tags: dict) -> bool:
        return all(str(suite if k == "suite" else tags.get(k)) == str(v) for k, v in slice_.items())

    missing = list(named)
    for suite, tags in tagged:
        if missing:
            missing = [(where, slice_) for where, slice_ in missing if not matches(slice_, suite, tags)]
        elif stop:
            break
    return missing


def _refuse_slices(rubric, missing: list[tuple[str, dict]]) -> None:
    """A slice that matches no case decides nothing: a typo in it would silently drop a criterion or the review
    requirement of a high-risk slice, so it is an input error (for a limited load, once the rest of the suites
    was scanned for it)."""
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
    cfg, rubric, per_suite = load_inputs(config, keep=False)
    summary = {
        "config": str(cfg.path),
        "target": cfg.target.describe(),
        "rubric": str(rubric.path),
        "criteria": len(rubric.criteria),
        "forbidden_rules": len(rubric.forbidden),
        "suites": dict(per_suite),
        "cases": sum(per_suite.values()),
        "valid": True,
    }
    if cfg.judge is not None:
        summary["judge"] = cfg.judge.target.describe()
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
    if cfg.judge is not None:
        console.print(f"judge: {summary['judge']} ({len(cfg.judge.criteria)} named criteria)", markup=False)
    return 0
