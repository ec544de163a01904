"""Every input of a run checked before anything runs: config, rubric and cases, and what ties them together
(a rubric slice some case has, chat cases only for a chat endpoint, a judge for judged cases)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, overload

from ..errors import InputError, Where
from ..extras import require
from .backend_facts import capabilities, spec
from .config import Config, load_config
from .files import is_dir, named_file
from .judge_settings import check_judged_cases
from .judging_keys import judges, key_parts
from .model_files import check_model_dir
from .mojibake import suite_mojibake
from .probes import with_probes
from .rubric import Rubric, load_rubric
from .schema_check import did_you_mean
from .suites import Case, load_suites, stream_cases, suite_tags
from .target import TargetConfig

__all__ = ["load_inputs", "input_summary", "SuiteCounts"]


Slice = dict[str, Any]
"""A rubric slice: {tag or 'suite': value} as the rubric writes it."""

NamedSlice = tuple[tuple[str | int, ...], Slice]
"""A slice with the key path of the rubric that names it (`('criteria', 2, 'slice')`)."""


class SuiteCounts(Counter[str]):
    """Cases per suite (what `validate` counts), and the domain tag's values the cases had on the way: the
    suites are read once, not once more for the domain warnings."""

    domains: set[str]
    probed: int
    """Cases the config's `probes.cases` selects."""

    def __init__(self) -> None:
        super().__init__()
        self.domains, self.probed = set(), 0


@overload
def load_inputs(config_path: Path, *, limit: int | None = None, keep: Literal[True] = True,
                overrides: tuple[str, ...] = ()) -> tuple[Config, Rubric, list[Case]]: ...


@overload
def load_inputs(config_path: Path, *, limit: int | None = None, keep: Literal[False],
                overrides: tuple[str, ...] = ()) -> tuple[Config, Rubric, SuiteCounts]: ...


def load_inputs(config_path: Path, *, limit: int | None = None, keep: bool = True,
                overrides: tuple[str, ...] = ()) -> tuple[Config, Rubric, list[Case] | SuiteCounts]:
    """Config, rubric and cases, each validated; raises InputError at the first problem. `overrides`: the
    `--set KEY=VALUE` overrides applied over the config file (see `composition`).

    `limit` (`check --limit N`): only the first N cases over the suites in config order, the same cases as
    `load_inputs(...)[2][:N]`, and only the suite lines up to them are read (see `load_suites`). The completion-mode
    check is then about the cases that run; a slice is still refused only if no case of the suites has it (the
    rest of the suites is scanned for its tags, unvalidated, when the cases that run do not have it).
    `keep=False` (`validate`): the cases are read one at a time and not kept, their ids as 8-byte hashes
    (`stream_cases`), and the cases per suite (`SuiteCounts`) are returned in their place, so a suite of a million
    rows validates in bounded memory."""
    config = load_config(config_path, overrides=overrides)
    rubric = load_rubric(named_file(config.rubric, what="rubric", where=config.key_at("rubric"), base=config.base_dir))
    _check_installed(rubric)
    _check_guards(config, rubric)
    if config.judge is not None:
        _check_grader_model(config, config.judge.target, ("judge",))
    _check_embedding_model(config)
    try:
        cases = with_probes(load_suites(config.suites, config.path.parent, limit=limit), config.probes,
                            limited=limit is not None) if keep else None
    except InputError as exc:
        if exc.field != "probes.cases":
            raise
        raise InputError(exc.message, **config.key_at("probes", "cases"), hint=exc.hint) from None
    per_suite = SuiteCounts()
    chat: list[Case] = []
    domain_tag = rubric.review.domain_tag

    def tagged() -> Iterator[tuple[str, dict[str, Any]]]:
        for case in cases if cases is not None else stream_cases(config.suites, config.path.parent, limit=limit):
            per_suite[case.suite] += 1
            if case.tags.get(domain_tag) is not None:
                per_suite.domains.add(str(case.tags[domain_tag]))
            if case.messages is not None and not chat:
                chat.append(case)
            if (case.answer or {}).get("type") == "judge":  # a judge to ask, and a criterion it knows
                check_judged_cases(config, [case])
            if config.probes is not None and all(str(case.tags.get(k)) == str(v)
                                                 for k, v in config.probes.cases.items()):
                per_suite.probed += 1
            yield case.suite, case.tags

    seen = TagValues()
    missing = _unmatched(_named_slices(rubric), tagged(), seen=seen)  # every case read (and validated) here
    _check_mode(config, chat)
    if config.probes is not None and not keep and not limit and not per_suite.probed:  # as `check` would say
        raise InputError(f"probes.cases {config.probes.cases} selects no case of the suites: the probes would test "
                         "nothing", **config.key_at("probes", "cases"),
                         hint="tag the must-refuse cases (e.g. kind: must_refuse) and select them")
    if missing and limit:
        missing = _unmatched(missing, suite_tags(config.suites), stop=True, seen=seen)
    families = {f.name for f in config.probes.families} if config.probes is not None else set()
    _refuse_slices(rubric, [m for m in missing if str(m[1].get("probe")) not in families], seen)  # probes: made
    return config, rubric, cases if cases is not None else per_suite


