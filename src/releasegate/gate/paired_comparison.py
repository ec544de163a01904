"""Paired comparison of a candidate run with a baseline run on the cases they share.

A case is shared when both runs hold its id with the same contents (input and expected answer). Pass/fail
metrics (accuracy, format compliance, forbidden responses) are decided on Newcombe's paired score bounds of the
difference (`stats.paired_rate_bounds`; exact McNemar p is reported beside them), latency on a paired bootstrap
of the per-case difference. Each metric has a non-inferiority margin:

    regression    (fail)          even the one-sided bound on the better side puts the candidate worse than the
                                  margin
    non-inferior  (pass)          the one-sided bound on the worse side stays within the margin, on at least the
                                  shared cases that bound needs to show that margin at all (`stats.paired_min_n`;
                                  latency: LATENCY_MIN_PAIRS)
    inconclusive  (insufficient)  neither: more shared cases are needed

Cases of a stratified `sample:` suite weigh the source rows they stand for (docs/guarantees.md rule 10; `sample_weights`: the
stratum's rows over the shared cases of it), as the gate weighs them: the rates and the delta are weighted, and
the paired bound is taken on the weighted 2x2 table scaled to Kish's effective n of the weights, so the margin is
shown at the effective n, never at the count of an equal-allocation sample (exact McNemar p, a test of counts,
is then not reported). A case the two runs weigh as different strata leaves the rate undecided.

Under `generation.repeats` (the runs' draws given) accuracy, format compliance and the forbidden rate pair each
case's share of its draws (passing, or hitting) in the two runs, as the gate reads them: the paired 2x2 table
holds each case's expected cells (a case good in a share x of its draws in the baseline and y in the candidate puts
x*y in "good in both", x*(1-y) in "baseline only", and so on), so the delta is the difference of the per-draw
rates and the bound counts cases, never draws. A case whose draw 0 failed in either run is no pair, as without
repeats.

Bounds are one-sided at the comparison's confidence. No shared case, no metric judged on the shared cases, or a
case id with different contents in the two runs: `decision.comparison` then says INCONCLUSIVE, never PASS.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field
from statistics import fmean
from typing import Any

from ..data_classes import dataclass
from ..decision.comparison import latency_non_inferiority, non_inferiority
from ..decision.latency import widen
from ..inputs.rubric import ForbiddenRule
from ..record.decision_evidence import MIN_FRESH_REQUESTS
from ..record.evidence import answered, attempt_outcomes
from ..record.judge_verdicts import Verdicts
from ..record.metrics import select, slices_of
from ..record.records import CaseRecord
from ..scorers import score_records
from ..stats.intervals import mcnemar_exact, paired_bootstrap_delta, paired_min_n, paired_rate_bounds
from ..stats.sample_weights import Strata, case_weights, is_weighted, kish_n, source_of, stratum_counts
from .case_detail import flipped_cases
from .case_scores import CaseScores, case_scores
from .comparability import paired_hash
from .comparison_rows import Comparison
from .stability import CaseDraws, draw_share

__all__ = ["Margins", "compare_records", "changed_note", "DEFAULT_MARGINS", "LATENCY_MIN_PAIRS", "metric_verdicts",
           "RATE_KEYS", "LATENCY_METRICS", "UNKNOWN", "case_outcome"]
CHANGED_IDS_KEPT = 10

# rates: absolute difference; latency: share of the baseline mean
# (a rate margin of 0 can never be shown by a bound: forbidden_rate allows 0.02 like the others)
DEFAULT_MARGINS = {"accuracy": 0.02, "format_compliance": 0.02, "forbidden_rate": 0.02, "error_rate": 0.02,
                   "ttft_ms": 0.2, "tpot_ms": 0.2, "e2e_ms": 0.2}
Pair = tuple[CaseRecord, CaseRecord, CaseScores, CaseScores]
"""A shared case: the baseline's record and the candidate's, and the scores each is compared on."""
LATENCY_MIN_PAIRS = 30
"""Fewest paired timings a latency comparison decides on. The plain percentile bootstrap's one-sided 0.95 bound
of the mean difference covered 0.66-0.76 at 2 pairs, 0.89-0.92 at 10 and still only 0.92-0.94 at 30-50 (normal,
right-skewed gamma and lognormal-difference timings, 2000 runs each); read at the calibrated level below it
covered 0.946-0.967 from 30 pairs on (tests/test_comparability_stats.py checks it)."""
LATENCY_METRICS = ("ttft_ms", "tpot_ms", "e2e_ms")
_LATENCY_TAIL_SHARE = 0.5
"""The latency bound is the bootstrap's 1 - (1 - confidence) * 0.5 percentile (0.975 for a 0.95 bound)."""
RATE_KEYS = {"accuracy": ("answer", True), "format_compliance": ("format", True), "forbidden_rate": ("forbidden", False),
              "error_rate": ("error", False)}
