"""The rubric: the gate policy (criteria with thresholds), forbidden-response rules, extra metrics."""

from __future__ import annotations

import math
from dataclasses import field
from functools import partial
from pathlib import Path
from typing import Any

from ..border.dsse import public_key_from_pem
from ..data_classes import dataclass
from ..errors import InputError
from ..record.blessings import Signers, blessed
from ..record.metrics import (
    BOUNDED_METRICS,
    DEFAULT_MAX_ITL_BATCHED_SHARE,
    ERROR_METRICS,
    KNOWN_METRICS,
    LOAD_PHASE_METRICS,
    STABILITY_METRICS,
)
from ..record.record_parts import DEFAULT_MIN_PAIR_SHARE
from .case_checks import check_regex
from .files import KeyAt, exists, is_file, key_at, load_yaml, named_file, nowhere
from .judge_settings import CalibrationPolicy, parse_calibration
from .read_doc import read_doc
from .review_policy import ReviewPolicy, parse_policy
from .rubric_doc import BaselineDoc, CriterionDoc, EvaluateDoc, RubricDoc, RuleDoc, RulesFileDoc
from .schema_check import did_you_mean, validate

__all__ = ["Rubric", "Criterion", "ForbiddenRule", "EvaluateMetric", "load_rubric"]


@dataclass(frozen=True)
class Criterion:
    """One pass/fail rule: `metric op threshold`, on the cases of `slice` (all cases when empty)."""

    name: str
    metric: str
    op: str
    threshold: float
    slice: dict[str, Any] = field(default_factory=dict)
    min_samples: int = 1
    confidence: float | None = None
    """Gate on the one-sided bound at this confidence (None: on the point value)."""
    phase: str = "quality"
    """Whose answers a quality rate is measured on: 'quality' (the quality cases, as ever) or 'load' (the load
    phase's answers, or the capacity step's, scored with the same checks; `phase: load`)."""
    origin: str = "rubric"
    """'rubric' (written by the user), 'guard' (the default error-rate guard), 'baseline' (a comparison with the
    baseline run) or 'review' (human approval). Only rubric criteria can make a run PASS."""

    def as_dict(self) -> dict[str, Any]:
        named = {k: v for k, v in self.slice.items() if v is not None}
        no_probe = "probe" in self.slice and "probe" not in named  # written as given: the cases that are no probe
        return {
            "name": self.name, "metric": self.metric, "op": self.op, "threshold": self.threshold,
            **({"origin": self.origin} if self.origin != "rubric" else {}),
            **({"slice": named} if named else {}),
            **({"probe": "none"} if no_probe else {}),
            **({"confidence": self.confidence} if self.confidence else {}),
            **({"min_samples": self.min_samples} if self.min_samples != 1 else {}),
            **({"phase": self.phase} if self.phase != "quality" else {}),
        }


@dataclass(frozen=True)
class ForbiddenRule:
    """Regexes and phrases that must never appear in an output, grouped by category; or (kind guard) the codes of
    a guard model that mean this category."""

    category: str
    regex: tuple[str, ...] = ()
    phrases: tuple[str, ...] = ()
    description: str = ""
    guard: str | None = None
    """Kind guard: the guard (the config's `guards:`) that decides this category; None: regex and phrases."""
    codes: tuple[str, ...] = ()
    """Kind guard: the guard's category codes that mean this category."""

    @property
    def kind(self) -> str:
        return "guard" if self.guard else "rules"

    @property
    def name(self) -> str:
        """How a report names the rule: 'guard NAME' or 'rules'."""
        return f"guard {self.guard}" if self.guard else "rules"

    @classmethod
    def from_dict(cls, rule: dict[str, Any]) -> ForbiddenRule:
        """A rule from its rubric (or `as_dict`) form, already validated."""
        return cls.of(RuleDoc.model_validate(rule))

    @classmethod
    def of(cls, rule: RuleDoc) -> ForbiddenRule:
        """A rule from its rubric form, read."""
        return cls(category=rule.category, regex=tuple(rule.regex), phrases=tuple(rule.phrases),
                   description=rule.description, guard=rule.guard, codes=tuple(rule.codes))

    def as_dict(self) -> dict[str, Any]:
        return {
            "category": self.category,
            **({"kind": "guard", "guard": self.guard, "codes": list(self.codes)} if self.guard else {}),
            **({"description": self.description} if self.description else {}),
            **({"regex": list(self.regex)} if self.regex else {}),
            **({"phrases": list(self.phrases)} if self.phrases else {}),
        }


