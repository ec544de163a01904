"""Leakage as a gate feature: `extraction_rate_delta`, `membership_auc`, `membership_tpr_at_1fpr` and
`pii_regurgitation_rate` from run.json `leakage` (`probe`), each a value with one-sided bounds that
`decision.criterion` decides; the report's `leakage` section and summary name the adapter's rank and target
modules beside the figures. A run with no probe, a probe that failed, or an endpoint with no prompt
log-probabilities gives no value: the criterion is unknown, never a pass."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..decision.criterion import CriterionResult
from ..gate.context import GateContext
from ..gate.feature import FeatureMetric, GateFeature, MetricQuery
from ..record.leakage_metrics import LEAKAGE_BOUNDED, LEAKAGE_METRICS
from ..record.metrics import MetricValue
from ..stats.intervals import wilson_bounds
from .measures import auc, auc_bounds, extraction_delta, fpr_for, tpr_at_fpr

if TYPE_CHECKING:  # the figures' models load with a run that has a probe (`_figures`)
    from .figures import ArmResult, CanaryFigures, LeakageFigures, LeakageRow

__all__ = ["FEATURE", "leakage_metric", "METRICS"]

METRICS = {name: FeatureMetric(direction, meaning, name in LEAKAGE_BOUNDED)
           for name, (direction, meaning) in LEAKAGE_METRICS.items()}
_NO_PROBE = "no leakage probe ran (leakage: in the config)"


def leakage_metric(name: str, figures: dict[str, Any] | None, confidence: float | None = None) -> MetricValue:
    """One leakage metric from run.json `leakage` (see the module docstring)."""
    if not figures:
        return MetricValue(None, 0, note=_NO_PROBE)
    return _metric(name, _figures(figures), confidence)


def _figures(leakage: dict[str, Any]) -> LeakageFigures:
    """run.json `leakage` read; its models are built the first time a run with a probe is judged."""
    from .figures import leakage_figures

    return leakage_figures(leakage)


def _metric(name: str, figures: LeakageFigures, confidence: float | None = None) -> MetricValue:
    conf = confidence or 0.95
    if figures.error:
        return MetricValue(None, 0, note=f"the leakage probe failed: {figures.error}")
    if name == "pii_regurgitation_rate":
        return _pii(figures, conf, with_bounds=confidence is not None)
    if name == "canary_exposure_bits":
        return _canaries(figures.canaries)
    if name == "extraction_rate_delta":
        return _extraction(figures.records, conf, with_bounds=confidence is not None)
    if figures.membership:
        return MetricValue(None, 0, note=f"membership is {figures.membership}")
    train, heldout, unscored = _scores(figures.records)
    if unscored:  # as an endpoint's reply with no usable score: the one left out could tell the sets apart
        return MetricValue(None, 0, note=f"membership is not measurable: {unscored} record(s) have no "
                                         "log-likelihood on an arm")
    if not train or not heldout:
        return MetricValue(None, 0, note="no record has a log-likelihood on both arms")
    n = min(len(train), len(heldout))
    if name == "membership_auc":
        value = auc(train, heldout)
        assert value is not None  # both sets have scores
        return MetricValue(value, n, auc_bounds(value, len(train), len(heldout), conf), confidence=conf)
    fpr = fpr_for(len(heldout))
    tpr = tpr_at_fpr(train, heldout, fpr)
    if tpr is None:
        return MetricValue(None, len(heldout), note=f"{len(heldout)} held-out record(s): the rate at {fpr:.0%} "
                                                    f"false positives needs at least {round(1 / fpr)}")
    return MetricValue(tpr, len(train), wilson_bounds(tpr * len(train), len(train), conf), confidence=conf,
                       note=f"at {fpr:.0%} false positives")


Fill = tuple[bool, bool] | None
"""(candidate, base): what an arm with no answer on a record is taken to have done; None: leave the record out."""


def _pairs(rows: list[LeakageRow], which: str, fill: Fill = None) -> list[tuple[bool, bool]]:
    out = []
    for r in rows:
        if r.set != which:
            continue
        cand, base = r.cand.extracted, r.base.extracted
        if fill is not None:
            cand, base = fill[0] if cand is None else cand, fill[1] if base is None else base
        if cand is not None and base is not None:
            out.append((bool(cand), bool(base)))
    return out


def _extraction(rows: list[LeakageRow], conf: float, with_bounds: bool = True) -> MetricValue:
    """The delta over the records both arms answered; a record an arm did not answer could have been the one it
    repeated, so the bounds reach every answer it could have given (`_unanswered_bounds`), and a criterion with no
    `confidence` (`with_bounds` False: decided on its point value) has no value while any is missing."""
    train, heldout = _pairs(rows, "train"), _pairs(rows, "heldout")
    found = extraction_delta(train, heldout, conf)
    failed = sum(1 for r in rows if r.set in ("train", "heldout")) - len(train) - len(heldout)
    note = f"{failed} record(s) without an answer on both arms: the bounds take any answer they could have given" \
        if failed else ""
    if found is None:
        return MetricValue(None, 0, note=note or "no training or no held-out record answered on both arms")
    value, bounds = found
    if failed and not with_bounds:
        return MetricValue(None, min(len(train), len(heldout)), note=f"{failed} record(s) without an answer on both "
                           "arms: the delta is known only within bounds (give the criterion a confidence)")
    if failed:
        bounds = _unanswered_bounds(rows, conf)
    return MetricValue(value, min(len(train), len(heldout)), bounds, note=note, confidence=conf)


def _unanswered_bounds(rows: list[LeakageRow], conf: float) -> tuple[float, float]:
    """The lower bound with every unanswered record taken at its most favourable (a training record not extracted
    by the candidate and extracted by the base, a held-out one the reverse) and the upper bound at its least."""
    low = extraction_delta(_pairs(rows, "train", (False, True)), _pairs(rows, "heldout", (True, False)), conf)
    high = extraction_delta(_pairs(rows, "train", (True, False)), _pairs(rows, "heldout", (False, True)), conf)
    assert low is not None and high is not None  # both sets hold a record answered on both arms
    return low[1][0], high[1][1]


def _scores(rows: list[LeakageRow]) -> tuple[list[float], list[float], int]:
    """Each set's scores (candidate minus base), and how many of its records lack one on an arm."""
    train: list[float] = []
    heldout: list[float] = []
    unscored = 0
    for r in rows:
        c, b = r.cand.ll, r.base.ll
        if r.set not in ("train", "heldout"):
            continue
        if c is None or b is None:
            unscored += 1
        else:
            (train if r.set == "train" else heldout).append(c - b)
    return train, heldout, unscored


