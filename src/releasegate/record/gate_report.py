"""The gate report: the one typed result of judging a run (what report.json holds). `judge_run` builds it once;
report.json is its JSON form, and every renderer (terminal, Markdown, HTML, JUnit, CSV) renders a report validated
against this model, so a hand-edited or truncated report.json is a clear input error, not a traceback. Every field
is documented here; docs/guarantees.md says what the verdict means."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from ..border.files import exists, read_text, sha256_file
from ..border.structured import json_loads
from ..errors import InputError
from .cache_probe_report import CacheProbeSection
from .capacity_sweep import CapacitySweep
from .records import RunDir
from .report_sections import ConfidenceSequence, JudgeSection, ReviewRow
from .sealed import seal_of
from .stability_report import StabilitySection

__all__ = ["GateReport", "CriterionRow", "MetricRow", "PhaseCounts", "Counts", "FailingCase", "LatencyExcluded",
           "JudgedBy", "LatencySource", "FeatureSection", "SectionRow", "as_report", "typed_report", "load_report"]

Verdict = Literal["PASS", "FAIL", "NEEDS_REVIEW", "INCONCLUSIVE", "TARGET_ERROR"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)  # built when first used (model_base); a newer report read by an older renderer keeps what it does not know


class MetricRow(_Model):
    """A metric's value over a set of records."""

    value: float | None
    """The point value; None when there was nothing to measure."""
    n: int
    """Samples behind it: cases for rates, requests for latency (ITL too), outputs for the forbidden rate."""
    interval: list[float] | None = None
    """[lower, upper] when both bounds exist."""
    bounds: list[float | None] | None = None
    """[lower, upper], each one-sided at `confidence`; a side is null when the sample is too small to give it."""
    confidence: float | None = None
    """The confidence of `bounds` (each side one-sided)."""
    note: str | None = None
    """How the value was made, or why there is none (e.g. requests left out of a latency figure)."""


class CriterionRow(MetricRow):
    """A criterion of the gate with its measured value and verdict."""

    name: str
    metric: str
    op: Literal[">=", ">", "<=", "<"]
    threshold: float
    slice: dict[str, Any] | None = None
    min_samples: int | None = None
    phase: Literal["quality", "load"] | None = None
    """`load`: a quality rate of the load phase's answers; absent for the quality cases."""
    origin: Literal["guard", "baseline", "review"] | None = None
    """Absent for a criterion of the rubric; 'guard' (the default error-rate guard), 'baseline' (a comparison
    with the baseline run) or 'review' (human approval)."""
    verdict: Literal["pass", "fail", "insufficient"]
    reason: str = ""
    needed_n: int | None = None
    """For an insufficient criterion gated at a confidence: about how many samples would decide it."""
    undecided_cause: Literal["samples", "unknown", "review", "judge", "client", "capacity", "baseline"] | None = None
    """For an insufficient criterion: why (`criteria.Undecided`); only 'samples' may be relaxed by
    `allow_insufficient`, and a None cause never is."""


class PhaseCounts(_Model):
    """The requests of one phase: every attempt counts (`record.evidence`)."""

    requests: int
    """Requests sent: every attempt (earlier journal lines of a case, in-run retries) plus cached records."""
    succeeded: int
    """Cases whose outcome is an answer (no error, non-empty output)."""
    failed: int
    """Failed attempts."""
    errors: dict[str, int]
    """Failed attempts by error class (connection_error, http_5xx, empty_response, ...)."""
    cached: int
    """Records whose output came from the response cache."""
    error_rate: float | None
    """failed / requests."""
    repaired: int = 0
    """Outputs that held invalid Unicode (recorded with U+FFFD, `output_repaired`), scored as recorded."""
    cases: int | None = None
    """Records of the phase (one per case in the quality phase)."""
    failed_cases: int | None = None
    """Cases whose last attempt failed."""
    retried_cases: int | None = None
    """Cases that took more than one attempt."""
    ledger: dict[str, Any] | None = None
    """The attempts counted from the attempts ledger (`record.ledger`), per phase: `attempts`, `failed` and `from`
    (a cut load phase's session, a cached answer's session -> its attempts and failed attempts); only when any."""


class Counts(_Model):
    """Cases of the quality phase (the first keys) and requests of every phase."""

    cases: int
    succeeded: int
    """Cases whose outcome is an answer (no error, non-empty output): the reports say "answered"."""
    right: int | None = None
    """Answered cases that passed every check (no failed check, no forbidden hit); null in reports that predate it."""
    errors: dict[str, int]
    cached: int
    phases: dict[str, PhaseCounts] = {}
    """'quality', 'load' (when the run had a load phase) and 'all'."""


