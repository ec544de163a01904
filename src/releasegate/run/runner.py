"""`check`: config -> cases -> backend -> run record -> judge -> reports. Each stage a function of the record.

A run can be interrupted at any point (Ctrl-C, SIGTERM, kill -9, a lost machine) and finished later with
`resume_check`: records.jsonl is the journal (whole lines, fsynced per batch), so a resumed run skips the case
ids already recorded, repairs a torn last line, and appends the rest. `retry_errors` also re-runs the cases whose
latest record failed; the new record supersedes the old one (the last record of a case id wins on read).
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import secrets
import time
from datetime import UTC, datetime
from pathlib import Path

import yaml
from rich.console import Console

from .. import __version__
from ..backends import Backend, Generation, Request, create_backend
from ..errors import InputError
from ..inputs.config import Config, load_config
from ..inputs.rubric import Rubric, load_rubric
from ..inputs.suites import Case, load_suites
from ..judging.verdict import judge_run
from ..llm_judge.settings import check_judged_cases
from ..llm_judge.stage import judge_manifest, judge_stage
from ..llm_judge.verdicts import run_verdicts
from ..redaction import redact_data, secret_from_env
from ..report import write_reports
from ..review.labels import read_labels
from ..scorers import score_record
from ..scorers.evaluate_metric import load_metric
from .load_phase import run_load_phase
from .manifest import GENERATION_ROLES, MANIFEST, build_manifest, diff_manifests, read_manifest
from .prefix_cache import JOURNAL, run_prefix_cache
from .progress import progress_bar
from .record import CaseRecord, RunDir, RunInfo
from .response_cache import ResponseCache

__all__ = ["run_check", "resume_check", "new_run_id"]

_MAX_PENDING = 512  # cached records appended at least this often, so a long run of hits is journaled too


def new_run_id() -> str:
    """Sortable by time, unique across concurrent runs."""
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


def run_check(
    config: Config, rubric: Rubric, cases: list[Case], *, console: Console, progress: bool = True, run_id: str | None = None,
    allow_pending: bool = False, limit: int | None = None, use_cache: bool | None = None,
    target_overrides: dict | None = None,
) -> tuple[RunDir, dict]:
    """Run every case, record it, judge the run and write the reports. Returns the run dir and the report.
    `limit` is only recorded (the caller already cut `cases`), so that a resumed run plans the same cases;
    `target_overrides` likewise records how `config.target` differs from the config file (matrix variants)."""
    _check_metrics(rubric)
    _check_judged(config, cases)
    secret_from_env(config.target.api_key_env)
    run = RunDir(config.output_dir / (run_id or config.run_id or new_run_id()))
    # an unreadable input fails before the directory exists
    manifest = build_manifest(config, run_id=run.path.name, cases=cases)
    if config.judge is not None:
        manifest["judge"] = judge_manifest(config.judge)
    run.create()
    with run.lock():
        run.write_json(MANIFEST, manifest)
        info = _start(run, config, rubric, limit, no_cache=use_cache is False, target_overrides=target_overrides)
        return _execute(run, info, config, rubric, cases, manifest["target"]["fingerprint"], mode="start",
                        console=console, progress=progress, allow_pending=allow_pending, use_cache=not info.no_cache)


def resume_check(
    run_dir: Path, *, console: Console, progress: bool = True, retry_errors: bool = False, allow_pending: bool = False,
    use_cache: bool | None = None,
) -> tuple[RunDir, dict]:
    """Finish an interrupted run in place: the cases not yet recorded (and, with `retry_errors`, those whose
    latest record has an error), then a load phase that did not finish, then judge and report again.
    `use_cache`: None keeps the run's own choice (`check --no-cache` stays off)."""
    run = RunDir(run_dir)
    run.read_info()  # "not a run directory" before anything else
    with run.lock():
        info = run.read_info()
        config, rubric, cases = load_run_inputs(run, info)
        secret_from_env(config.target.api_key_env)
        manifest = read_manifest(run.path)
        now = build_manifest(config, run_id=run.path.name, cases=cases)
        changed = diff_manifests(manifest, now, roles=GENERATION_ROLES)
        if changed:
            first = changed[0]
            raise InputError(
                f"{len(changed)} input(s) changed since the run started, e.g. {first['role']} {first['path']} "
                f"({first['change']}): resuming would mix two versions", file=run.path,
                hint=f"see releasegate verify {run.path}; start a new run instead",
            )
        _check_metrics(rubric)
        run.repair("records.jsonl")
        for session in info.sessions:  # we hold the lock: a session still 'running' was killed
            if session.get("status") == "running":
                session["status"] = "killed"
        return _execute(run, info, config, rubric, cases, manifest["target"]["fingerprint"],
                        mode="retry_errors" if retry_errors else "resume", console=console, progress=progress,
                        allow_pending=allow_pending, use_cache=not info.no_cache if use_cache is None else use_cache)


