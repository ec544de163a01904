"""The run record: the one artifact every stage reads. A run directory holds

    run.json        run facts: id, target, times, throughput, versions (RunInfo)
    records.jsonl   one line per case, appended as generated (CaseRecord)
    load.jsonl      one line per load-phase request (CaseRecord), when the config has a load phase
    server_metrics.jsonl  Prometheus samples scraped during the load phase
    config.yaml     snapshot of the config as given
    rubric.yaml     snapshot of the rubric, forbidden rules inlined
    report.json     the verdict and every metric (written by the gate)
    report.md, report.html, report.junit.xml, report.csv   the same for people, CI and spreadsheets
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .errors import InputError

__all__ = ["Timing", "Tokens", "CaseRecord", "RunInfo", "RunDir"]


class Timing(BaseModel):
    """Latency of one request, in milliseconds, measured by the backend."""

    ttft_ms: float | None = None
    """Request start -> first output token (prefill). In a batch, includes the whole batch's prefill."""
    tpot_ms: float | None = None
    """(t_last_token - t_first_token) / (output_tokens - 1); None with fewer than 2 output tokens."""
    e2e_ms: float | None = None
    """Request start -> last token (end of stream)."""
    batch_size: int = 1
    """How many requests shared the forward passes that produced this timing (hf backend)."""
    itl_ms: list[float] | None = None
    """Inter-token latencies: gaps between content chunks; a chunk of k tokens gives k gaps of gap/k (openai)."""
    send_lag_ms: float | None = None
    """Scheduled send -> actual send: client queueing (openai). 0 when sent on time."""
    ttft_sched_ms: float | None = None
    """Scheduled send -> first output token: TTFT including client queueing."""
    e2e_sched_ms: float | None = None
    """Scheduled send -> end of stream."""
    attempts: int = 1
    """Requests sent for this case (retries before the first token add to it)."""


class Tokens(BaseModel):
    """Token counts of one request and where they came from."""

    input: int | None = None
    """Prompt tokens, after the chat template."""
    output: int | None = None
    """Generated tokens, end-of-sequence token excluded."""
    source: str = "tokenizer"
    """'tokenizer' (the model's own tokenizer) or 'usage' (the server's usage report)."""


class CaseRecord(BaseModel):
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
    """The model's response text; None when the request failed."""
    error: str | None = None
    """Error class when the request failed (e.g. 'generation_error'); None on success."""
    error_message: str | None = None
    """A one-line description of the failure."""
    tokens: Tokens = Field(default_factory=Tokens)
    timing: Timing = Field(default_factory=Timing)
    scores: dict[str, Any] = Field(default_factory=dict)
    """Automatic scores at generation time: answer, format, forbidden. Recomputed by `gate`, never edited."""

    def slice_value(self, key: str) -> Any:
        """The value this case has for a slice key: 'suite' or any tag."""
        return self.suite if key == "suite" else self.tags.get(key)


class RunInfo(BaseModel):
    """Facts about a run that are not per case."""

    run_id: str
    created_at: str
    """ISO 8601 UTC time the run started."""
    finished_at: str | None = None
    status: str = "running"
    """'running', 'complete' or 'failed'."""
    target: str
    """Human description of the model under test."""
    backend: str
    cases: int = 0
    generation_seconds: float | None = None
    """Wall time spent generating (model load excluded): the denominator of system throughput."""
    load_seconds: float | None = None
    """Time to load the model (and adapter, and merge)."""
    load_phase: dict[str, Any] | None = None
    """The load phase, when one ran: profile, seconds, requests, warm-up, server metrics summary."""
    cost: dict[str, Any] | None = None
    """The cost section of the config, resolved to prices (None: cost not measured)."""
    versions: dict[str, str] = Field(default_factory=dict)
    """Versions of Python and the libraries that ran the model."""
    host: dict[str, Any] = Field(default_factory=dict)
    """Machine facts: platform, CPU count, threads."""


class RunDir:
    """Reads and writes one run directory; appends are flushed so an interrupted run keeps what it did."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @property
    def records_path(self) -> Path:
        return self.path / "records.jsonl"

    def create(self) -> None:
        try:
            self.path.mkdir(parents=True, exist_ok=False)
        except FileExistsError:
            raise InputError("run directory already exists", file=self.path, hint="choose another run_id") from None

    def write_info(self, info: RunInfo) -> None:
        self.write_text("run.json", info.model_dump_json(indent=2) + "\n")

    def read_info(self) -> RunInfo:
        path = self.path / "run.json"
        if not path.exists():
            raise InputError("not a run directory (no run.json)", file=self.path, hint="pass a directory under reports/")
        try:
            return RunInfo.model_validate_json(path.read_text("utf-8"))
        except ValueError as exc:
            raise InputError(f"unreadable run.json: {str(exc).splitlines()[0]}", file=path) from None

    def append(self, records: list[CaseRecord], name: str = "records.jsonl") -> None:
        with (self.path / name).open("a", encoding="utf-8") as fh:
            for rec in records:
                fh.write(rec.model_dump_json() + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def read_records(self, name: str = "records.jsonl", *, required: bool = True) -> list[CaseRecord]:
        path = self.path / name
        if not path.exists():
            if not required:
                return []
            raise InputError(f"run has no {name}", file=self.path)
        records = []
        with path.open(encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    records.append(CaseRecord.model_validate_json(line))
                except ValueError as exc:
                    if not line.endswith("\n"):
                        break  # a torn last line from an interrupted run: the case was not completed
                    raise InputError(f"corrupt record: {str(exc).splitlines()[0]}", file=path, line=number) from None
        return records

    def write_text(self, name: str, text: str) -> Path:
        """Write atomically (temp file + rename), so a reader never sees half a file."""
        path = self.path / name
        tmp = path.with_name(f".{name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
        return path

    def write_json(self, name: str, data: Any) -> Path:
        return self.write_text(name, json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