"""Quality rates compare the pairs both arms answered; `error_rate` compares the failures of every shared case, on
their own (a failed request is neither a wrong answer nor a right one)."""


@dataclass(frozen=True)
class Margins:
    """Non-inferiority margins and the confidence of the comparison."""

    margins: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_MARGINS))
    confidence: float = 0.95
    lateness_ms: float = 0.0
    """The two clients' lateness summed: a paired latency difference may be off by up to it either way."""


def compare_records(
    base: list[CaseRecord], cand: list[CaseRecord], forbidden_rules: tuple[ForbiddenRule, ...],
    margins: Margins = Margins(), *, base_verdicts: Verdicts | None = None, cand_verdicts: Verdicts | None = None,
    base_draws: CaseDraws | None = None, cand_draws: CaseDraws | None = None, metrics: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Compare on shared cases: the same id AND the same contents (`comparability.paired_hash`: input, expected
    answer and how it is checked); an id whose contents differ between the runs is another case, left out and
    named in `changed_cases`.
    Both runs are re-scored with the same forbidden rules, judge-scored answers with each run's own LLM-judge
    verdicts (`llm_judge.run_verdicts`; without them they are unknown). `base_draws`, `cand_draws`: each run's
    repeated draws (`stability.case_draws`): the quality rates then pair each case's per-draw share. `metrics`:
    the only ones compared (a rubric's `baseline.metrics`; `error_rate` is always compared)."""
    base_by_id = {r.case_id: r for r in base}
    cand_by_id = {r.case_id: r for r in cand}
    common = [cid for cid in cand_by_id if cid in base_by_id]
    changed = [cid for cid in common if paired_hash(base_by_id[cid]) != paired_hash(cand_by_id[cid])]
    shared = [cid for cid in common if cid not in set(changed)]
    base_scores = score_records([base_by_id[cid] for cid in shared], forbidden_rules, base_verdicts)
    cand_scores = score_records([cand_by_id[cid] for cid in shared], forbidden_rules, cand_verdicts)
    repeats = (base_draws is not None and base_draws.repeated) or (cand_draws is not None and cand_draws.repeated)
    pairs = [(base_by_id[cid], cand_by_id[cid],
              _scored(base_by_id[cid], base_scores[cid], base_draws if repeats else None, forbidden_rules),
              _scored(cand_by_id[cid], cand_scores[cid], cand_draws if repeats else None, forbidden_rules))
             for cid in shared]
    strata = stratum_counts(_weighing(b, c) for b, c, _, _ in pairs)
    compared = [m for m in (*RATE_KEYS, *LATENCY_METRICS) if metrics is None or m in metrics]
    rows = [_rate_row(name, pairs, margins, strata) for name in RATE_KEYS if name != "error_rate" and name in compared]
    rows += [_error_row(pairs, margins, strata)]  # a request that fails more is always compared
    rows += [_latency_row(name, pairs, margins) for name in LATENCY_METRICS if name in compared]
    return {
        "shared_cases": len(shared),
        "pairs_answered": sum(answered(b) and answered(c) for b, c, _, _ in pairs),
        "only_in_baseline": len(base_by_id) - len(common),
        "only_in_candidate": len(cand_by_id) - len(common),
        "changed_cases": len(changed),
        "changed_case_ids": changed[:CHANGED_IDS_KEPT],
        # the same text case by case: what a merged model or another server must keep under greedy decoding
        "identical_outputs": sum(answered(base_by_id[c]) and base_by_id[c].output == cand_by_id[c].output for c in shared),
        "confidence": margins.confidence,
        "rows": [r for r in rows if r is not None],
        "slices": _slice_rows([p for p in pairs], margins, strata),
        "flipped": flipped_cases(pairs),  # pass -> fail and fail -> pass, case by case
    }


def metric_verdicts(comparison: dict[str, Any], metrics: Sequence[str] | None = None) -> tuple[tuple[str, str], ...]:
    """(metric, verdict) of a comparison's rows (only `metrics`, when given): what `decision.comparison` reads."""
    rows = Comparison.model_validate(comparison).rows
    return tuple((r.metric, r.verdict) for r in rows if metrics is None or r.metric in metrics)


def changed_note(comparison: dict[str, Any]) -> str | None:
    """One line naming the case ids whose contents differ between the runs; None when there are none."""
    compared = Comparison.model_validate(comparison)
    n = compared.changed_cases or 0
    if not n:
        return None
    ids = ", ".join(compared.changed_case_ids) + (", ..." if n > len(compared.changed_case_ids) else "")
    return f"{n} case id(s) name a different input or expected answer in the two runs, not compared: {ids}"


UNKNOWN = _UNKNOWN = "unknown"


def _scored(record: CaseRecord, score: dict[str, Any], found: CaseDraws | None,
            forbidden_rules: Sequence[ForbiddenRule]) -> CaseScores:
    """`score` read into its type, with its case's per-draw share on each quality rate when the case repeats."""
    scored = case_scores(score)
    draws = found.by_case.get(record.case_id) if found is not None else None
    if found is None or not draws:
        return scored
    by_id = {record.case_id: score}
    keys = [k for k, _ in RATE_KEYS.values() if k != "error"]
    return scored.model_copy(update={"draw_shares": {k: draw_share(draws, by_id, forbidden_rules, k, found.verdicts)
                                                     for k in keys}})


def case_outcome(key: str, record: CaseRecord, score: CaseScores | dict[str, Any]) -> bool | float | str | None:
    """Did this case pass on this metric (forbidden: did it hit)? None when the metric does not apply to it;
    'unknown' when the check could not be made (no judge verdict, no token count): never a pass or a fail. Under
    repeats (`draw_shares`): the case's per-draw share."""
    scored = score if isinstance(score, CaseScores) else case_scores(score)
    if key == "error":
        return not answered(record)
    if not answered(record):  # a failed request (an empty answer among them, `evidence`) is no pair to compare
        return None
    shares = scored.draw_shares
    if key == "forbidden":  # a guard with no verdict on the reply: unknown, as a judge's missing verdict
        found = scored.forbidden
        if found is not None and found.unknown:
            return _UNKNOWN
        if shares is not None:
            return _UNKNOWN if shares[key] is None else shares[key]
        return bool(found is not None and found.hit)
    part = scored.part(key)
    if part is not None and part.unknown:
        return _UNKNOWN
    if shares is not None and part is not None:  # under repeats: the case's per-draw share
        share = shares[key]
        return _UNKNOWN if share is None else share
    return part.passed if part is not None else None


def _rate_row(name: str, pairs: list[Pair], margins: Margins, strata: Strata | None = None) -> dict[str, Any] | None:
    """The paired row of a rate metric on the shared cases it applies to (`strata`: the shared cases per weighted
    stratum, `sample_weights.stratum_counts`)."""
    key, higher = RATE_KEYS[name]
    both = [(case_outcome(key, b, sb), case_outcome(key, c, sc), b, c) for b, c, sb, sc in pairs]
    both = [(x, y, b, c) for x, y, b, c in both if x is not None and y is not None]
    if not both or (key == "error" and not any(x or y for x, y, _, _ in both)):  # no failure on either side
        return None
    margin = margins.margins.get(name, DEFAULT_MARGINS[name])
    unknown = sum(_UNKNOWN in (x, y) for x, y, _, _ in both)
    if unknown:  # leaving them out could hide a regression: the metric is not compared
        return _undecided_row(name, len(both), margin, f"{unknown} of {len(both)} shared case(s) could not be "
                                                       "checked in one run or both")
    weights, why = _pair_weights([(b, c) for _, _, b, c in both], strata or {})
    if why:
        return _undecided_row(name, len(both), margin, why)
    outcomes = [(float(x), float(y)) for x, y, _, _ in both  # all known; under repeats a share of draws
                if isinstance(x, (bool, float)) and isinstance(y, (bool, float))]
    shared = not all(isinstance(x, bool) and isinstance(y, bool) for x, y, _, _ in both)
    goods = [(x, y) if higher else (1 - x, 1 - y) for x, y in outcomes]  # the 'good' share per case
    counts = _counts([(x == 1, y == 1) for x, y in goods]) if not shared else _shares(goods, [1.0] * len(goods))
    n = kish_n(weights) if weights else len(both)
    cells: tuple[float, float, float, float] = (_scaled(_shares(goods, weights), n) if weights else
                                                 counts)
    bounds = paired_rate_bounds(*cells, confidence=margins.confidence)  # baseline good rate - candidate's
    assert bounds is not None  # of the shared cases, at least one
    loss_lo, loss_hi = bounds
    needed = paired_min_n(margin, margins.confidence)
    verdict, note = non_inferiority(n, loss_lo, loss_hi, margin, needed, weighted=bool(weights))
    base_rate, cand_rate = _mean([float(x) for x, _ in outcomes], weights), _mean([float(y) for _, y in outcomes], weights)
    interval = [-loss_hi, -loss_lo] if higher else [loss_lo, loss_hi]
    extra = {"effective_n": n, "weighted": True} if weights else {}
    return {
        "metric": name, "n": len(both), "baseline": base_rate, "candidate": cand_rate, "delta": cand_rate - base_rate,
        "interval": interval, "margin": margin,
        "p_value": None if weights or shared else mcnemar_exact(int(counts[1]), int(counts[2])),
        "worse": counts[1] if not shared else round(counts[1], 6), "better": counts[2] if not shared else round(counts[2], 6),
        **({"per_draw": True} if shared else {}), "needed_n": needed, "verdict": verdict, **extra,
        **({"note": note} if note else {}),
    }


def _error_row(pairs: list[Pair], margins: Margins, strata: Strata) -> dict[str, Any] | None:
    """The paired error-rate row, undecided when either run sent fewer than MIN_FRESH_REQUESTS requests for the
    shared cases (answers reused from the response cache with no request known behind them send none): its
    failures are then unknown, as the gate's error guard says."""
    sent = min(len(attempt_outcomes([p[i] for p in pairs], cached=False)) for i in (0, 1)) if pairs else 0
    if pairs and sent < MIN_FRESH_REQUESTS:
        margin = margins.margins.get("error_rate", DEFAULT_MARGINS["error_rate"])
        return _undecided_row("error_rate", sent, margin, f"{sent} request(s) sent by one run for the shared cases: "
                              f"an error rate needs at least {MIN_FRESH_REQUESTS}")
    return _rate_row("error_rate", pairs, margins, strata)


def _undecided_row(name: str, n: int, margin: float, note: str) -> dict[str, Any]:
    return {"metric": name, "n": n, "baseline": None, "candidate": None, "delta": None, "interval": None,
            "margin": margin, "p_value": None, "worse": None, "better": None, "verdict": "insufficient", "note": note}


def _weighing(base: CaseRecord, cand: CaseRecord) -> CaseRecord:
    """The record whose stratum weighs a shared case: the candidate's when it is a weighted sample's, else the
    baseline's."""
    return cand if is_weighted(cand) or not is_weighted(base) else base


def _pair_weights(pairs: list[tuple[CaseRecord, CaseRecord]], strata: Strata) -> tuple[list[float] | None, str | None]:
    """(each shared case's weight, None) when a shared case is a weighted sample's, (None, None) when none is,
    (None, why) when a case stands for a different stratum in the two runs (which rows it speaks for is unknown)."""
    if not any(is_weighted(b) or is_weighted(c) for b, c in pairs):
        return None, None
    differ = [c.case_id for b, c in pairs if is_weighted(b) and is_weighted(c) and source_of(b) != source_of(c)]
    if differ:
        return None, (f"{len(differ)} shared case(s) stand for a different sample stratum in the two runs (e.g. "
                      f"{differ[0]}): which source rows they speak for is unknown")
    return case_weights([_weighing(b, c) for b, c in pairs], strata), None


def _mean(xs: list[float], weights: list[float] | None) -> float:
    return fmean(xs) if weights is None else sum(w * x for w, x in zip(weights, xs)) / sum(weights)


def _cell(x: bool, y: bool) -> int:
    """A pair's cell of the paired 2x2 table: good in both, in the baseline only, in the candidate only, in neither."""
    return 0 if x and y else 1 if x else 2 if y else 3


def _counts(goods: list[tuple[bool, bool]]) -> tuple[int, int, int, int]:
    """The paired 2x2 table of cases (see `_cell`)."""
    cells = [0, 0, 0, 0]
    for x, y in goods:
        cells[_cell(x, y)] += 1
    return cells[0], cells[1], cells[2], cells[3]


def _shares(goods: list[tuple[float, float]], weights: list[float]) -> tuple[float, float, float, float]:
    """The paired 2x2 table with `weights`, each case's good shares (1 or 0 for one draw) spread over the cells
    as independent draws of the two runs would fall: x*y good in both, x*(1-y) in the baseline only, ..."""
    cells = [0.0, 0.0, 0.0, 0.0]
    for (x, y), w in zip(goods, weights):
        for i, part in enumerate((x * y, x * (1 - y), (1 - x) * y, (1 - x) * (1 - y))):
            cells[i] += w * part
    return cells[0], cells[1], cells[2], cells[3]


def _scaled(cells: tuple[float, float, float, float], n: float) -> tuple[float, float, float, float]:
    """A weighted 2x2 table scaled to `n` cases (Kish's effective n): its shares kept, its size the information the
    weighted sample holds, so a score bound on it is taken at the effective n."""
    total = sum(cells)
    a, b, c, d = (x * n / total for x in cells)
    return a, b, c, d


def _latency_row(name: str, pairs: list[Pair], margins: Margins) -> dict[str, Any] | None:
    both = [(getattr(b.timing, name), getattr(c.timing, name)) for b, c, _, _ in pairs
            if answered(b) and answered(c) and not b.cached and not c.cached]  # a cached answer measured nothing
    both = [(x, y) for x, y in both if x is not None and y is not None]
    if len(both) < 2:
        return None
    xs, ys = [x for x, _ in both], [y for _, y in both]
    level = 1 - (1 - margins.confidence) * _LATENCY_TAIL_SHARE
    delta, interval = paired_bootstrap_delta(xs, ys, confidence=level, sided="one")
    assert interval is not None  # two pairs or more
    share = margins.margins.get(name, DEFAULT_MARGINS[name])
    margin = share * fmean(xs)
    verdict, note = latency_non_inferiority(len(both), widen(interval, margins.lateness_ms), margin, LATENCY_MIN_PAIRS)
    if margins.lateness_ms and verdict == "insufficient" and not note:
        note = f"the clients' lateness ({margins.lateness_ms:.1f} ms) widens the interval past the margin"
    return {
        "metric": name, "n": len(both), "baseline": fmean(xs), "candidate": fmean(ys), "delta": delta,
        "interval": list(interval), "margin": margin, "margin_share": share, "p_value": None,
        "needed_n": LATENCY_MIN_PAIRS, "verdict": verdict, **({"note": note} if note else {}),
    }


def _slice_rows(pairs: list[Pair], margins: Margins, strata: Strata | None = None) -> list[dict[str, Any]]:
    """Accuracy delta per slice (suite and low-cardinality tags), with McNemar p."""
    cands = [c for _, c, _, _ in pairs]
    by_id = {c.case_id: (b, c, sb, sc) for b, c, sb, sc in pairs}
    rows = []
    for slice_ in slices_of(cands):
        row = _rate_row("accuracy", [by_id[r.case_id] for r in select(cands, slice_)], margins, strata)
        if row is not None:
            (key, value), = slice_.items()
            rows.append({"slice": f"{key}={value}", **{k: row[k] for k in ("n", "baseline", "candidate", "delta", "p_value", "verdict")}})
    return rows