class LatencyExcluded(_Model):
    """How many requests the latency figures leave out, and why."""

    requests: int
    measured: int
    failed: dict[str, int]
    cached: int


class FailingCase(_Model):
    """A case with an error, a failed check or a forbidden hit."""

    case_id: str
    suite: str
    output: str
    """The first 300 characters of the output ('' for a failed request)."""
    why: list[str]
    """Why the case failed, one phrase per problem (an error class, a failed check with its detail, a hit)."""
    input: str = ""
    """The input as sent: the prompt, or one 'role: content' line per message (first 1,000 characters)."""
    user_message: str = ""
    """What the case asks: its last user message, or its prompt (first 1,000 characters)."""
    user_turns: int | None = None
    """How many user messages the case has (1 for a prompt; null in reports that predate it)."""
    system_prompt: str = ""
    """The case's system message(s), one per line ('' for none; first 1,000 characters)."""
    expected: str = ""
    """The expected answer, as JSON unless it is a string ('' for none; first 1,000 characters)."""
    error_message: str | None = None
    """For a failed request, what the server or the client said (e.g. the server's reason for an HTTP 400)."""
    checks: list[dict[str, Any]] = []
    """Every check of the case: {'check', 'passed' (null: could not be made), 'detail'} (`gate.case_detail`)."""
    reviews: list[dict[str, Any]] = []
    """The reviewers' current labels of the case: {'reviewer', 'label', 'reason'}."""


class JudgedBy(_Model):
    """The rubric file that judged a report, so that no report passes for the verdict of another rubric."""

    file: str
    """'rubric.yaml' (the run's own snapshot) or the path given to `gate --rubric` (a what-if)."""
    sha256: str | None
    """sha256 of that file's bytes (null when it could not be read)."""
    snapshot_sha256: str | None
    """sha256 of the run's rubric snapshot, rubric.yaml (the rubric the run started with)."""
    source: str | None = None
    """The rubric file the run's snapshot was taken from (manifest.json's rubric input); null when unknown."""
    named_by: str | None = None
    """Where `rubric:` named that file outside the run's config (an `extends:` base, '--set rubric'); null: itself."""
    whatif: bool
    """True when judged by another policy than the run's own: a what-if, written beside the run's reports, never over."""
    whatif_verdict: str | None = None
    """A what-if: the verdict the other rubric gave (the report's `verdict` is INCONCLUSIVE when that was PASS and
    the run's recorded verdict was not: a what-if never exits 0 over a run that did not pass)."""
    records_sha256: str | None = None
    """sha256 of records.jsonl as the gate read it: `report` refuses rows from a journal changed since."""
    load_sha256: str | None = None  # load.jsonl's, the same way (its plots); absent: the run had no load phase
    judgments_sha256: str | None = None  # judgments.jsonl's (the judge's and guards' verdicts in the rows); absent: none read
    recorded_verdict: str | None = None
    """A what-if: the run's verdict under its own rubric snapshot, judged again from its records (never read from
    report.json); null when the snapshot is missing or edited since it was sealed."""
    effective_sha256: str | None = None
    """sha256 of the effective rubric that judged: the rubric with every judging key of the run's config
    (`pipeline.rubric_binding`); null in a report written before it was kept."""
    overrides: list[dict[str, Any]] | None = None
    """Every override of the official config the report was judged with: {key, by, judges} (`--set`, an
    `extends:` layer over the config naming the rubric, a what-if)."""


class LatencySource(_Model):
    """Where latency figures come from (`gate.latency_source`)."""

    phase: str | None = None
    in_flight: int | None = None
    """Most requests in flight; null when not recorded."""
    text: str | None = None
    """E.g. 'load phase, closed loop, 1 in flight, 80 requests'."""


class PopulationRow(_Model):
    """The cases a verdict speaks for."""

    planned: int
    """Cases the run planned."""
    evaluated: int
    """Cases with a record."""
    cuts: list[str] = []
    """Every cut of the suites the run made ('--limit 5', 'suites[0].limit: 3 (tickets)'): a run on part of its
    suites speaks for that part only (INCONCLUSIVE)."""


class ObligationsRow(_Model):
    """What the verdict still owes."""

    review_pending: bool = False
    """Required human review has not decided and blocks the verdict (NEEDS_REVIEW)."""
    review_waived: bool = False
    """Required human review was pending and `--allow-pending` let the verdict through: not reviewed."""
    unplaced_domains: list[str] = []
    """Domain tag values releasegate placed neither as high-risk nor as known low-risk (`review.unplaced_domains`):
    named in the verdict line, and reviewed as required domains under `unplaced_domains: require`."""


class SectionRow(_Model):
    """One line of a feature's summary: a label and its value as shown."""

    label: str
    value: str