def load_run_inputs(run: RunDir, info: RunInfo) -> tuple[Config, Rubric, list[Case]]:
    """The config, rubric and cases of a saved run: its snapshots, paths resolved next to the original config."""
    if not info.config_path:
        raise InputError("run.json has no config_path: the run predates resume support", file=run.path / "run.json",
                         hint="start a new run")
    base = Path(info.config_path).parent
    config = load_config(run.path / "config.yaml", base_dir=base, secrets_from=Path(info.config_path))
    config = dataclasses.replace(config, output_dir=run.path.parent)
    if info.target_overrides:
        overrides = {k: Path(v) if k in ("adapter", "draft") and v is not None else v for k, v in info.target_overrides.items()}
        config = dataclasses.replace(config, target=dataclasses.replace(config.target, **overrides))
    rubric = load_rubric(run.path / "rubric.yaml")
    cases = load_suites(config.suites, base, limit=info.limit)  # the first info.limit cases, the rest unread
    return config, rubric, cases


def _check_judged(config: Config, cases: list[Case]) -> None:
    if config.judge is not None or any((c.answer or {}).get("type") == "judge" for c in cases):
        check_judged_cases(config, cases)


def _check_metrics(rubric: Rubric) -> None:
    if rubric.evaluate:  # fail on an unloadable metric before spending time on the model

        for spec in rubric.evaluate:
            load_metric(spec.module)


class Interruption:
    """The SIGINT or SIGTERM `check` is stopping for. The CLI's handler (cli/check.py) notes the signal here and
    raises KeyboardInterrupt; should that exception be lost on its way (a library's bare `except`), `_execute`
    raises it again at its next stage boundary, and an exit that cannot unwind (`os._exit` after a grace period
    or a second signal) still leaves run.json saying 'interrupted' through `mark_interrupted`."""

    def __init__(self) -> None:
        self.signum: int | None = None
        """The first signal received; None: not interrupted."""
        self.taken = False
        """`_execute` caught the KeyboardInterrupt and is winding the run down: do not raise it again."""
        self.active: tuple[RunDir, RunInfo] | None = None
        """The run `_execute` is working on, until its reports are written or its status is."""

    def raise_if_pending(self) -> None:
        """A stage boundary: stop here if a signal came and its KeyboardInterrupt has not reached `_execute`."""
        if self.signum is not None and not self.taken:
            raise KeyboardInterrupt

    def mark_interrupted(self) -> Path | None:
        """Write run.json as 'interrupted' for the run in progress (from any thread, just before `os._exit`);
        a file of its own is renamed over run.json, so a write the main thread has half done cannot mix in."""
        if self.active is None:
            return None
        run, info = self.active
        info = info.model_copy(deep=True)
        info.status, info.finished_at = "interrupted", now()
        if info.sessions:  # this process's session is the last one
            info.sessions[-1].update(status="interrupted", finished_at=info.finished_at)
        tmp = run.write_json(".run.json.interrupted", redact_data(info.model_dump(mode="json")))
        os.replace(tmp, run.path / "run.json")
        return run.path