def _check_guards(config: Config, rubric: Rubric) -> None:
    """A rubric rule of kind guard names a guard of the config's `guards:`: said before the model runs."""
    for i, rule in enumerate(rubric.forbidden):
        if rule.guard and rule.guard not in config.guards:
            known = ", ".join(config.guards) or "none: the config has no guards: section"
            raise InputError(f"forbidden rule {i + 1} names guard '{rule.guard}', which the config does not define "
                             f"(known: {known})", file=rubric.path, field="forbidden",
                             hint="add it under guards: in the config (see docs/scorers.md)")
        unasked = [c for c in rule.codes if rule.guard and c.casefold() not in {
            k.casefold() for k in config.guards[rule.guard].categories}]
        if unasked:  # the guard's prompt shows only its categories: it is never asked about this code
            raise InputError(f"forbidden rule {i + 1} maps code '{unasked[0]}', which guard '{rule.guard}' is never "
                             "asked about (not among its categories)", file=rubric.path, field="forbidden",
                             hint=f"add {unasked[0]} to guards.{rule.guard}.categories in the config")
    for name in dict.fromkeys(rule.guard for rule in rubric.forbidden if rule.guard):
        _check_grader_model(config, config.guards[name].target, ("guards", name))


def _check_grader_model(config: Config, target: TargetConfig, at: tuple[str, ...]) -> None:
    """A guard's or judge's local model runs after every case is answered: a directory its loader cannot read (no
    weights, a config.json that is not a model's) is said now, naming its field, not once the run is done."""
    for role, key in capabilities(target.backend).model_dirs:
        location = getattr(target, key, None)
        if role != "adapter" and location is not None and is_dir(Path(location)):
            check_model_dir(Path(location), f"{at[0].rstrip('s')} {role}", config.key_at(*at, key))


def _check_installed(rubric: Rubric) -> None:
    """A rubric's `evaluate:` metrics other than the shipped ones need the `evaluate` extra: said before the model
    runs, not once it has answered every case. `gate` on a saved run does not come here."""
    if any(not spec.shipped for spec in rubric.evaluate):
        require("a rubric's evaluate: metrics", "evaluate", file=rubric.path, field="evaluate")


def _check_embedding_model(config: Config) -> None:
    """A local embedding model (the response-cache probe) runs after every case is answered: it needs the `hf`
    extra and a model directory a loader can read, said now, not once the run is done."""
    probe = getattr(config, "response_cache_probe", None)
    local = probe.embeddings.local if probe is not None and probe.embeddings is not None else None
    if local is None:
        return
    where: Where = {"file": config.path, "field": "response_cache_probe.embeddings.local"}
    require("a local embedding model", "torch", "transformers", **where)
    check_model_dir(local, "embedding model", where)


def _named_slices(rubric: Rubric) -> list[NamedSlice]:
    named = [(("criteria", i, "slice"), c.slice) for i, c in enumerate(rubric.criteria) if c.slice]
    return named + [(("review", "required_slices", i), s) for i, s in enumerate(rubric.review.required_slices)]


def _unmatched(named: list[NamedSlice], tagged: Iterable[tuple[str, dict[str, Any]]], *, stop: bool = False,
               seen: TagValues | None = None) -> list[NamedSlice]:
    """The slices no (suite, tags) of `tagged` matches. `tagged` is read to its end (reading it validates the
    cases), unless `stop`: then only until every slice is matched. `seen`: filled in with the values the
    slices' keys take, for a did-you-mean."""
    def matches(slice_: dict[str, Any], suite: str, tags: dict[str, Any]) -> bool:
        return all(str(suite if k == "suite" else tags.get(k)) == str(v) for k, v in slice_.items())

    missing = list(named)
    for suite, tags in tagged:
        if missing:
            missing = [(where, slice_) for where, slice_ in missing if not matches(slice_, suite, tags)]
            if seen is not None:
                seen.add(suite, tags, missing)
        elif stop:
            break
    return missing