class FeatureSection(_Model):
    """A gate feature's summary (`gate.feature.GateFeature.summary`), shown as it is by every renderer."""

    feature: str
    """The registered feature that made it."""
    title: str
    rows: list[SectionRow] = []


class GateReport(_Model):
    """The verdict on one run and everything it was decided from."""

    run_id: str
    target: str
    """The model under test, credentials masked."""
    computed: dict[str, Any] | None = None  # where it was computed, as run.json says (local, or Ray and its workers)
    rubric: str
    """The name of the rubric that judged the run (its `name:`, else its file's stem)."""
    judged_by: JudgedBy | None = None
    """Which rubric file judged this report, its sha256, and whether it was a what-if; absent in reports that
    predate it."""
    verdict: Verdict
    exit_code: Literal[0, 1, 3, 4]
    verdict_reason: str = ""
    """Why the run got its verdict, in one line."""
    population: PopulationRow | None = None
    """The cases the verdict speaks for and every cut of them; absent in reports that predate it."""
    obligations: ObligationsRow | None = None
    """Required review pending or waived; absent in reports that predate it."""
    incomplete: str | None = None
    """What keeps the run from being judged as a whole (INCONCLUSIVE), or null."""
    target_error: str | None = None
    """Why the target could not be run (TARGET_ERROR), or null."""
    comparison: dict[str, Any] | list[Any] | None = None
    """The paired comparison with the rubric's baseline run, when it has one."""
    criteria: list[CriterionRow]
    latency_from: Literal["quality", "load", "both"] = "quality"
    """Which requests latency, throughput and cost come from."""
    latency_source: LatencySource | None = None
    """Where the latency figures of `metrics` and `criteria` come from: {'phase', 'in_flight' (most requests in
    flight; null when not recorded), 'text' (e.g. 'load phase, closed loop, 1 in flight, 80 requests')}
    (`gate.latency_source`)."""
    slices_latency_source: LatencySource | None = None
    """Where the latency columns of `slices` come from, in the same shape: always the quality cases (load-phase
    requests carry no case tags), so they may differ from `latency_source`."""
    metrics: dict[str, MetricRow] = {}
    """Every summary metric over all cases."""
    latency_excluded: LatencyExcluded | None = None
    client_lateness_ms: float | None = None
    """How late the client measured latency (its loop lag p99, plus the openai client's send lag p99): every
    latency criterion, and a server's E2E p95 range in `servers`, is widened by it."""
    client_saturated: str | None = None
    """Why latency, throughput and cost criteria are insufficient when the client was the bottleneck (its event
    loop ran late by more than the rubric's `max_client_lag_share` of TTFT p50), or null."""
    load_phase: dict[str, Any] | None = None
    prefix_cache: dict[str, Any] | None = None
    """The prefix-cache probe (see releasegate.run.prefix_cache): warm and cold TTFT P50/P95 with n, prompt and
    server-reported cached prompt tokens per request, `saved_ms_p50` and `cold_over_warm_p50`; null without one."""
    response_cache_probe: CacheProbeSection | None = None
    """A cache in front of the deployed model, simulated on the run's answers (see record.cache_probe_report);
    null without `response_cache_probe:`."""
    capacity: CapacitySweep | None = None
    """The capacity sweep judged again (see releasegate.gate.capacity): every step with its figures and verdict,
    `capacity_rps` (null when unknown, with `why`), the server signals and scale-out thresholds at the capacity,
    and the cost per 1M output tokens there; null when the load phase was no sweep."""
    slices: list[dict[str, Any]] = []
    """Per-slice figures: {'slice': 'task=x', 'n': ..., metric: value, ...}."""
    counts: Counts | None = None
    """Absent only in a report built by hand in Python (a report.json must have it: `load_report`)."""
    failing_cases: list[FailingCase]
    """The first failing cases (at most 1,000; `failing_cases_total` says how many there are)."""
    failing_cases_total: int | None = None
    forbidden_rules: list[dict[str, Any]] | None = None
    """The forbidden rules the run was judged with: the per-case tables of every format are scored with them."""
    review: dict[str, ReviewRow] | dict[str, Any]
    """Human review, one row per slice ('all' first); see releasegate.review.summary. A section holding any row
    must be rows throughout: one entry of another shape beside them makes the report unreadable (exit 2), never a
    report without its review (JUnit and Markdown would drop the pending review and read green). A section of
    another shape altogether (no row in it) is kept as it is, shown by the HTML, and `review_rows` is empty."""

    @field_validator("review", mode="before")
    @classmethod
    def _rows_throughout(cls, value: Any) -> Any:
        if isinstance(value, dict) and any(_row_like(v) for v in value.values()):
            for name, row in value.items():
                try:
                    ReviewRow.model_validate(row)
                except ValidationError as exc:
                    raise ValueError(f"{name!r} is not a review row ({exc.errors()[0]['msg']})") from None
            return {name: ReviewRow.model_validate(row) for name, row in value.items()}
        return value
    stability: StabilitySection | None = None
    """The repeated draws and the flip table (see releasegate.gate.stability); absent when the run neither
    repeats its cases nor is gated on answers under load."""
    guard: dict[str, Any] | None = None
    """Guard models (forbidden rules of kind guard), by name: `labelled` (replies with a reviewer forbidden label it
    judged), `min_labels`, `calibrated`, and per rubric category its miss and false-alarm rates with one-sided
    Wilson bounds (see releasegate.llm_judge.guard_error)."""
    sections: list[FeatureSection] = []
    """The summaries of the gate features that show one (`gate.feature`), in registry order; absent when none does."""
    confidence_sequences: list[ConfidenceSequence] = []  # a run that may stop: see record.confidence_sequences
    judge: JudgeSection | None = None
    """The LLM judge, when cases are judge-scored: model, fingerprint, calls, cached verdicts, errors by class,
    the judge's own tokens and cost (never in the model's figures), the calibration policy, and `calibration`:
    per judge criterion, agreement with the reviewers (its lower bound), Cohen's kappa, the confusion table,
    whether it is calibrated and why, and the same per slice. See releasegate.llm_judge."""


    @property
    def review_rows(self) -> dict[str, ReviewRow]:
        """The review section's rows by slice; empty when it holds no row (`review`)."""
        return {name: row for name, row in self.review.items() if isinstance(row, ReviewRow)}

    @property
    def whatif(self) -> bool:
        """Whether another rubric than the run's own judged it (`gate --rubric`: `judged_by.whatif`)."""
        return bool(self.judged_by and self.judged_by.whatif)

    def as_json(self) -> dict[str, Any]:
        """The JSON form, what report.json holds: keys the report did not have stay absent."""
        return self.model_dump(mode="json", exclude_unset=True)


