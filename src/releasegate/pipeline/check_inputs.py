"""What `check` refuses before it loads the model or sends a request: sections the target cannot take, an
`evaluate` metric that cannot load, judged cases with no judge."""

from __future__ import annotations

from pathlib import Path

from ..backends import capabilities
from ..errors import InputError
from ..inputs.config import Config
from ..inputs.files import read_text
from ..inputs.judge_settings import check_judged_cases
from ..inputs.rubric import Rubric
from ..inputs.suites import Case
from ..scorers.evaluate_metric import load_metric, resolve_module

__all__ = ["check_before_loading", "check_metrics"]


def check_before_loading(config: Config, rubric: Rubric, cases: list[Case]) -> None:
    """Every refusal `check` makes on its inputs before the model loads."""
    _check_served_sections(config)
    check_metrics(rubric)
    _check_judged(config, cases)


def _check_served_sections(config: Config) -> None:
    """A config with served variants may give load / prefix_cache / scale for their servers: the target itself
    cannot take them."""
    caps = capabilities(config.target.backend)
    for name, value, can in (("load", config.load, caps.load_phase), ("prefix_cache", config.prefix_cache,
                                                                      caps.prefix_cache_probe)):
        if value is not None and not can:
            raise InputError(f"{name} is for the served variants: the {config.target.backend} target cannot take it",
                             file=config.path, field=name, hint="run releasegate matrix, which serves them")


def _check_judged(config: Config, cases: list[Case]) -> None:
    if config.judge is not None or any((c.answer or {}).get("type") == "judge" for c in cases):
        check_judged_cases(config, cases)


def check_metrics(rubric: Rubric) -> None:
    """Fail on a metric that cannot load before spending time on the model; a local metric script is only
    compiled here (`import evaluate` costs seconds, and judging imports it anyway), so the first request waits
    only for what the target needs."""
    for spec in rubric.evaluate:
        path = Path(resolve_module(spec.module))
        if not path.is_file():  # a hub id: only loading it says whether it is there (offline: it is not)
            load_metric(spec.module)
            continue
        try:
            compile(read_text(path, what="evaluate metric"), str(path), "exec")
        except SyntaxError as exc:
            raise InputError(f"evaluate metric failed to load: {exc.msg}", file=path, line=exc.lineno) from None
