"""The typed evidence every decision is made from (`releasegate.decision`): one record per decision input, with
no default for what a surface could forget. A surface gathers its numbers into these types; only the decision
module turns them into a verdict, an exit code, a choice or a recommendation.

What each arm of a decision carries: the population it speaks for (planned cases, evaluated cases, every cut of
them), its requests (attempts, answers and failures, those of the sessions whose cached answers it reuses
included), its obligations (required review pending or waived, undecided criteria), its measurement health
(an incomplete run, a target that failed, the client's lateness) and its provenance (rubric file, `extends:`
layers, `--set` overrides, inputs changed since the run).
"""

from __future__ import annotations

from ..data_classes import dataclass

__all__ = [
    "Population", "Requests", "Obligations", "Health", "Provenance", "Outcome", "GateEvidence", "Arm",
    "ComparisonEvidence", "Contender", "CacheRow", "CacheEvidence", "WhatIfEvidence", "MIN_FRESH_REQUESTS",
    "GuardCalibration", "GuardedCriterion",
]

MIN_FRESH_REQUESTS = 3
"""A rate bounded from fewer requests sent by the run itself (the rest answered from the response cache) decides
nothing: one or two fresh requests say nothing of the requests a user will send."""


@dataclass(frozen=True)
class Population:
    """The cases a decision speaks for."""

    planned: int
    """Cases the plan holds (run.json `cases`)."""
    evaluated: int
    """Cases with a record."""
    cuts: tuple[str, ...]
    """Every cut of the suites the run made, in words ('check --limit 5', 'suites[0].limit: 3 (tickets)',
    'matrix --limit 6'); empty: the whole suites ran. A declared `sample:` is no cut: it speaks for its source."""

    @property
    def cut(self) -> bool:
        return bool(self.cuts)

    def describe(self) -> str:
        """'on part of the suites only (check --limit 5)', or '' for the whole."""
        return f"on part of the suites only ({'; '.join(self.cuts)})" if self.cuts else ""


@dataclass(frozen=True)
class Requests:
    """The requests behind an arm's rates."""

    attempts: int
    """Every request sent, in every phase, retries and earlier sessions included."""
    failed: int
    answered: int
    """Cases answered."""
    cached: int
    """Cases answered from the response cache (no request sent in this session)."""
    fresh: int
    """Requests this session sent for the quality cases."""

    @property
    def error_rate(self) -> float | None:
        return self.failed / self.attempts if self.attempts else None


@dataclass(frozen=True)
class Obligations:
    """What must still happen before a PASS means what it says."""

    review_pending: bool
    """Required human review has not decided (labels missing or its bound straddles the minimum)."""
    review_waived: bool
    """Required review was pending and `--allow-pending` let the verdict through: the report and every choice
    built on it say so."""
    undecided: tuple[str, ...]
    """Names of the criteria that were not decided (each with its cause)."""
    unplaced_domains: tuple[str, ...] = ()
    """Domain tag values placed neither as high-risk nor as known low-risk (`review.unplaced_domains`)."""
    unplaced_reviewed: bool = False
    """Whether the rubric requires review of them (`unplaced_domains: require`) rather than naming them."""


@dataclass(frozen=True)
class Health:
    """Whether the measurement can be trusted."""

    problems: tuple[str, ...]
    """What keeps the run from being whole (incomplete, missing phase, edited evidence); empty: whole."""
    target_error: str | None
    """The line naming why the target could not be run (most requests failed); None: it was run."""
    client_lag_ms: float | None
    """The client's event-loop lateness (p99), which widens every latency bound it could have set."""


@dataclass(frozen=True)
class Provenance:
    """Where the decision's policy and inputs came from."""

    rubric: str
    """The rubric file (and its `extends:` layer, when composed)."""
    overrides: tuple[str, ...]
    """Every `--set KEY=VALUE` over the config."""
    inputs_changed: tuple[str, ...]
    """Inputs (suites, rubric, schemas) whose content differs from the run's manifest: a decision on them is a
    decision on other inputs."""

    def describe(self) -> str:
        parts = [f"rubric {self.rubric}"] if self.rubric else []
        if self.overrides:
            parts.append("--set " + ", ".join(self.overrides))
        return "; ".join(parts)


@dataclass(frozen=True)
class Outcome:
    """One criterion as the overall decision sees it."""

    name: str
    origin: str
    """'rubric', 'guard', 'review' or 'baseline': only a rubric criterion's pass can make a PASS."""
    verdict: str
    """'pass', 'fail' or 'insufficient'."""
    cause: str | None
    """Why an insufficient criterion is undecided (`decision.criterion.Undecided`)."""
    relaxable: bool
    """Whether `allow_insufficient` may let it stand undecided."""
    awaits_labels: bool = False
    """Open only until reviewers label the run (`decision.criterion.awaits_labels`): an uncalibrated guard or
    judge, review that does not decide yet."""