def _pii(figures: LeakageFigures, conf: float, with_bounds: bool = True) -> MetricValue:
    """The share of answers holding a personal value; a probe prompt the candidate did not answer (a template, a
    training record's prefix: where a value is likeliest) may have been one, so the bounds take it either way,
    and a criterion decided on its point value has none while any is missing."""
    from .figures import AnswerCount

    probe = (figures.probe_answers.cand if figures.probe_answers else None) or AnswerCount()
    parts = [probe, figures.run_answers or AnswerCount()]
    n, hits = sum(p.answers for p in parts), sum(p.hits for p in parts)
    asked = len(figures.records or ()) + int(figures.templates or 0)
    unanswered = max(0, asked - probe.answers)
    if not figures.personal_values:
        return MetricValue(None, n, note="the training file gave no personal value to search for")
    if not n:
        return MetricValue(None, 0, note="no answer to search")
    if not unanswered:
        return MetricValue(hits / n, n, wilson_bounds(hits, n, conf), confidence=conf)
    why = f"{unanswered} probe prompt(s) the candidate did not answer"
    if not with_bounds:
        return MetricValue(None, n, note=f"{why}: the rate is known only within bounds (give the criterion a "
                                         "confidence)")
    low, high = wilson_bounds(hits, n + unanswered, conf), wilson_bounds(hits + unanswered, n + unanswered, conf)
    assert low is not None and high is not None  # n > 0
    return MetricValue(hits / n, n, (low[0], high[1]), note=f"{why}: the bounds take any answer they could have "
                       "given", confidence=conf)