INTERRUPTION = Interruption()


def _test_judge_delay() -> None:
    """Test hook, not a feature: RELEASEGATE_TEST_JUDGE_DELAY_S=S makes judging S seconds longer, spent inside
    object finalizers (where a KeyboardInterrupt is printed as "Exception ignored" and dropped), so that
    tests/test_signals.py can interrupt judging at its worst moment. Unset (always, outside tests): nothing."""
    delay = float(os.environ.get("RELEASEGATE_TEST_JUDGE_DELAY_S") or 0)
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline:
        _SlowFinalizer()


class _SlowFinalizer:
    def __del__(self) -> None:
        time.sleep(0.005)


def _execute(run, info, config, rubric, cases, fingerprint, *, mode, console, progress, allow_pending, use_cache):
    done = {r.case_id: r for r in run.read_records(required=False)}
    todo = [c for c in cases if c.id not in done or (mode == "retry_errors" and done[c.id].error is not None)]
    load_phase = config.load is not None and info.load_phase is None
    prefix_probe = config.prefix_cache is not None and info.prefix_cache is None
    session = {"mode": mode, "started_at": now(), "cases": len(todo), "cached": 0, "generation_seconds": 0.0,
               "status": "running"}
    info.sessions.append(session)
    info.cases, info.status, info.finished_at = len(cases), "running", None
    info.phases = (["quality"] + (["load"] if config.load is not None else [])
                   + (["prefix_cache"] if config.prefix_cache is not None else []))
    run.write_info(info)
    if mode != "start":
        console.print(f"{mode.replace('_', ' ')}: {len(todo)} of {len(cases)} cases to run"
                      + (", then the load phase" if load_phase else ""), markup=False, soft_wrap=True)
    backend = cache = None
    INTERRUPTION.active = (run, info)
    try:
        INTERRUPTION.raise_if_pending()
        cache = _open_cache(config, fingerprint, use_cache, console) if todo else None
        hits = _cache_hits(cache, todo)
        session["cached"] = len(hits)
        if len(hits) < len(todo) or load_phase or prefix_probe:
            backend = create_backend(config.target, config.generation, scale=config.scale)
            _load(backend, info, console)
        _generate_all(backend, todo, hits, config, rubric, run, info, session, cache, console, progress)
        if getattr(backend, "client_stats", None):  # the client's own lateness over the quality phase
            info.client = backend.client_stats
        INTERRUPTION.raise_if_pending()
        if load_phase:
            for stale in ("load.jsonl", "server_metrics.jsonl"):  # a load phase is measured whole or not at all
                (run.path / stale).unlink(missing_ok=True)
            run_load_phase(backend, config, cases, run, info, console, progress)
        INTERRUPTION.raise_if_pending()
        if prefix_probe:
            (run.path / JOURNAL).unlink(missing_ok=True)  # measured whole or not at all, like the load phase
            run_prefix_cache(backend, config, cases, run, info)
        INTERRUPTION.raise_if_pending()
        if backend is not None:  # the model under test is done: free it before a local judge loads
            backend.close()
            backend = None
        _judge_outputs(run, info, config, console, progress, use_cache)
        INTERRUPTION.raise_if_pending()
    except BaseException as exc:
        interrupted = isinstance(exc, KeyboardInterrupt)
        INTERRUPTION.taken = INTERRUPTION.taken or interrupted
        info.status = session["status"] = "interrupted" if interrupted else "failed"
        info.finished_at = session["finished_at"] = now()
        run.write_info(info)
        INTERRUPTION.active = None
        if interrupted:
            _print_resume_hint(console, run)
        raise
    finally:
        if backend is not None:
            backend.close()
        if cache is not None:
            cache.close()
    # Every record is in, but run.json says 'complete' only from just before the reports (which show it) are
    # written: a run stopped while judging is 'interrupted' (killed: 'running'), and `check --resume` then
    # judges it and writes the reports without generating anything.
    info.status = session["status"] = "complete"
    info.finished_at = session["finished_at"] = now()
    try:
        labels = None
        if mode != "start":  # reviewers may have labelled part of the run while it was stopped

            labels = read_labels(run)

        report = judge_run(info, run.read_records(), rubric, info.cost, run.read_records("load.jsonl", required=False),
                           labels=labels, allow_pending=allow_pending, verdicts=run_verdicts(run, info))
        _test_judge_delay()
        INTERRUPTION.raise_if_pending()
        run.write_info(info)
        write_reports(run, report)
        INTERRUPTION.active = None
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            INTERRUPTION.taken = True
            info.status = session["status"] = "interrupted"
        run.write_info(info)  # any other error: 'complete', every record is in and `gate` can judge it again
        INTERRUPTION.active = None
        if isinstance(exc, KeyboardInterrupt):
            _print_resume_hint(console, run)
        raise
    return run, report