@dataclass(frozen=True)
class GateEvidence:
    """Everything the overall verdict of one run is decided from."""

    outcomes: tuple[Outcome, ...]
    population: Population
    requests: Requests
    obligations: Obligations
    health: Health
    provenance: Provenance
    allow_insufficient: bool
    sample_only: tuple[str, ...]
    """Suites whose `sample.estimate: sample` makes their rates describe the sample only."""


@dataclass(frozen=True)
class Arm:
    """One side of a comparison: a saved run as a reference or a candidate."""

    name: str
    verdict: str
    """Its own gate's verdict, judged again from its records."""
    population: Population
    requests: Requests
    health: Health
    review_waived: bool


@dataclass(frozen=True)
class ComparisonEvidence:
    """A paired comparison of a candidate with a reference, on the pairs both arms answered."""

    reference: Arm
    candidate: Arm
    metric_verdicts: tuple[tuple[str, str], ...]
    """(metric, 'pass' | 'fail' | 'insufficient') for each metric compared on the pairs."""
    pairs: int
    """Cases both arms hold with the same contents and both answered."""
    changed: int
    """Case ids whose contents differ between the arms."""
    reference_cases: int
    """Cases of the reference's plan: the pairs must cover `min_share` of them."""
    min_share: float
    """The least share of the reference's cases the pairs must cover (0: any)."""
    require_reference_pass: bool
    """Whether the reference's own gate must say PASS (servers, variants) or only be whole and measured
    (compare, whose reference is any earlier run)."""


@dataclass(frozen=True)
class Contender:
    """A served variant or a server, as a choice sees it."""

    name: str
    is_reference: bool
    verdict: str
    """Its gate's verdict (from its records)."""
    review_waived: bool
    not_comparable: str | None
    """Why it cannot be compared with the reference (another rubric, other settings); None: comparable."""
    parity: str | None
    """Its quality against the reference ('PASS' non-inferior, 'FAIL', 'INCONCLUSIVE'); None for the reference."""
    swept: bool
    capacity: tuple[float, float] | None
    """The range the capacity lies in (a floor: (X, inf)); None when no capacity was established."""
    cost: tuple[float, float] | None
    """The range its cost per 1M output tokens lies in (at capacity when swept); None: not measured."""
    e2e_p95: tuple[float, float] | None
    """The E2E p95's one-sided bounds (lower, upper); None: not decided."""
    speculative: bool
    draft_tokens: int | None
    """Draft tokens its server proposed (speculative only; None: not counted)."""
    speculation_changed: str | None
    """Why its speculation is not to be trusted (it changed greedy answers); None: it did not."""
    load_flip: tuple[float, float] | None = None
    """Its `load_flip_rate` and that rate's one-sided upper bound: the share of cases whose answer changed under
    its load; None: not measured (no load phase)."""
    flip_margin: float | None = None
    """The most answers a contender may change under load (the plan's quality margin); None: not checked."""
    load_flip_unknown: str | None = None
    """Why its load phase ran but its flip probe could not speak (no pair observed, too few cases covered); None:
    it spoke, or no load phase asked a case."""
    flip_variation: float | None = None
    """At temperature > 0: how often its own repeated draws disagree (`gate.load_quality.draw_variation`, a lower
    bound), the change sampling alone makes; None: greedy, or no draws (every change then counts)."""


@dataclass(frozen=True)
class CacheRow:
    """The simulated cache at one threshold."""

    threshold: float | None
    hits: int
    right_hits: int
    harmful_hits: int
    """Hits whose served answer fails the new case's checks while the model's own fresh answer passes them."""
    unknown_hits: int
    """Hits whose checks could not be made: never right, never proof of harm."""
    harmful_upper: float | None
    """The one-sided upper bound of the harmful share of hits."""


@dataclass(frozen=True)
class CacheEvidence:
    rows: tuple[CacheRow, ...]
    limit: float | None
    """The rubric's bound on the harmful share of hits (`cache_wrong_hit_rate`); None: no criterion."""
    min_hits: int
    error: str | None
    """Why the probe could not run (embeddings that could not be had or are degenerate)."""


@dataclass(frozen=True)
class WhatIfEvidence:
    """A saved run judged by another rubric."""

    whatif_verdict: str
    recorded_verdict: str | None
    """The verdict the run's own report holds (None: none readable)."""
    inputs_changed: tuple[str, ...]


