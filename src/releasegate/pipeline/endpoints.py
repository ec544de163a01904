"""Every endpoint a config names, reached before anything runs: the target, the judge and the response-cache
probe's embeddings (`validate --probe`; `check` reaches the target). Each fails in seconds with one line naming
which endpoint and why; a `model:` the server does not list is a warning, or with `target.strict_model` an error.
"""

from __future__ import annotations

import time
from dataclasses import field
from typing import Any

from ..backends import capabilities, create_backend
from ..backends.embeddings import probe_embeddings
from ..data_classes import dataclass
from ..errors import InputError, TargetError
from ..inputs.config import Config

__all__ = ["Reached", "reach_target", "reach_endpoints", "target_answers"]


@dataclass(frozen=True)
class Reached:
    """One endpoint that answered: which (`target`, `judge`, `embeddings`), where, in how long, what to warn of."""

    name: str
    where: str
    seconds: float
    warnings: list[str] = field(default_factory=list)


def reach_target(config: Config) -> Reached | None:
    """The target's endpoint answered (None: the target is no endpoint); TargetError (exit 4) naming it if not;
    InputError (exit 2) for a model it does not list, under `target.strict_model`."""
    if not capabilities(config.target.backend).endpoint:
        return None
    reached = _reach("target", config.target.describe(), lambda: create_backend(config.target, config.generation).probe())
    if reached.warnings and config.target.strict_model:
        raise InputError(reached.warnings[0], file=config.path, field="target.model",
                         hint="use a name the server lists, or set target.strict_model: false")
    return reached


def target_answers(config: Config, use_cache: bool | None, console: Any) -> None:
    """`check`'s probe: a target that does not answer is exit 4 before the run directory exists; a `model:` it
    does not list is a warning on `console`. With the response cache on the run may need no endpoint at all
    (every answer cached): the backend's own load decides then."""
    if config.cache is not None and use_cache is not False:
        return
    reached = reach_target(config)
    for line in reached.warnings if reached is not None else ():
        console.print(f"warning: {line}", markup=False, soft_wrap=True)


def reach_endpoints(config: Config) -> list[Reached]:
    """`reach_target`, then the judge's endpoint and the embeddings endpoint, when the config names them."""
    out = [r for r in (reach_target(config),) if r is not None]
    judge = config.judge
    if judge is not None and capabilities(judge.target.backend).endpoint:
        out.append(_reach("judge", judge.target.describe(), lambda: create_backend(judge.target).probe(),
                          field="judge.model"))
    probe = config.response_cache_probe
    source = probe.embeddings if probe is not None else None
    if source is not None and source.local is None:
        out.append(_reach("embeddings", source.describe(), lambda: _embedded(source)))
    return out


def _embedded(source: Any) -> list[str]:
    probe_embeddings(source)
    return []


def _reach(name: str, where: str, probe: Any, field: str = "target.model") -> Reached:
    started = time.perf_counter()
    try:
        warnings = probe()
    except TargetError as exc:
        raise TargetError(f"{name} endpoint: {exc}") from None
    lines = [w.replace("target.model", field, 1) for w in warnings]
    return Reached(name, where, time.perf_counter() - started, lines)