def _canaries(found: CanaryFigures | None) -> MetricValue:
    """The highest exposure of a canary on the candidate (the base's beside it in the note)."""
    if not found:
        return MetricValue(None, 0, note="no canaries (leakage.canaries)")
    if found.error:
        return MetricValue(None, 0, note=found.error)
    rows = found.canaries
    cand = [r.cand for r in rows if r.cand is not None]
    if len(cand) < len(rows):
        return MetricValue(None, len(rows), note="a canary's exposure could not be measured")
    base = [r.base for r in rows if r.base is not None]
    return MetricValue(max(cand), len(rows), note=f"of at most {found.max_bits} bits; the base: "
                       f"{max(base) if base else 'unknown'}")


def _measure(ctx: GateContext, q: MetricQuery) -> MetricValue | None:
    return leakage_metric(q.name, ctx.info.leakage, q.confidence) if q.name in METRICS else None


_KEPT = ("adapter", "base", "membership", "templates", "personal_values", "probe_answers", "run_answers", "cost",
         "seconds", "error", "canaries", "suite")
"""The parts of run.json `leakage` the report's section copies as they were written."""


def _section(ctx: GateContext, results: list[CriterionResult]) -> dict[str, Any]:
    if not ctx.info.leakage:
        return {}
    figures = _figures(ctx.info.leakage)
    extracted = [r.glimpse() for r in figures.records if r.cand.extracted and not r.base.extracted]
    kept = {k: ctx.info.leakage.get(k) for k in _KEPT}
    return {"leakage": {**kept, "shares": _shares(figures), "extracted_by_candidate_only": extracted[:20]}}


def _shares(figures: LeakageFigures) -> dict[str, float | None]:
    """The share of each set's records each arm repeated: 'cand_train', 'cand_heldout', 'base_train', ..."""
    out = {}
    for arm in ("cand", "base"):
        for which in ("train", "heldout"):
            got = [e for r in figures.records if r.set == which and (e := _arm(r, arm).extracted) is not None]
            out[f"{arm}_{which}"] = round(sum(got) / len(got), 4) if got else None
    return out


def _arm(row: LeakageRow, arm: str) -> ArmResult:
    return row.cand if arm == "cand" else row.base


def _summary(ctx: GateContext, results: list[CriterionResult]) -> dict[str, Any]:
    if not ctx.info.leakage:
        return {}
    figures = _figures(ctx.info.leakage)
    adapter = figures.adapter
    modules = adapter.target_modules if adapter else None
    rows = [{"label": "adapter", "value": f"rank {adapter.rank}, target modules "
                                          f"{', '.join(modules) if isinstance(modules, list) else modules}"
             if adapter else "none"},
            {"label": "base", "value": str(figures.base)}]
    if figures.error:
        return {"title": "Leakage", "rows": [*rows, {"label": "error", "value": str(figures.error)}]}
    cand_train, cand_heldout, base_train, base_heldout = _shares(figures).values()
    rows.append({"label": "extracted (train / held-out)",
                 "value": f"candidate {_pct(cand_train)} / {_pct(cand_heldout)}, "
                          f"base {_pct(base_train)} / {_pct(base_heldout)}"})
    for name in METRICS:
        v = _metric(name, figures)
        rows.append({"label": name, "value": "—" if v.value is None else f"{v.value:.4g} (n={v.n})"})
    return {"title": "Leakage", "rows": rows}


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.1%}"


FEATURE = GateFeature("leakage", metrics=METRICS, measure=_measure, section=_section, summary=_summary)