@dataclass(frozen=True)
class ReleaseEvidence:
    """A saved run offered for release: to be blessed as a baseline, attested, or promoted."""

    run: str
    sealed: bool
    """A stage sealed the run's own files (manifest.json `sealed`)."""
    complete: bool
    """The run was whole when it was last sealed (run.json `complete`)."""
    verify_outcome: str
    """`releasegate verify`'s outcome: 'unchanged', 'changed' or 'unverified'."""
    changes: tuple[str, ...]
    """What verify found changed (inputs, packages, the run's own files), one short line each."""
    not_checked: tuple[str, ...]
    """What verify could not check (an input not hashed, the model behind an endpoint), one short line each."""
    recorded_verdict: str | None
    """The verdict of the run's sealed report.json (None: none readable)."""
    judged_again: str | None
    """The verdict under the run's own rubric judged again from its records, pending review holding it (None:
    its rubric snapshot is missing or edited)."""
    judged_by_own_rubric: bool
    """report.json was judged by the run's own rubric snapshot (not a what-if)."""
    overrides: tuple[tuple[str, str, bool], ...]
    """Every key laid over the official config ('--set', an `extends:` layer over the one naming the rubric, a
    what-if): (key, by whom, whether it judges: can change what is measured against the criteria)."""
    allow_overrides: tuple[str, ...]
    """The judging keys (globs, `*` any text) the run's own rubric lets an override change (`release:
    {allow_overrides}`)."""


@dataclass(frozen=True)
class AttestationEvidence:
    """A signed attestation checked before a deploy."""

    signature_problem: str | None
    """Why the envelope's signature does not stand for the given key (None: a good signature)."""
    statement_problem: str | None
    """Why the signed payload is not a releasegate statement (None: it is one)."""
    predicate_verdict: str | None
    artifacts: tuple[tuple[str, str | None], ...]
    """Each artifact given: its path and why it does not match a subject (None: it matches one)."""
    criteria_verdicts: tuple[str, ...]
    """Each attested criterion's verdict, as signed (a value that is no text: '?')."""
    weights_not_given: tuple[str, ...] | None
    """The attested weights files (every model, adapter, merged, GGUF or draft weights the run loaded) no
    --artifact carries, by subject name; None: the statement does not say which subjects are weights."""
    required_rubrics: tuple[str, ...]
    """The effective rubric hashes the deploy accepts (`--rubric-sha256`); empty: none required."""
    rubric_sha256: str | None
    """The attested effective rubric hash (None: the statement has none)."""
    judging_overrides: tuple[str, ...]
    """The attested overrides that judge, one line each ('--set suites[0].answer')."""
    test_result_problem: str | None = None
    """Why the in-toto test-result attestation beside it does not agree with it (None: it agrees, or none)."""


@dataclass(frozen=True)
class BlessedRunEvidence:
    """The run a blessed name means, as the gate finds it."""

    name: str
    run: str
    """The run directory's name."""
    evidence_matches: bool
    """Its evidence digest now is the one its blessing kept."""
    run_verdict: str | None
    """The verdict of its report.json now (None: none readable)."""
    signed_by: tuple[str, ...] = ()
    """The names of the keys one of which must have signed its blessing (the rubric's `baseline.signed_by`)."""
    signer: str | None = None
    """The name whose key signed the blessing (None: unsigned, or signed by none of `signed_by`)."""


@dataclass(frozen=True)
class BaselineAgeEvidence:
    """A blessed baseline as the gate finds it: how old, and what changed since it was measured."""

    name: str
    age_days: float | None
    """Days between the baseline run and this run (None: unknown)."""
    max_age_days: float | None
    """The rubric's `baseline.max_age_days` (None: no limit)."""
    packages_changed: tuple[str, ...]
    """Packages whose version differs between the baseline run and this run ('torch 2.3 -> 2.4')."""
    suites_changed: tuple[str, ...]
    """Suite files of the baseline run whose content changed since (or are gone)."""
    on_stale: str
    """The rubric's `baseline.on_stale`: 'warn' or 'inconclusive'."""


@dataclass(frozen=True)
class GuardCalibration:
    """A guard model as a criterion it feeds sees it: how many of the replies it judged reviewers labelled."""

    guard: str
    labelled: int
    """Replies with a reviewer's forbidden label that the guard gave a verdict on."""
    min_labels: int
    """The rubric's judge policy `min_labels`: fewer labels leave the guard uncalibrated."""
    misses: int = 0
    """Labelled replies reviewers call forbidden that the guard cleared (summed over the categories it decides)."""


@dataclass(frozen=True)
class GuardedCriterion:
    """A forbidden_rate criterion fed by guard verdicts."""

    name: str
    raw_verdict: str
    """The criterion's verdict on the guard's own word (the uncorrected rate): 'pass', 'fail' or 'insufficient'."""
    guards: tuple[GuardCalibration, ...]
    corrected_verdict: str | None
    """Its verdict on the guard-corrected rate; None when no corrected rate could be measured."""
    corrected_why: str
    """Why the corrected rate is missing or undecided ('' when it decided)."""
    paired: bool = False
    """A comparison with a baseline run (forbidden_rate_delta, the baseline comparison's forbidden row): decided on
    both runs' raw guard verdicts, since no corrected rate of the baseline exists."""
