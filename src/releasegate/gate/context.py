"""One run being gated: what the gate was given (`GateInputs`) and the figures derived from it, each computed
once (`GateContext`) and read by every feature, so no two features measure the same thing two ways."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import field, replace
from functools import cached_property
from typing import Any, TypeVar, cast

from ..data_classes import dataclass
from ..decision.criterion import CriterionEvidence, Measurement
from ..inputs.rubric import Criterion, Rubric
from ..record.capacity_sweep import CapacitySweep
from ..record.judge_verdicts import Verdicts
from ..record.ledger import LedgerLine
from ..record.metrics import (
    MetricValue,
    batched_stream,
    compute_metric,
    is_phased,
    latency_phase,
    left_out_note,
    measured,
    phase_records,
    select,
    timing_derived_cost,
)
from ..record.records import CaseRecord, RunInfo
from ..record.review_cover import DrawnRow
from ..record.review_labels import LabelEdit
from ..scorers import CorpusScores, score_records
from ..stats.sample_weights import Strata, stratum_counts
from .baseline_run import SavedBaseline, read_baseline
from .baseline_spec import baseline_spec
from .capacity import capacity_sweep, gated_records
from .feature import GateFeature, MetricQuery, registered
from .health import (
    client_batched_share,
    client_kind,
    client_lag_ms,
    client_lateness_ms,
    client_load,
    client_reads_long,
    client_saturation,
)
from .run_view import load_phase_of

__all__ = ["GateInputs", "GateContext", "run_facts"]

T = TypeVar("T")


@dataclass(frozen=True)
class GateInputs:
    """Everything a gate is given: the run record, the rubric, and what was learnt about the run since."""

    info: RunInfo
    records: list[CaseRecord]
    rubric: Rubric
    cost: dict[str, Any] | None = None
    load_records: list[CaseRecord] = field(default_factory=list)
    labels: list[LabelEdit] = field(default_factory=list)
    """The run's human labels (reviews.jsonl)."""
    allow_pending: bool = False
    verdicts: Verdicts | None = None
    """The run's LLM-judge and guard verdicts."""
    edited: Sequence[str] = ()
    """The run's own files edited since releasegate sealed them (`record.seal.edited_evidence`)."""
    corpus_scores: CorpusScores | None = None
    scores: dict[str, dict[str, Any]] | None = None
    """The records' scores when the caller has them already (`scorers.scored_run`)."""
    rubric_file: str = ""
    inputs_changed: Sequence[str] = ()
    draws: list[CaseRecord] = field(default_factory=list)
    """The repeated draws (draws.jsonl, `generation.repeats`)."""
    drawn: Sequence[DrawnRow] = ()
    """The rows of the run's review sample (review_sample.json): each needs a label before review is done, and
    every bound the labels feed counts a blank one at its worst (`record.review_cover`)."""
    ledger: list[LedgerLine] = field(default_factory=list)
    """The attempts no record holds (attempts.jsonl, `record.ledger`): they count in the error rates only."""
    reused_labels: list[LabelEdit] = field(default_factory=list)
    """Guard and judge labels kept from earlier runs for the replies this run gave again (`pipeline.kept_labels`):
    they calibrate the guards and the judge, never a review slice's approval."""

    @property
    def grader_labels(self) -> list[LabelEdit]:
        """The labels the guards' and the judge's calibration read: the run's own and the reused ones."""
        return [*self.labels, *self.reused_labels]


def run_facts(info: RunInfo, records: list[CaseRecord], cost: dict[str, Any] | None, *,
              phase: str = "quality") -> dict[str, Any]:
    """Run-level facts metrics need: generation time, system throughput, cost config. Tokens and seconds come
    from the same phase (`both`: the two phases' tokens over the two phases' seconds)."""
    tokens = sum(r.tokens.output or 0 for r in measured(records))  # cached responses took no generation time
    load_seconds = load_phase_of(info).seconds
    seconds = {"quality": info.generation_seconds, "load": load_seconds}.get(phase)
    if phase == "both":
        seconds = (info.generation_seconds or 0.0) + (load_seconds or 0.0) if info.generation_seconds and load_seconds else None
    return {
        "generation_seconds": seconds,
        "system_output_tokens_per_s": tokens / seconds if seconds else None,
        "cost": cost,
        "all_records": True,
    }


