"""The run record: the one artifact every stage reads. A run directory holds

    run.json        run facts: id, target, times, throughput, versions (RunInfo)
    records.jsonl   the journal: one line per case, appended and fsynced per batch (CaseRecord); a resumed or
                    retried run appends, and on read the last record of a case id wins
    manifest.json   sha256 of every input (config, suites, rubric, model, adapter...), versions, host, the seal
    load.jsonl      one line per load-phase request (CaseRecord), when the config has a load phase
    config.yaml     snapshot of the config as given (run.json keeps the original path: relative paths resolve there)
    rubric.yaml     snapshot of the rubric, forbidden rules inlined
    judgments.jsonl the LLM judge's verdicts on judge-scored cases (see releasegate.record.judge_journal)
    report.json     the verdict and every metric (written by the gate); report.md, .html, .junit.xml, .csv
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from pydantic import (
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from ..border.files import exists, open_append, read_text, replace_file
from ..border.limits import JOURNAL_MAX_BYTES
from ..errors import InputError
from ..model_base import Model
from ..redaction import redact, redact_data, redact_error, redact_json, redact_values
from ..text import REPLACEMENT, has_surrogates, valid_text
from .journal_lines import ESCAPED, SharedValues, mend_last_line, parsed_lines, valid_data
from .record_parts import Stratum, Timing, Tokens
from .run_lock import held
from .run_parts import Count, Figure, Seconds, check_part, check_sessions, finite_tree, non_finite_as_null, problem_line
from .sealed import matches_seal

__all__ = ["Timing", "Tokens", "Stratum", "CaseRecord", "RunInfo", "RunDir", "valid_text", "REPLACEMENT"]

class CaseRecord(Model):
    """One case as run: input, output, timings, token counts and automatic scores."""

    case_id: str
    """The case's id, unique across the run; records are keyed by it."""
    suite: str
    """Name of the suite the case came from."""
    tags: dict[str, Any] = Field(default_factory=dict)
    """The case's tags (domain, risk, ...), used for slices."""
    input: dict[str, Any]
    """{'messages': [...]} or {'prompt': '...'} as sent."""
    expected: Any = None
    """The reference answer."""
    answer: dict[str, Any] | None = None
    """The answer scorer spec used for this case."""
    format: list[dict[str, Any]] = Field(default_factory=list)
    """The format checks that apply to this case."""
    output: str | None = None
    """The model's response text; None when the request failed. Always valid Unicode: see `output_repaired`."""
    error: str | None = None
    """Error class when the request failed (e.g. 'generation_error'); None on success."""
    error_message: str | None = None
    """A one-line description of the failure."""
    tools: dict[str, Any] | None = None
    """A case with tools: the tools offered and the calls expected per turn (`inputs.case_tools`)."""
    tool_calls: list[list[dict[str, Any]]] | None = None
    """The tool calls the model made, one list per turn asked ({id, name, arguments: the JSON text written})."""
    tokens: Tokens = Field(default_factory=Tokens)
    timing: Timing = Field(default_factory=Timing)
    scores: dict[str, Any] = Field(default_factory=dict)
    """Automatic scores at generation time: answer (never a judge's verdict), format, forbidden. Never edited:
    later stages reuse them while `scored_with` matches, and score the record again otherwise."""
    scored_with: str | None = None
    """The fingerprint of what `scores` were computed from (`scorers.stored.fingerprint`: the scorers' code, the
    answer and format specs, the expected answer, the output and its token count, the forbidden rules). None: not
    to be reused (not stored, or read from a journal that is not as the run sealed it)."""
    cached: bool = False
    """True when the output came from the response cache: no request was sent in this run, so the record has no
    timing and is left out of every latency, throughput and run-cost figure (see `metrics.measured`)."""
    produced_by: list[str | None] | None = None
    """A cached record: the attempts of the session that produced its answer (None an answer, else its error
    kind), counted in this run's error rate; None: not known, the record stands for no request."""
    produced_in: str | None = None
    """A cached record: its session's name in the cache, whose whole tally the ledger counts (`record.ledger`)."""
    stratum: Stratum | None = None
    """For a case of a stratified `sample:` suite: its stratum and the stratum's size in the source, so rate
    metrics are population-weighted (see `sample_weights.stratum_counts`); None for every other case."""
    draw: int = Field(default=0, ge=0)
    """Which of the case's repeated draws this is (`generation.repeats`): 0 the first (the only one without
    repeats; written only when not 0, so a run without repeats records what it always did), 1..k-1 the others,
    kept in draws.jsonl. Records are keyed by (case_id, draw)."""
    output_repaired: bool = False
    """True when the output as received was not valid Unicode text: it held lone UTF-16 surrogates (a server
    streaming half of a surrogate pair, a '\\udc80' escape in a replay file) or, from a replay file, bytes that are
    not UTF-8. Each such code point is recorded as U+FFFD (`valid_text`), and the output is then scored like any
    other; the flag says that the recorded text lost something of what came back. (A surrogate pair that arrived
    as two code points, split across two stream chunks, is joined into its character: nothing lost, no flag.)"""

    _earlier: tuple[CaseRecord, ...] = PrivateAttr(default=())
    # not persisted: the case's earlier lines in records.jsonl, which `RunDir.read_records` attaches

    @property
    def earlier_attempts(self) -> list[CaseRecord]:
        """The case's earlier records in the journal (a failed request a resume or `--retry-errors` sent again),
        oldest first; their requests were sent, so they count as attempts (`record.evidence`)."""
        return list(self._earlier)

    @field_validator("error_message")
    @classmethod
    def _valid_error_message(cls, value: str | None) -> str | None:
        return valid_text(value) if value is not None else None

    @model_validator(mode="after")
    def _valid_output(self) -> CaseRecord:
        if self.output is not None and has_surrogates(self.output):
            repaired = valid_text(self.output)
            self.output_repaired = self.output_repaired or repaired.count(REPLACEMENT) > self.output.count(REPLACEMENT)
            self.output = repaired
        return self

    @model_serializer(mode="wrap")
    def _without_first_draw(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        unset = {name for name, empty in (("draw", not self.draw), ("produced_in", self.produced_in is None)) if empty}
        return {k: v for k, v in data.items() if k not in unset} if isinstance(data, dict) else data

    def slice_value(self, key: str) -> Any:
        """The value this case has for a slice key: 'suite' or any tag."""
        return self.suite if key == "suite" else self.tags.get(key)


_SHARED = ("answer", "format", "tags", "scores")
"""The record fields whose values repeat across cases (a suite's checks, its tags, a passing case's scores)."""

MAX_JOURNAL_BYTES = JOURNAL_MAX_BYTES
"""1 GiB (`border.limits`): a journal of a million long answers; past it, refused in one line naming the bound."""


class RunInfo(Model):
    """Facts about a run that are not per case."""

    run_id: str
    created_at: str
    """ISO 8601 UTC time the run started."""
    finished_at: str | None = None
    status: str = "running"
    """'running' (or killed: no process holds the run's lock), 'complete', 'interrupted' (Ctrl-C, SIGTERM) or
    'failed' (the target could not be loaded)."""
    target: str
    """Human description of the model under test."""
    backend: str
    cases: Count = 0
    """Cases the run plans (all suites, after --limit)."""
    generation_seconds: Seconds | None = None
    """Wall time the backend spent generating fresh (not cached) responses, model load excluded: the denominator
    of system throughput. A resumed run adds each session's segment; a segment is checkpointed into run.json
    before its batch's records are appended, so a kill can only count time twice (throughput errs low), never
    count records without their time."""
    load_seconds: Seconds | None = None
    """Time to load the model (and adapter, and merge)."""
    load_phase: dict[str, Any] | None = None
    """The load phase, when one ran: profile, seconds, requests, warm-up, server metrics summary."""
    prefix_cache: dict[str, Any] | None = None
    """The prefix-cache probe, when one ran: TTFT and server-reported cached prompt tokens, warm and cold (see
    releasegate.run.prefix_cache)."""
    response_cache_probe: dict[str, Any] | None = None
    """The response-cache probe, when one ran: the simulated cache at every threshold (see
    releasegate.run.cache_probe_stage)."""
    leakage: dict[str, Any] | None = None
    """What the fine-tune memorised, when a leakage probe ran (see releasegate.leakage.probe): per record its id,
    hash and 8 characters each side, never its text."""
    client: dict[str, Any] | None = None
    """The client's own lateness over the quality phase: the openai backend's event-loop lag percentiles in ms and
    CPU share, or the hf backend's wait for a CPU (`backends._starvation`, `client: hf`). The load phase's is `load_phase['client']`. See `health.client_saturation`."""
    repeats: dict[str, int] | None = None
    """Draws per case by suite (`generation.repeats`, a suite's `repeats:`), when any suite asks more than one;
    the gate counts the draws each case must have against it. None: one draw per case."""
    phases: list[str] | None = None
    """The phases the config plans: 'quality', and 'load' when it has a load phase. The gate calls a run whose
    planned phase is missing or cut short INCONCLUSIVE. None in runs that predate it (`gate` reads config.yaml)."""
    cost: dict[str, Any] | None = None
    """The cost section of the config, resolved to prices (None: cost not measured)."""
    judge: dict[str, Any] | None = None
    """The LLM judge the run's judge-scored cases are graded by: its description (backend, model, parameters,
    prompt template hash), `fingerprint` (which judgments count), `on_error` and `price`. None: no judge."""
    guards: dict[str, Any] | None = None
    """The guard models the rubric's guard rules ask, by name: each one's description and `fingerprint` (which of
    its verdicts in judgments.jsonl count) and `questions` (the criterion names it was asked under). None: none."""
    versions: dict[str, str] = Field(default_factory=dict)
    """Versions of Python and the libraries that ran the model."""
    host: dict[str, Any] = Field(default_factory=dict)
    """Machine facts: platform, CPU count, threads."""
    config_path: str | None = None
    """Absolute path of the config the run started from: `check --resume` reads the snapshot (config.yaml) and
    resolves its relative paths next to this file."""
    limit: Count | None = None
    """`check --limit`: a resumed run plans the same cases."""
    cuts: list[str] | None = None
    """Every cut of the suites the run made ('--limit 5', 'suites[0].limit: 3 (tickets)'): it speaks for that part
    only (`decision.decide_gate`). None: a run from before cuts were recorded (its `limit` is read)."""
    overrides: list[str] | None = None
    """The `--set KEY=VALUE` overrides the run's config was composed with (secrets masked)."""
    composition_sha256: str | None = None
    """sha256 of manifest.json's `composition` as the run wrote it (`sealed_composition`): run.json is sealed, so the
    overrides a release counts are the ones the run recorded. None in runs that predate it."""
    no_cache: bool = False
    """`check --no-cache`: the run neither reads nor writes the response cache; a resume keeps to that unless
    told `--cache`."""
    target_overrides: dict[str, Any] | None = None
    """Target settings that differ from config.yaml (a `matrix` variant: merge, quantize, draft, batch_size);
    a resume applies them again."""
    computed: dict[str, Any] | None = None
    """Where the run's work was computed (`inputs.scale_config.where_computed`): {"where": "local"}, or {"where":
    "ray", "address", "workers", "spreads"}. None in runs that predate it."""
    comparability: dict[str, Any] | None = None
    """Hashes of the settings that make two runs runs of the same thing (`gate.comparability.settings_key`):
    generation settings, load profile, latency objective, rubric; written when the run starts. None in runs that
    predate it (`compare` and `servers` derive it from config.yaml and rubric.yaml)."""
    stopping: dict[str, Any] | None = None
    """`check --stop-when-decided` (or the rubric's `stop_when_decided`): `seed`, `order` (the case ids in the
    order asked, a shuffle fixed by the seed) and, once dispatch stopped with every criterion decided,
    `stopped_at` (the cases of the order asked by then). None: every case is asked (`gate.stopping`)."""
    budget: dict[str, Any] | None = None
    """`budget:` (`check --budget-usd`): `caps`, `spent_usd` by part (target, judge, guard, total), the target's
    `tokens`, `exhausted` (the cap dispatch stopped at, None when none was reached) and `asked` (`run.budget`).
    None: no budget."""
    sessions: list[dict[str, Any]] = Field(default_factory=list)
    """One entry per `check` on this run directory (mode 'start', 'resume' or 'retry_errors'): when it started,
    how many cases it had to run, how many came from the cache, its generation seconds, how it ended and its
    `timing`."""
    timing: dict[str, Figure | None] | None = None
    """Where the latest `check` session's wall time went, in seconds: import_s, inputs_s, model_load_s,
    generation_s, load_phase_s, judging_s, reports_s, other_s (the rest) adding up to total_s; written with
    the reports (see releasegate.record.stage_timing). None in runs that predate it."""

    @model_validator(mode="before")
    @classmethod
    def _finite(cls, data: Any) -> Any:  # a stored NaN or a nesting no run writes: refused, never computed with
        return finite_tree(data)

    @model_serializer(mode="wrap")
    def _without_unset_repeats(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and self.repeats is None:
            data.pop("repeats", None)  # a run without repeats writes the run.json it always did
        return data

    @field_validator("cost", "response_cache_probe", "load_phase", "prefix_cache", "judge", "guards", "budget")
    @classmethod
    def _part_shape(cls, value: Any, info: ValidationInfo) -> Any:
        return check_part(info.field_name or "", value)

    @field_validator("sessions")
    @classmethod
    def _sessions_shape(cls, value: list[Any]) -> list[Any]:
        return check_sessions(value)


class RunDir:
    """Reads and writes one run directory; appends are flushed so an interrupted run keeps what it did.

    Every record and JSON document it writes is redacted in the data, before serialising (`redact_json`,
    `redact_values`: an escaped secret cannot slip through), every text through `redact` as well (registered
    secret values never reach the disk), and every recorded error message through `redact_error`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.read_sha256: dict[str, str] = {}
        """Journal name -> sha256 of its bytes as `read_records` last read them (what a report was judged on)."""

    @property
    def records_path(self) -> Path:
        return self.path / "records.jsonl"

    def create(self) -> None:
        try:
            self.path.mkdir(parents=True, exist_ok=False)
        except FileExistsError:
            raise InputError("run directory already exists", file=self.path, hint="choose another run_id") from None

    def write_info(self, info: RunInfo) -> None:
        """run.json, credential-looking strings masked, a figure that is not finite (+Inf) written as null."""
        self.write_json("run.json", non_finite_as_null(redact_data(info.model_dump(mode="json"))))

    def read_info(self) -> RunInfo:
        path = self.path / "run.json"
        if not exists(path):
            raise InputError("not a run directory (no run.json)", file=self.path, hint="pass a directory under reports/")
        try:
            return RunInfo.model_validate_json(read_text(path, what="run.json"))
        except (ValueError, RecursionError) as exc:
            raise InputError(f"unreadable run.json: {problem_line(exc)}", file=path) from None

    def append(self, records: list[CaseRecord], name: str = "records.jsonl") -> None:
        """Append whole lines and fsync: a line with its newline is a committed record."""
        with io.TextIOWrapper(open_append(self.path / name, what=name), encoding="utf-8") as fh:
            for rec in records:
                if rec.error_message:
                    rec = rec.model_copy(update={"error_message": redact_error(rec.error_message)})
                fh.write(_record_json(rec) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def read_records(
        self, name: str = "records.jsonl", *, required: bool = True, dedup: bool | None = None,
        each: Callable[[CaseRecord], None] | None = None,
    ) -> list[CaseRecord]:
        """The records of a journal. `dedup` (default: on for records.jsonl, whose records are keyed by case id):
        the last record of a case id wins and keeps the place of the first, so a retried case replaces its error,
        and carries the lines it superseded as `earlier_attempts`. load.jsonl is read as written (a replayed
        traffic log may repeat ids). The scores stored in a journal that is not as the run sealed it are not
        reused (`scored_with` cleared, see `sealed.matches_seal`). `each`: done to every record as it is read (the
        gate packs its input, `record.held`), so what it lets go of never exists for every record at once."""
        path = self.path / name
        if not path.exists():
            if not required:
                return []
            raise InputError(f"run has no {name}", file=self.path)
        records, digest, shared = [], hashlib.sha256(), SharedValues(_SHARED)
        for _, rec in parsed_lines(path, name, digest, CaseRecord.model_validate_json, MAX_JOURNAL_BYTES):
            shared.hold(rec)  # as read: the copies never all exist at once
            if each is not None:
                each(rec)
            records.append(rec)
        self.read_sha256[name] = digest.hexdigest()
        if not matches_seal(self.path, name, self.read_sha256[name]):
            for rec in records:
                rec.scored_with = None
        if dedup if dedup is not None else name == "records.jsonl":
            return _last_wins(records)
        return records

    def repair(self, name: str = "records.jsonl") -> None:
        """Make a journal safe to append to after a kill: a torn last line (no newline) is cut off, or, when it
        happens to be a whole record, given its newline. Reading and resuming then agree on what was done."""
        mend_last_line(self.path / name, name, _whole_record)

    def lock(self) -> AbstractContextManager[None]:
        """Hold the run directory for one `check` process; a second one (a concurrent resume) is refused
        (`run_lock.held`)."""
        return held(self.path)

    def is_locked(self) -> bool:
        """Whether a live process holds the run (its status 'running' is then true, not a leftover of a kill)."""
        try:
            with self.lock():
                return False
        except InputError:
            return True

    def write_text(self, name: str, text: str) -> Path:
        """Write atomically (temp file + rename), so a reader never sees half a file. A lone surrogate (which UTF-8
        cannot hold) is written as U+FFFD."""
        return replace_file(self.path / name, valid_text(redact(text)).encode("utf-8"), what=name)

    def write_json(self, name: str, data: Any) -> Path:
        data = redact_values(data)  # the data redacted, then serialised
        return self.write_text(name, json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def _last_wins(records: list[CaseRecord]) -> list[CaseRecord]:
    """One record per case id: the last, at the place of the first, with the earlier ones as its attempts."""
    latest: dict[str, CaseRecord] = {}
    for rec in records:
        prior = latest.get(rec.case_id)
        if prior is not None:
            object.__setattr__(rec, "__pydantic_private__", {"_earlier": (*prior._earlier, prior)})
        latest[rec.case_id] = rec
    return list(latest.values())


def _record_json(rec: CaseRecord) -> str:
    """One journal line. The output and error message are valid text already (CaseRecord's validators); any other
    string that is not (a case input or tag from a suite, a record changed after validation) is written with U+FFFD
    in place of its lone surrogates rather than losing the record. `ESCAPED` characters are written escaped."""
    try:
        line = rec.model_dump_json()
    except ValueError:  # PydanticSerializationError: a lone surrogate somewhere UTF-8 cannot encode
        line = CaseRecord.model_validate(valid_data(rec.model_dump())).model_dump_json()
    line = redact_json(line)  # registered secrets replaced in the data, before ESCAPED escapes anything
    return ESCAPED.sub(lambda m: f"\\u{ord(m.group()):04x}", line)  # only inside strings: the same JSON


def _whole_record(line: bytes) -> bool:
    try:
        CaseRecord.model_validate_json(line)
    except ValueError:
        return False
    return True
