"""The results of `servers` and `matrix` (in-process variants and served variants) as their renderers read them:
`record.decided_results` checks each carries its decision; these read the rows the tables show, once, where a
renderer starts (`paired_models.read_section`), then by attribute.

Numbers keep their JSON type (`Number`), so a figure shown as it is reads the same as from the dict.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from ..model_base import Model
from ..record.capacity_sweep import Number
from ..record.gate_report import LatencySource

__all__ = ["Parity", "ServerParity", "ServerTarget", "ServersView", "ServedHow", "ServedVariant", "VariantsView", "MatrixRow"]


class _Model(Model):
    model_config = ConfigDict(extra="allow")  # the figures around the rows, as each command has them


class Parity(_Model):
    """A target's quality paired with the reference's on their shared cases (`pipeline.servers`)."""

    shared_cases: int | None = None
    identical_outputs: int | None = None
    identical_share: Number | None = None
    accuracy_delta: Number | None = None
    accuracy_interval: list[Number] | None = None
    accuracy_p_value: Number | None = None
    quality_verdict: str | None = None


class _Figures(_Model):
    def figures(self) -> dict[str, Any]:
        """The row as given, for the tables' figure columns (each named by its key)."""
        return self.model_dump(exclude_unset=True)


class ServerParity(_Model):
    """A target's parity as the servers table reads it: the rest of it is shown as given, column by column."""

    identical_outputs: Any = None
    shared_cases: Any = None


class ServerTarget(_Figures):
    """One run of `releasegate servers`: its figures are shown as given (a figure may be text)."""

    run_id: str
    parity: ServerParity | None = None
    """Null for the reference."""
    capacity_rps: Any = None
    capacity_at_least: Any = None
    """The sweep's top rate still met the objective: the capacity is at least `capacity_rps`."""
    latency_source: LatencySource | str | None = None
    latency_from: str | None = None


class ServersView(_Model):
    """`releasegate servers`' result (`decided_results.ServersResult` checks its decision and recommendation)."""

    targets: list[ServerTarget]
    reference: str | None = None
    recommendation: str = ""


class ServedHow(_Model):
    """How a variant is served: its server, quantisation, LoRA and speculative draft."""

    server: str | None = None
    quant: str | None = None
    lora: str | None = None
    speculative: str | None = None


class ServedVariant(_Figures, ServedHow):
    """One served variant of `releasegate matrix` (`pipeline.served_variants`)."""

    variant: str
    parity: Parity | None = None
    """Null for the reference (and for a variant that could not be served)."""
    capacity_rps: Number | None = None
    capacity_at_least: bool | None = None
    """The sweep's top rate still met the objective: the capacity is at least `capacity_rps`."""
    acceptance_rate: Number | None = None
    accepted_tokens: Number | None = None
    draft_tokens: Number | None = None
    chosen: bool | None = None
    eligible: bool | None = None
    why_not: str | None = None
    verdict_reason: str | None = None


class VariantsView(_Model):
    """`releasegate matrix` over a config's served variants (`decided_results.VariantsResult`)."""

    reference: str
    variants: list[ServedVariant]
    choice: str | None = None
    choice_reason: str | None = None
    rule: str | None = None
    verdict: str | None = None
    exit_code: int | None = None
    slo: dict[str, Any] | None = None
    margin: Number | None = None
    min_parity_share: Number | None = None
    dir: str | None = None


class MatrixRow(_Model):
    """One in-process variant of `releasegate matrix` (`pipeline.matrix`)."""

    variant: str
    verdict: str
    verdict_reason: str | None = None
    batch_size: int | None = None
    accuracy: Number | None = None
    accuracy_delta: Number | None = None
    accuracy_p: Number | None = None
    identical_share: Number | None = None
    ttft_ms_p95_ratio: Number | None = None
    tpot_ms_p95_ratio: Number | None = None
    cost_per_1m_output_tokens_ratio: Number | None = None
    quality_verdict: str
    not_comparable: str | None = None
    changed_cases: int | None = None
    latency_source: LatencySource | None = None