SHIPPED_METRICS = ("field_accuracy", "rouge", "bleu", "chrf")
"""The corpus metrics releasegate ships, as `releasegate:<name>` (their code: `scorers.shipped_metrics`)."""


@dataclass(frozen=True)
class EvaluateMetric:
    """A metric from the `evaluate` library, by hub name, local path or `releasegate:<name>`."""

    name: str
    module: str
    key: str | None = None
    slice: dict[str, Any] = field(default_factory=dict)

    @property
    def shipped(self) -> bool:
        """A metric releasegate ships (`releasegate:field_accuracy`, rouge, bleu, chrf): computed without the
        `evaluate` library (`scorers.shipped_metrics`), so it needs no `evaluate` extra."""
        return self.module in {f"releasegate:{name}" for name in SHIPPED_METRICS}

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "module": self.module, **({"key": self.key} if self.key else {}),
                **({"slice": dict(self.slice)} if self.slice else {})}


@dataclass(frozen=True)
class Rubric:
    """A validated rubric; forbidden rules inlined and module paths resolved, so a snapshot is self-contained."""

    path: Path
    name: str
    criteria: tuple[Criterion, ...]
    forbidden: tuple[ForbiddenRule, ...] = ()
    evaluate: tuple[EvaluateMetric, ...] = ()
    latency_from: str = "auto"
    allow_insufficient: bool = False
    stop_when_decided: bool = False
    """`check` asks the cases in a random order and stops once every criterion is decided (docs/stopping.md)."""
    max_client_lag_share: float = 0.1
    """Latency criteria are insufficient when the client's event-loop lag p99 exceeds this share of the measured
    TTFT p50: the client, not the target, was the bottleneck."""
    max_itl_batched_share: float = DEFAULT_MAX_ITL_BATCHED_SHARE
    """TPOT and ITL criteria are insufficient when more than this share of the gaps between content chunks were
    under 0.5 ms (the client's `itl_batched_share`): the stream was read in batches (a buffering proxy, a server
    flushing late, a client reading a backlog), so its stamps are the reader's, not the server's decode."""
    min_load_pair_share: float = DEFAULT_MIN_PAIR_SHARE
    """The least share of a criterion's cases the flip probe's pairs (an answer asked alone, answers asked beside
    others, both as observed) must cover before `load_flip_rate` or `load_accuracy_delta` decides anything."""
    baseline: dict[str, Any] | None = None
    """{'run': absolute path, 'margins': {...}, 'confidence': x}: paired comparison with a saved run; with
    'blessed' (the name), 'reports' (absolute), 'max_age_days' and 'on_stale' when the run is a blessed baseline."""
    review: ReviewPolicy = field(default_factory=ReviewPolicy)
    """Human review policy (`review:`); the defaults when the rubric has none (see releasegate.inputs.review_policy)."""
    judge: CalibrationPolicy = field(default_factory=CalibrationPolicy)
    """How well the LLM judge must agree with reviewers before judge-scored criteria decide (`judge:`)."""
    allow_overrides: tuple[str, ...] = ()
    """Judging config keys (globs) an override may change and the run still be released (`release:
    {allow_overrides: [...]}`); empty: none."""
    key_at: KeyAt = field(default=nowhere, compare=False, repr=False)
    """Where a key of the rubric file was written (`key_at("criteria", 0, "slice")`), for errors found later
    (a slice no case has). Not part of the snapshot."""

    def as_dict(self) -> dict[str, Any]:
        """The snapshot written into a run directory (`rubric.yaml`)."""
        return {
            "name": self.name, "latency_from": self.latency_from, "criteria": [c.as_dict() for c in self.criteria],
            **({"allow_insufficient": True} if self.allow_insufficient else {}),
            **({"stop_when_decided": True} if self.stop_when_decided else {}),
            **({"max_client_lag_share": self.max_client_lag_share} if self.max_client_lag_share != 0.1 else {}),
            **({"max_itl_batched_share": self.max_itl_batched_share}
               if self.max_itl_batched_share != DEFAULT_MAX_ITL_BATCHED_SHARE else {}),
            **({"min_load_pair_share": self.min_load_pair_share}
               if self.min_load_pair_share != DEFAULT_MIN_PAIR_SHARE else {}),
            **({"baseline": dict(self.baseline)} if self.baseline else {}),
            **({"forbidden": [r.as_dict() for r in self.forbidden]} if self.forbidden else {}),
            **({"evaluate": [m.as_dict() for m in self.evaluate]} if self.evaluate else {}),
            **({"release": {"allow_overrides": list(self.allow_overrides)}} if self.allow_overrides else {}),
            # always: the snapshot keeps the policy even if defaults change
            "review": self.review.as_dict(), "judge": self.judge.as_dict(),
        }