class TagValues:
    """The tag names and values the cases have, as far as a did-you-mean for an unmatched slice needs them: at
    most MAX values a name, collected only while some slice is unmatched."""

    MAX = 1000

    def __init__(self) -> None:
        self.values: dict[str, set[str]] = {}

    def add(self, suite: str, tags: dict[str, Any], missing: list[NamedSlice]) -> None:
        for name, value in [("suite", suite), *tags.items()]:
            known = self.values.get(str(name))
            if known is None and len(self.values) < self.MAX:
                known = self.values[str(name)] = set()
            if known is not None and len(known) < self.MAX:
                known.add(str(value))

    def guess(self, slice_: dict[str, Any]) -> str:
        """A did-you-mean for the first key or value of `slice_` the cases do not have, else ''."""
        for key, value in slice_.items():
            if str(key) not in self.values:
                return did_you_mean(str(key), sorted(self.values))
            if str(value) not in self.values[str(key)]:
                return did_you_mean(str(value), sorted(self.values[str(key)]))
        return ""


def _refuse_slices(rubric: Rubric, missing: list[NamedSlice], seen: TagValues) -> None:
    """A slice that matches no case decides nothing: a typo in it would silently drop a criterion or the review
    requirement of a high-risk slice, so it is an input error naming the rubric's line (for a limited load,
    once the rest of the suites was scanned for it)."""
    if missing:
        where, slice_ = missing[0]
        shown = ", ".join(f"{k}={v}" for k, v in slice_.items())
        at = rubric.key_at(*where)
        at["file"] = at.get("file") or rubric.path  # a rubric built in code knows no lines, but its file
        raise InputError(f"slice {shown} matches no case of the suites", **at,
                         hint=seen.guess(slice_) or "check the tag name and value against the suites' tags")


def _check_mode(config: Config, cases: list[Case]) -> None:
    """An endpoint in completion mode takes raw prompts: refuse chat cases before anything is sent."""
    if "mode" in spec(config.target.backend).fields and config.target.mode == "completion":
        chat = next((c for c in cases if c.messages is not None), None)
        if chat is not None:
            suite = next(s.path for s in config.suites if s.name == chat.suite)
            raise InputError(f"case '{chat.id}' has messages but target.mode is completion", file=suite,
                             field="messages", hint="use mode: chat, or give the case a prompt")


def domain_warnings(config: Config, rubric: Rubric, values: set[str] | None = None) -> list[str]:
    """One line per domain tag value `validate` cannot tell high-risk or not (`ReviewPolicy.unrecognised`): a
    high-risk domain spelled in a way it does not know would go unreviewed. `values`: the values the cases had,
    when they were counted as they were read (else the suites are read again for them)."""
    policy = rubric.review
    if values is None:
        values = {str(tags.get(policy.domain_tag)) for _, tags in suite_tags(config.suites)
                  if isinstance(tags, dict) and tags.get(policy.domain_tag) is not None}
    return [f"{policy.domain_tag}: {value!r} is not a domain releasegate knows; if it is high-risk (like "
            f"medical, legal or customer support), add it to the rubric's review.required_domains"
            for value in policy.unrecognised(values)]


def input_summary(config: Config, rubric: Rubric, per_suite: Counter[str]) -> dict[str, Any]:
    """What `validate` reports: the target, the rubric's size and the cases per suite."""
    summary = {
        "config": str(config.path),
        "target": config.target.describe(),
        "rubric": str(rubric.path),
        "criteria": len(rubric.criteria),
        "forbidden_rules": len(rubric.forbidden),
        "suites": dict(per_suite),
        "cases": sum(per_suite.values()),
        "valid": True,
        "warnings": [*config.warnings, *domain_warnings(config, rubric, getattr(per_suite, "domains", None)),
                     *suite_mojibake(config.suites)],
        "judging_overrides": [o["key"] for o in config.over_official if judges(key_parts(o["key"]))],
    }
    if config.judge is not None:
        summary["judge"] = config.judge.target.describe()
    if config.extends or config.overrides:  # what was composed into the config that validated
        summary["extends"] = [str(p) for p in config.extends]
        summary["set"] = config.recorded_overrides()
    return summary