class GateContext:
    """The run as every feature sees it (see the module docstring)."""

    def __init__(self, inputs: GateInputs, features: Sequence[GateFeature] | None = None) -> None:
        self.inputs = inputs
        self.info, self.records, self.rubric = inputs.info, inputs.records, inputs.rubric
        self.features = list(registered() if features is None else features)
        self.sections: dict[str, dict[str, Any]] = {}
        """Each feature's section once collected, for the features that declare they need it."""
        self.memo: dict[str, Any] = {}
        """Figures a feature derives once and reads again (its rule and its section)."""
        self.review_pending = 0
        """Required review still pending: set by the review feature, read by the run's evidence."""
        self.unplaced_domains: tuple[str, ...] = ()
        """Domain values placed neither as high-risk nor low-risk: set by the review feature, read likewise."""

    @cached_property
    def criteria(self) -> list[Criterion]:
        """The rubric's criteria and the defaults features add where the rubric says nothing."""
        added = [c for f in self.features if f.defaults is not None for c in f.defaults(self)]
        return [*self.rubric.criteria, *added]

    @cached_property
    def scores(self) -> dict[str, dict[str, Any]]:
        """The quality phase's scores, by case id."""
        given = self.inputs.scores
        return given if given is not None else score_records(self.records, self.rubric.forbidden, self.inputs.verdicts)

    @cached_property
    def phase(self) -> str:
        """Where latency, throughput and cost come from: 'quality', 'load' or 'both'."""
        return latency_phase(self.rubric.latency_from, self.inputs.load_records)

    @cached_property
    def sweep(self) -> CapacitySweep | None:
        """A capacity sweep judged at its capacity (None: the load phase was no sweep)."""
        return capacity_sweep(self.info, self.inputs.load_records, self.rubric.max_client_lag_share)

    @cached_property
    def load_at(self) -> tuple[list[CaseRecord], list[CaseRecord]]:
        """The load requests whose errors count (a sweep: the steps at or below its capacity) and those timed."""
        return gated_records(self.sweep, self.inputs.load_records)

    @cached_property
    def info_at(self) -> RunInfo:
        """The run as its figures see it: for a sweep, the load phase lasted as long as its capacity step."""
        if self.sweep is None:
            return self.info
        step = self.sweep.step_at(self.sweep.capacity_step)
        load = {**(self.info.load_phase or {}), "seconds": step.seconds if step else None}
        return self.info.model_copy(update={"load_phase": load})

    @cached_property
    def timed(self) -> list[CaseRecord]:
        """The requests latency, throughput and cost are measured on."""
        return phase_records(self.phase, self.records, self.load_at[1])

    @cached_property
    def left_out(self) -> str:
        """What every latency figure over the timed requests leaves out (`left_out_note`), once per run: each of
        the figures would otherwise count every request's attempts again."""
        return left_out_note(self.timed)

    @cached_property
    def strata(self) -> Strata:
        """Sample weights: the source's count of each stratum a `sample:` drew from."""
        return stratum_counts(self.records)

    @cached_property
    def facts(self) -> dict[str, Any]:
        return {**run_facts(self.info_at, self.timed, self.inputs.cost, phase=self.phase), "strata": self.strata}

    @cached_property
    def asked(self) -> list[CaseRecord]:
        """The quality phase's requests: every repeated draw is one too."""
        return self.records + self.inputs.draws

    def ledger(self, phase: str) -> list[LedgerLine]:
        """The ledger's attempts of one phase ('quality' or 'load'): cut load phases', cached answers' sessions'."""
        return [line for line in self.inputs.ledger if line.phase == phase]

    def measure(self, query: MetricQuery) -> MetricValue:
        """The metric's value: from the first feature that serves it, else the catalogue's (`compute_metric`)."""
        for feature in self.features:
            if feature.measure is not None and (value := feature.measure(self, query)) is not None:
                return value
        chosen = select(self.timed if is_phased(query.name) else self.records, query.slice)
        facts = {**self.facts, "all_records": not query.slice, "confidence": query.confidence}
        if not query.slice and is_phased(query.name):  # `chosen` is every timed request
            facts["left_out"] = self.left_out
        return compute_metric(query.name, chosen, self.scores, facts)

    def evidence(self, criterion: Criterion) -> CriterionEvidence:
        """A criterion's value and the conditions it was measured under, from the features that know them."""
        value = self.measure(MetricQuery(criterion.metric, criterion.slice, criterion.confidence, criterion.phase))
        for feature in self.features:
            if feature.evidence is not None and (found := feature.evidence(self, criterion, value)) is not None:
                return found
        return CriterionEvidence(criterion, value, self.measured_for(criterion.metric))

    def measured_for(self, metric: str) -> Measurement:
        """The measurement a criterion on `metric` is decided under: an E2E figure's bounds are widened by the
        client's E2E lateness, which for the hf backend holds the CPU wait of every step (`health.client_lag_ms`)."""
        if not metric.startswith("e2e"):
            return self.measurement
        return replace(self.measurement, lateness_ms=client_lateness_ms(self.info, self.phase, self.timed, metric) or None)

    @cached_property
    def lag_ms(self) -> float | None:
        return client_lag_ms(self.info, self.phase)

    @cached_property
    def lateness_ms(self) -> float:
        return client_lateness_ms(self.info, self.phase, self.timed)

    @cached_property
    def saturated(self) -> str | None:
        """Why the client, not the target, set the latency (a busy machine told from a busy client), or None."""
        p50 = self.measure(MetricQuery("ttft_ms_p50")).value
        return client_saturation(self.lag_ms, p50, self.rubric.max_client_lag_share,
                                 client=client_kind(self.info, self.phase), **client_load(self.info, self.phase, self.timed))

    @cached_property
    def measurement(self) -> Measurement:
        """The health of the run's latency measurement, as every criterion of the rubric is decided under it."""
        batched = batched_stream(client_batched_share(self.info, self.phase), self.rubric.max_itl_batched_share)
        return Measurement(lateness_ms=self.lateness_ms or None, reads_long=client_reads_long(self.info, self.phase),
                           saturated=self.saturated if self.lag_ms is not None else None,
                           cost_from_timing=bool(timing_derived_cost(self.inputs.cost)), batched=batched)

    def once(self, key: str, make: Callable[[], T]) -> T:
        """The figure `key`, made by `make` the first time a feature asks, then read by every consumer."""
        if key not in self.memo:
            self.memo[key] = make()
        return cast(T, self.memo[key])

    def baseline_run(self) -> SavedBaseline:
        """The rubric's baseline run, read once for the gate: the comparison, the forbidden-rate delta and the
        guard's paired arm share it."""
        spec = self.rubric.baseline
        assert spec, "baseline_run needs the rubric's baseline:"
        return self.once("baseline_run", lambda: read_baseline(baseline_spec(spec).run))

    def section_of(self, name: str) -> dict[str, Any]:
        """The section a feature this one needs has made (empty when it made none)."""
        return self.sections.get(name, {})