def load_rubric(path: Path) -> Rubric:
    """Load and validate a rubric; raise InputError naming file, line and field."""
    path = Path(path)
    data, node = load_yaml(path, what="rubric")
    if not isinstance(data, dict):
        raise InputError("a rubric must be a mapping with a 'criteria' list", file=path, line=1)
    validate(data, "rubric", file=path, node=node)
    at = key_at(path, node)
    doc = read_doc(RubricDoc, data, path)

    evaluate = tuple(_evaluate_metric(m, path.parent) for m in doc.evaluate)
    known = set(KNOWN_METRICS) | {m.name for m in evaluate}
    criteria = tuple(_criterion(c, i, known, at, doc.confidence) for i, c in enumerate(doc.criteria))
    _check_satisfiable(criteria, at)
    forbidden = _forbidden(doc.forbidden, path, at)
    return Rubric(
        path=path, name=doc.name if doc.name is not None else path.stem, criteria=criteria, forbidden=forbidden,
        evaluate=evaluate, latency_from=doc.latency_from, allow_insufficient=doc.allow_insufficient,
        stop_when_decided=doc.stop_when_decided, max_client_lag_share=doc.max_client_lag_share,
        max_itl_batched_share=doc.max_itl_batched_share, min_load_pair_share=doc.min_load_pair_share,
        baseline=_baseline(doc.baseline, path.parent, at), review=parse_policy(doc.review),
        judge=parse_calibration(doc.judge), key_at=at,
        allow_overrides=tuple(doc.release.allow_overrides if doc.release is not None else ()),
    )


def _criterion(raw: CriterionDoc, i: int, known: set[str], at: KeyAt, default_confidence: float | None = None) -> Criterion:
    metric = raw.metric
    if metric not in known:
        raise InputError(
            f"unknown metric '{metric}'", **at("criteria", i, "metric"),
            hint=did_you_mean(metric, sorted(known)) or "known: " + ", ".join(sorted(known)),
        )
    probe = {} if raw.probe is None else {"probe": None if raw.probe.lower() == "none" else raw.probe}
    if probe and metric not in ("forbidden_rate", "forbidden_rate_delta"):  # a probe family's rate (inputs.probes)
        raise InputError("probe: is for forbidden_rate", **at("criteria", i, "probe"))
    # probe: none is the cases that are no probe: their probe tag is absent, which a slice matches as None
    slice_ = {**raw.slice, **probe}
    name = raw.name or metric + "".join(f"[{k}={'none' if v is None else v}]" for k, v in slice_.items()) + (
        " (under load)" if raw.phase == "load" else "")
    confidence = raw.confidence
    if confidence is not None and metric not in BOUNDED_METRICS:
        raise InputError(
            f"metric '{metric}' has no confidence bound", **at("criteria", i, "confidence"),
            hint="remove confidence from this criterion (bounds exist for rates and latency percentiles)",
        )
    _check_whole_run(raw, i, at)
    if raw.phase != "quality" and metric not in LOAD_PHASE_METRICS:
        raise InputError(f"phase: load is for the quality rates ({', '.join(LOAD_PHASE_METRICS)})",
                         **at("criteria", i, "phase"), hint="remove phase, or gate one of those rates")
    if confidence is None and metric in BOUNDED_METRICS:
        confidence = default_confidence  # the rubric-wide default applies where a bound exists
    if confidence is None and metric == "cache_wrong_hit_rate":
        confidence = 0.95  # its upper bound decides: a cache that is wrong rarely in the suite may not be rarely wrong
    return Criterion(name=name, metric=metric, op=raw.op, threshold=raw.threshold, slice=slice_,
                     min_samples=raw.min_samples, confidence=confidence, phase=raw.phase)