def _judge_outputs(run, info, config, console, progress: bool, use_cache: bool) -> None:
    """The LLM judge grades the judge-scored outputs (releasegate.llm_judge.stage), when the config has one."""
    if config.judge is None:
        return

    judge_stage(run, info, config, console=console, bar_factory=lambda: progress_bar(console, progress),
                use_cache=use_cache, between=INTERRUPTION.raise_if_pending)


def _print_resume_hint(console: Console, run: RunDir) -> None:
    console.print(f"interrupted; finish it with: releasegate check --resume {run.path}", markup=False, soft_wrap=True)


def _start(
    run: RunDir, config: Config, rubric: Rubric, limit: int | None, *, no_cache: bool, target_overrides: dict | None = None
) -> RunInfo:
    run.write_text("config.yaml", config.snapshot_text())  # credentials masked (userinfo, tokens, secret values)
    run.write_text("rubric.yaml", yaml.safe_dump(rubric.as_dict(), sort_keys=False, allow_unicode=True))
    info = RunInfo(
        run_id=run.path.name,
        created_at=now(),
        target=config.target.describe(),
        backend=config.target.backend,
        cost=dataclasses.asdict(config.cost) if config.cost else None,
        versions=_versions(config.target.backend),
        host={"platform": platform.platform(), "cpus": os.cpu_count(), "threads": config.target.threads},
        config_path=str(config.path.resolve()),
        limit=limit,
        no_cache=no_cache,
        target_overrides={k: str(v) if isinstance(v, Path) else v for k, v in target_overrides.items()}
        if target_overrides else None,
    )
    run.write_info(info)
    return info


def _load(backend: Backend, info: RunInfo, console: Console) -> None:
    started = time.perf_counter()
    with console.status(f"loading {info.target}"):
        backend.load()
    info.load_seconds = time.perf_counter() - started
    info.versions.update(_versions(info.backend, loaded=True))


def _open_cache(config: Config, fingerprint: str | None, use_cache: bool, console: Console):
    if config.cache is None or not use_cache:
        return None
    if fingerprint is None:
        console.print("response cache not used: the model is a hub id with no local copy to fingerprint",
                      markup=False, soft_wrap=True)
        return None

    generation = {**config.generation, "max_new_tokens": config.max_new_tokens}
    return ResponseCache(config.cache.path, fingerprint=fingerprint, generation=generation, ttl_s=config.cache.ttl_s)


def _cache_hits(cache, cases: list[Case]) -> dict[str, Generation]:
    if cache is None:
        return {}
    hits = {}
    for case in cases:
        gen = cache.get(_request(case))
        if gen is not None:
            hits[case.id] = gen
    return hits


