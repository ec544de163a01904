"""The parts of run.json the gate reads (`RunInfo`'s load phase, client figures, sessions, prefix-cache probe,
stopping and budget), each read once into its type, and a tally of attempts (`record.evidence.attempt_counts`).

Client figures are what a client measured of itself: a hand-edited figure that is not a number says nothing
(it reads as None), as it always has, so the gate never refuses a run for one."""

from __future__ import annotations

import math
import sys
from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict

from ..data_classes import dataclass
from ..model_base import Model
from ..record.capacity_sweep import Number
from ..record.records import RunInfo
from ..record.run_parts import Count, PrefixCacheFacts

__all__ = ["Attempts", "BudgetView", "ClientFigures", "LagFigures", "LoadPhaseView", "StoppingView", "client_figures",
           "load_phase_of", "session_clients", "stopping_of_run", "budget_of", "prefix_cache_of", "is_figure"]


_LARGEST = int(sys.float_info.max)


def is_figure(value: Any) -> bool:
    """A finite number a float holds (never a bool; 10**400 is none)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) if isinstance(value, float) else abs(value) <= _LARGEST


def _figure_or_none(value: Any) -> Any:
    return float(value) if is_figure(value) else None


def _dict_or_none(value: Any) -> Any:
    return value if isinstance(value, dict) else None


ClientFigure = Annotated[float | None, BeforeValidator(_figure_or_none)]
"""A client's own figure: a finite number, else None (says nothing)."""


class _View(Model):
    model_config = ConfigDict(extra="allow")


class LagFigures(_View):
    """Percentiles of a lag, in ms."""

    p99: ClientFigure = None


class ClientFigures(_View):
    """A client lateness summary (run.json `client`, a session's or the load phase's `client`)."""

    client: Annotated[str | None, BeforeValidator(lambda v: v if isinstance(v, str) else None)] = None
    """'lean', 'openai' or 'hf'."""
    loop_lag_ms: Annotated[LagFigures | None, BeforeValidator(_dict_or_none)] = None
    e2e_lag_ms: Annotated[LagFigures | None, BeforeValidator(_dict_or_none)] = None
    cpu_share: ClientFigure = None
    window_s: ClientFigure = None
    itl_batched_share: ClientFigure = None
    reads_long_only: Annotated[bool, BeforeValidator(lambda v: v is True)] = False


def client_figures(summary: Any) -> ClientFigures | None:
    """A client summary read into its type; None when there is none (or it is no mapping)."""
    return ClientFigures.model_validate(summary) if isinstance(summary, dict) else None


ClientPart = Annotated[ClientFigures | None, BeforeValidator(_dict_or_none)]


class LoadPhaseView(_View):
    """run.json `load_phase`, as the gate reads it."""

    seconds: Number | None = None
    requests: Count | None = None
    concurrency: Count | None = None
    profile: str | None = None
    cut_short: Annotated[str | None, BeforeValidator(lambda v: str(v) if v else None)] = None
    """Why the load phase sent fewer requests than it planned (None: it sent them all)."""
    client: ClientPart = None
    sweep: dict[str, Any] | None = None
    """Read into its type by the capacity sweep (`step_figures.SweepRecord`), which refuses a malformed one."""


def load_phase_of(info: RunInfo) -> LoadPhaseView:
    """The run's load phase (every field None when it ran none)."""
    return LoadPhaseView.model_validate(info.load_phase or {})


class _Session(_View):
    concurrency: Annotated[int | None, BeforeValidator(lambda v: v if isinstance(v, int) else None)] = None
    client: ClientPart = None


def _sessions(info: RunInfo) -> list[_Session]:
    return [_Session.model_validate(s) for s in info.sessions if isinstance(s, dict)]


def session_clients(info: RunInfo) -> list[ClientFigures | None]:
    """Each session's client summary, in order."""
    return [s.client for s in _sessions(info)]


def session_concurrency(info: RunInfo) -> list[int]:
    """Each session's requests in flight at most, where it recorded them."""
    return [s.concurrency for s in _sessions(info) if s.concurrency is not None]


class StoppingView(_View):
    """run.json `stopping` (`gate.stopping`)."""

    order: Annotated[list[Any] | None, BeforeValidator(lambda v: v if isinstance(v, list) else None)] = None
    """The case ids in the order asked (None: none recorded, so every case is asked)."""
    stopped_at: Annotated[int | None, BeforeValidator(lambda v: v if isinstance(v, int) and v else None)] = None
    """The cases of the order asked when every criterion was decided (None: it did not stop)."""
    when_decided: Annotated[bool | None, BeforeValidator(lambda v: v if isinstance(v, bool) else None)] = None
    """False: a budget's order, which only a cap stops (`run.stop_watch`)."""


def stopping_of_run(info: RunInfo) -> StoppingView:
    """The run's stopping record (every field None when it has none)."""
    return StoppingView.model_validate(info.stopping if isinstance(info.stopping, dict) else {})


class BudgetView(_View):
    """run.json `budget` (`run.budget`; its shape is checked by `record.run_parts.BudgetFacts`): numbers keep their
    JSON type, as the report shows them."""

    caps: dict[str, Number] | None = None
    spent_usd: dict[str, Number] | None = None
    tokens: int | None = None
    exhausted: str | None = None
    """The cap dispatch stopped at (None: none was reached)."""
    exceeded: list[str] | None = None


def budget_of(info: RunInfo) -> BudgetView | None:
    """The run's budget record (None: no budget)."""
    return BudgetView.model_validate(info.budget) if isinstance(info.budget, dict) else None


def prefix_cache_of(info: RunInfo) -> PrefixCacheFacts | None:
    """The run's prefix-cache probe (None: it ran none)."""
    return PrefixCacheFacts.model_validate(info.prefix_cache) if info.prefix_cache else None


@dataclass(frozen=True)
class Attempts:
    """Attempts of some records (`record.evidence.attempt_counts`): how many, how many failed, by error kind."""

    attempts: int
    failed: int
    errors: dict[str, int]

    @property
    def rate(self) -> float | None:
        """Failed attempts over attempts (None: none)."""
        return self.failed / self.attempts if self.attempts else None