def as_report(report: GateReport | dict[str, Any], *, source: str | Path | None = None) -> GateReport:
    """`report` as a GateReport: a dict is validated once. A dict that does not fit (a hand-edited or truncated
    report.json) is an InputError naming `source`."""
    if isinstance(report, GateReport):
        return report
    try:
        return GateReport.model_validate(report)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(f"not a releasegate report: {where}: {first['msg']}", file=source,
                         hint="judge the run again: releasegate gate RUN_DIR") from None


def typed_report(report: dict[str, Any], *, source: str | Path | None = None) -> dict[str, Any]:
    """`report` checked against GateReport, returned in the same JSON shape (keys it did not have stay absent)."""
    return as_report(report, source=source).as_json()


def load_report(run: RunDir) -> GateReport:
    """The saved report.json of a run directory, read through its seal: in a sealed run, a report.json that is not
    the file the seal names (edited by hand since the gate wrote it) is an input error naming it, never rendered
    or acted on as the run's verdict. A run with no seal at all (older, or built by hand) is read as it is; `history`
    marks it unsealed."""
    path = run.path / "report.json"
    if not exists(path):
        run.read_info()  # not a run directory at all: say that instead
        raise InputError("run has no report.json", file=run.path, hint=f"judge it first: releasegate gate {run.path}")
    try:
        report = json_loads(read_text(path, what="report.json"))
    except (ValueError, RecursionError) as exc:
        raise InputError(f"unreadable report.json: {exc}", file=path) from None
    missing = [key for key in GATE_WRITES if isinstance(report, dict) and key not in report]
    if missing:  # truncated or hand-edited: rendered, it would read as complete (no counts, "quality" latency)
        raise InputError(f"not a releasegate report: {missing[0]}: Field required", file=path,
                         hint="judge the run again: releasegate gate RUN_DIR")
    typed = as_report(report, source=path)
    state = seal_of(run.path, "report.json", sha256_file(path, what="report.json"))
    if state == "unreadable":  # the seal itself is what cannot be read: name it, not the report
        raise InputError("manifest.json or its seal cannot be read, so nothing vouches for report.json",
                         file=run.path / "manifest.json", hint=f"see releasegate verify {run.path}")
    if state == "differs":
        raise InputError("report.json is not the file the run's seal names (edited since the gate wrote it): its "
                         "verdict is not the run's", file=path, hint=f"judge the run again: releasegate gate {run.path}")
    return typed


GATE_WRITES = ("latency_from", "metrics", "slices", "counts")
"""Parts every report the gate writes has, which the model lets a report built in Python leave out."""


def _row_like(value: Any) -> bool:
    return isinstance(value, dict) and ("status" in value or "required" in value)