def _generate_all(backend, todo, hits, config, rubric, run, info, session, cache, console, show) -> None:
    """Generate in batches of fresh requests; cached responses are recorded in case order between them.

    With length bucketing (`_by_length`) the cached cases come first and the fresh ones follow in order of prompt
    length, so a batch holds neighbours in length and pads little. Each batch is appended and fsynced as soon as it
    is generated, as ever (a kill loses at most the batch in flight, a resume skips the recorded ids), and when
    generation ends (done, interrupted or failed; after a kill -9, when the resumed run's does)
    `_restore_case_order` puts records.jsonl back in case order, the order every reader has always seen."""
    size = max(1, backend.batch_size) if backend is not None else 1
    order = _by_length(backend, todo, hits, config, size) or todo
    try:
        with progress_bar(console, show) as bar:
            task = bar.add_task("generating", total=len(todo))
            for group, gens in _generated(backend, _batches(order, hits, size), hits, config, run, info, session):
                fresh = [c for c in group if c.id not in hits]
                run.append([_record(c, hits.get(c.id) or gens[c.id], rubric, cached=c.id in hits) for c in group])
                if fresh and cache is not None:  # after the append: a response is cached once it is recorded
                    cache.put_many([(_request(c), gens[c.id]) for c in fresh])
                bar.advance(task, len(group))
    finally:
        # length order, or batches finishing out of order on several workers; also mends a killed session's order
        if config.target.backend == "hf" and (config.target.bucket_by_length or config.scale is not None):
            try:
                _restore_case_order(run, info, config, todo)
            except OSError:  # every record is in all the same, in the order generated; a resume reorders them
                pass
    if cache is not None and cache.error:
        console.print(f"response cache: {cache.error}; every response was recorded; some were not cached or not looked up",
                      markup=False, soft_wrap=True)


def _batches(order: list[Case], hits: dict, size: int) -> list[list[Case]]:
    """The journal's batches: `size` fresh cases each (with the cached ones between them), at most _MAX_PENDING."""
    out: list[list[Case]] = [[]]
    fresh = 0
    for case in order:
        out[-1].append(case)
        fresh += case.id not in hits
        if fresh >= size or len(out[-1]) >= _MAX_PENDING:
            out.append([])
            fresh = 0
    return [group for group in out if group]


def _generated(backend, batches: list[list[Case]], hits: dict, config, run, info, session):
    """Each batch with its fresh cases' generations: one after the other, or, for a backend spread over workers
    (`generate_many`, see releasegate.scale), in the order they finish, generation time counted as wall time."""
    many = getattr(backend, "generate_many", None)
    if many is None:
        for group in batches:
            fresh = [c for c in group if c.id not in hits]
            yield group, _generate(backend, fresh, config, run, info, session) if fresh else {}
        return
    fresh = [[c for c in group if c.id not in hits] for group in batches]
    last = time.perf_counter()
    for i, out in many([[_request(c) for c in f] for f in fresh], max_new_tokens=config.max_new_tokens):
        if fresh[i]:
            now_s = time.perf_counter()
            _count_generation(info, session, run, now_s - last)
            last = now_s
        yield batches[i], {c.id: g for c, g in zip(fresh[i], out)}


def _by_length(backend, todo: list[Case], hits: dict, config: Config, size: int) -> list[Case] | None:
    """The order to generate in with length bucketing: the cached cases (no request to batch), then the fresh ones
    by prompt length, counted with the backend's own `prompt_ids` (what it will send; about 0.1 ms a prompt on
    the demo, nothing beside a batch's generation), ties in case order. Consecutive batches of `size` are then
    neighbours in length. None (case order) when off, for backends without `prompt_ids`, or one batch at most."""
    measure = getattr(backend, "prompt_ids", None)
    many = getattr(backend, "prompt_lengths", None)  # a backend on workers counts all prompts in one round trip
    fresh = [c for c in todo if c.id not in hits]
    if not config.target.bucket_by_length or (measure or many) is None or size < 2 or len(fresh) <= size:
        return None
    if many is not None:
        lengths = dict(zip([c.id for c in fresh], many([_request(c) for c in fresh])))
        return [c for c in todo if c.id in hits] + sorted(fresh, key=lambda c: lengths[c.id])

    def length(case: Case) -> int:
        try:
            return len(measure(_request(case)))
        except Exception:  # a prompt that cannot be built fails in its batch, as in case order
            return -1

    lengths = {c.id: length(c) for c in fresh}
    return [c for c in todo if c.id in hits] + sorted(fresh, key=lambda c: lengths[c.id])