def _check_whole_run(raw: CriterionDoc, i: int, at: KeyAt) -> None:
    """capacity_rps and the response-cache probe's figures are one figure for the whole run: no slice."""
    if raw.metric == "capacity_rps" and (raw.op in ("<=", "<") or raw.slice):
        raise InputError(
            "capacity_rps is one figure for the whole run, and a floor when the sweep never broke the objective",
            **at("criteria", i, "op" if raw.op in ("<=", "<") else "slice"),
            hint="use op '>=' or '>' and no slice",
        )
    if raw.metric.startswith("cache_") and raw.slice:
        raise InputError(f"{raw.metric} is one figure for the whole run (the response-cache probe)",
                         **at("criteria", i, "slice"), hint="remove the slice")


_SHARES = {"accuracy", "format_compliance", "forbidden_rate", "cache_hit_rate", "cache_wrong_hit_rate", *ERROR_METRICS,
           *(m for m in STABILITY_METRICS if m != "load_accuracy_delta")}


def _range_of(metric: str) -> tuple[float, float]:
    """The values a metric can take: shares in [0, 1], latency, throughput and cost >= 0 (others: anything)."""
    if metric in _SHARES:
        return 0.0, 1.0
    if metric == "load_accuracy_delta":  # a difference of two shares
        return -1.0, 1.0
    if metric in KNOWN_METRICS:
        return 0.0, math.inf
    return -math.inf, math.inf


def _check_satisfiable(criteria: tuple[Criterion, ...], at: KeyAt) -> None:
    """Refuse a rubric that no model can pass: a threshold outside the metric's range, a bound that can never
    reach it (a confidence bound of a share never reaches 0 or 1), or criteria on one metric and slice that
    contradict each other."""
    feasible: dict[tuple[Any, ...], tuple[float, bool, float, bool, int]] = {}
    for i, c in enumerate(criteria):
        low, high = _range_of(c.metric)
        if c.confidence and c.metric in _SHARES:
            low, high = max(low, 1e-12), min(high, 1 - 1e-12)  # Wilson bounds are strictly inside (0, 1)
        lo, lo_open, hi, hi_open = low, False, high, False
        if c.op in (">=", ">"):
            lo, lo_open = c.threshold, c.op == ">"
        else:
            hi, hi_open = c.threshold, c.op == "<"
        key = (c.metric, tuple(sorted((k, str(v)) for k, v in c.slice.items())))
        plo, plo_open, phi, phi_open, _ = feasible.get(key, (low, False, high, False, i))
        lo, lo_open = (lo, lo_open) if (lo, lo_open) > (plo, plo_open) else (plo, plo_open)
        hi, hi_open = (hi, hi_open) if (hi, not hi_open) < (phi, not phi_open) else (phi, phi_open)
        if lo > hi or (lo == hi and (lo_open or hi_open)) or lo > high or hi < low:
            bound = " at its confidence bound" if c.confidence and c.metric in _SHARES else ""
            raise InputError(
                f"criterion '{c.name}' can never pass: {c.metric} {c.op} {c.threshold:g}{bound} "
                f"(possible values {low:g}..{high:g}, together with the other criteria on this metric and slice)",
                **at("criteria", i, "threshold"), hint="fix the threshold or remove the contradicting criterion",
            )
        feasible[key] = (lo, lo_open, hi, hi_open, i)