def _restore_case_order(run: RunDir, info: RunInfo, config: Config, todo: list[Case]) -> None:
    """Rewrite records.jsonl in the run's case order, after batches were appended in length order. Lines move
    whole and unchanged; the lines of one case id keep their relative order (the last still wins, at the place of
    the first). Atomic: the new file is fsynced, then renamed over the old, so a kill during the rewrite leaves one
    whole journal or the other. Nothing is rewritten when the journal is already in order; the order is that of
    `todo` when it names every recorded case (a fresh run), else the run's suites (a resumed run)."""
    path = run.path / "records.jsonl"
    if not path.is_file():
        return
    lines = [line for line in path.read_bytes().splitlines(keepends=True) if line.strip()]
    try:
        ids = [json.loads(line)["case_id"] for line in lines]
    except (ValueError, KeyError, TypeError):
        return  # a torn or foreign line: leave the journal to `repair` and `read_records`
    if not lines or not lines[-1].endswith(b"\n"):
        return
    rank = {c.id: i for i, c in enumerate(todo)}
    if not rank.keys() >= set(ids):
        try:
            base = Path(info.config_path).parent if info.config_path else config.path.parent
            rank = {c.id: i for i, c in enumerate(load_suites(config.suites, base))}
        except InputError:
            return
        if not rank.keys() >= set(ids):
            return
    firsts = [rank[i] for i in dict.fromkeys(ids)]
    if all(a < b for a, b in zip(firsts, firsts[1:])):
        return
    moved = [line for _, line in sorted(zip(ids, lines), key=lambda pair: rank[pair[0]])]  # stable
    tmp = path.with_name(".records.jsonl.reordered")
    with tmp.open("wb") as fh:
        fh.writelines(moved)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(run.path, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _generate(backend, fresh: list[Case], config, run, info, session) -> dict[str, Generation]:
    started = time.perf_counter()
    out = backend.generate([_request(c) for c in fresh], max_new_tokens=config.max_new_tokens)
    if backend.measures_latency:
        _count_generation(info, session, run, time.perf_counter() - started)
    return {c.id: g for c, g in zip(fresh, out)}


def _count_generation(info, session, run, elapsed: float) -> None:
    """Checkpointed before the records it paid for (see RunInfo.generation_seconds)."""
    info.generation_seconds = (info.generation_seconds or 0.0) + elapsed
    session["generation_seconds"] += elapsed
    run.write_info(info)


def _request(case: Case) -> Request:
    return Request(case.id, list(case.messages) if case.messages else None, case.prompt)


def _record(case: Case, gen: Generation, rubric: Rubric, *, cached: bool = False) -> CaseRecord:
    record = CaseRecord(
        case_id=case.id, suite=case.suite, tags=case.tags, input=case.input, expected=case.expected,
        answer=case.answer, format=list(case.format), output=gen.text, error=gen.error,
        error_message=gen.error_message, tokens=gen.tokens, timing=gen.timing, cached=cached,
    )
    record.scores = score_record(record, rubric.forbidden)
    return record


def _versions(backend: str, loaded: bool = False) -> dict[str, str]:
    out = {"python": platform.python_version(), "releasegate": __version__}
    if loaded and backend == "hf":
        import peft
        import torch
        import transformers

        out.update(torch=torch.__version__, transformers=transformers.__version__, peft=peft.__version__)
    return out


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