def _forbidden(raw: str | list[RuleDoc] | None, rubric_path: Path, at: KeyAt) -> tuple[ForbiddenRule, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        file = named_file(rubric_path.parent / raw, what="forbidden-rules file", where=at("forbidden"),
                          base=rubric_path.parent)
        data, node = load_yaml(file, what="forbidden-rules file")
        validate(data, "forbidden", file=file, node=node)
        rules, rule_at = read_doc(RulesFileDoc, data, file).rules, partial(key_at(file, node), "rules")
    else:
        rules, rule_at = raw, partial(at, "forbidden")
    for i, rule in enumerate(rules):
        _check_kind(rule, partial(rule_at, i))
        for j, pattern in enumerate(rule.regex):
            check_regex(pattern, rule_at(i, "regex", j))
    return tuple(ForbiddenRule.of(rule) for rule in rules)


def _check_kind(rule: RuleDoc, at: KeyAt) -> None:
    """A guard rule names its guard and codes and nothing else; a rules rule has no guard."""
    is_guard = rule.kind == "guard" or "guard" in rule.model_fields_set
    if not is_guard:
        return
    if rule.kind not in (None, "guard"):
        raise InputError("a rule naming a guard is of kind guard", **at("kind"), hint="write kind: guard")
    for key, given in (("guard", rule.guard), ("codes", rule.codes)):
        if not given:
            raise InputError(f"a guard rule needs {key}", **at(), hint="e.g. {category: violence, kind: guard, "
                                                                       "guard: llama-guard, codes: [S1]}")
    if rule.regex or rule.phrases:
        raise InputError("a guard rule takes no regex or phrases: give them their own rule", **at("regex"))


def _baseline(raw: dict[str, Any] | None, here: Path, at: KeyAt) -> dict[str, Any] | None:
    """The `baseline:` with its run as an absolute path: `run` (relative to the rubric), or `blessed: NAME`, the run
    that name means now in the `reports` folder's baselines.jsonl (relative to the rubric; default `reports`). Both
    given (a run's rubric snapshot): the run is pinned, and the name only says which blessing it is."""
    if raw is None:
        return None
    doc = BaselineDoc.model_validate(raw)
    if doc.run is None and doc.blessed is None:
        raise InputError("baseline needs `run` (a run directory) or `blessed` (a name given by releasegate bless)",
                         **at("baseline"))
    given, reports = doc.run, None
    if doc.blessed is not None:
        reports, signers = (here / doc.reports).resolve(), _signers(doc, at)
        if given is None:
            try:
                given = str(reports / blessed(reports, doc.blessed, signers).run)
            except InputError as exc:
                raise InputError(exc.message, **at("baseline", "blessed"), hint=exc.hint) from None
    run = (here / str(given)).resolve()
    if not is_file(run / "records.jsonl"):
        raise InputError(f"baseline run has no records.jsonl: {run}", **at("baseline", "run"), hint="point at a run directory")
    return {**raw, **({"reports": str(reports)} if reports is not None else {}), "run": str(run)}


def _signers(doc: BaselineDoc, at: KeyAt) -> Signers:
    """`signed_by` as (name, PEM) pairs, each key proven an Ed25519 public key."""
    for i, signer in enumerate(doc.signed_by):
        if public_key_from_pem(signer.key) is None:
            raise InputError(f"baseline.signed_by[{i}].key ({signer.name}) is not an Ed25519 public key in PEM",
                             **at("baseline", "signed_by", i, "key"),
                             hint="releasegate attest --generate-key FILE writes one: FILE.pub")
    return tuple((s.name, s.key) for s in doc.signed_by)


def _evaluate_metric(raw: EvaluateDoc, here: Path) -> EvaluateMetric:
    module = raw.module
    local = here / module
    if not module.startswith("releasegate:") and exists(local):
        module = str(local.resolve())
    return EvaluateMetric(name=raw.name, module=module, key=raw.key, slice=dict(raw.slice))
