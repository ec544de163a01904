"""`check`: config -> cases -> backend -> run record -> judge -> reports. Each stage a function of the record.

A run can be interrupted at any point (Ctrl-C, SIGTERM, kill -9, a lost machine) and finished later with
`resume_check`: records.jsonl is the journal (whole lines, fsynced per batch), so a resumed run skips the case
ids already recorded, repairs a torn last line, and appends the rest. `retry_errors` also re-runs the cases whose
latest record failed; the new record supersedes the old one (the last record of a case id wins on read).
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import platform
import secrets
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from .. import __version__
from ..backends import Backend, capabilities, create_backend
from ..border.env import TEST_JUDGE_DELAY, env_number
from ..clock import now
from ..errors import InputError, TargetStopped, first_named
from ..gate.comparability import settings_key
from ..inputs.config import Config, load_config
from ..inputs.probes import with_probes
from ..inputs.rubric import Rubric, load_rubric
from ..inputs.scale_config import where_computed
from ..inputs.suite_config import suite_cuts
from ..inputs.suites import Case, load_suites
from ..inputs.validation import load_inputs
from ..leakage.stage import run_leakage
from ..llm_judge.guard import graders_manifest, guard_stage
from ..llm_judge.stage import judge_stage
from ..record.evidence import failure
from ..record.gate_report import GateReport
from ..record.judge_verdicts import run_verdicts
from ..record.records import CaseRecord, RunDir, RunInfo
from ..record.review_labels import read_labels
from ..record.seal import edited_evidence, guard_seal, seal, sealed_snapshot
from ..record.sealed_composition import composition_sha256
from ..record.stage_timing import Timing
from ..redaction import secret_from_env
from ..report import write_reports
from ..review.sampler import drawn_rows
from ..run.budget import require_one_case, require_prices, with_budget
from ..run.cache_probe_stage import run_response_cache_probe
from ..run.draws import generate_draws, pending_draws
from ..run.generation import cache_hits, cache_session_name, generate_all, keep_client, keep_sources, open_cache
from ..run.interruption import INTERRUPTION
from ..run.load_phase import run_load_phase
from ..run.manifest import GENERATION_ROLES, MANIFEST, build_manifest, diff_manifests, read_manifest, recorded_overrides
from ..run.prefix_cache import JOURNAL, run_prefix_cache
from ..run.progress import progress_bar, step
from ..run.stop_watch import require_seeded_order, stop_plan
from ..scorers import CorpusScores, ScoredRun, scored_run
from .check_inputs import check_before_loading, check_metrics
from .check_options import CheckOptions
from .endpoints import target_answers
from .gate import GateInputs, judge_run
from .grader_spend import reconcile_graders
from .kept_labels import reused_labels
from .regate import judged_by_snapshot
from .review_signatures import counted_labels

__all__ = ["run_check", "run_check_file", "resume_check", "new_run_id", "load_run_inputs"]


def new_run_id() -> str:
    """Sortable by time, unique across concurrent runs."""
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


def run_check(config: Config, rubric: Rubric, cases: list[Case], options: CheckOptions) -> tuple[RunDir, dict[str, Any]]:
    """Run every case, record it, judge the run and write the reports (`options`: how, `CheckOptions`). Returns
    the run dir and the report."""
    console, run_id, use_cache, timing = options.console, options.run_id, options.use_cache, options.timing
    with timing.part("inputs_s"):
        check_before_loading(config, rubric, cases)
        secret_from_env(config.target.api_key_env)
        run = RunDir(config.output_dir / (run_id or config.run_id or new_run_id()))
        # an unreadable input fails before the directory exists
        manifest = build_manifest(config, run_id=run.path.name, cases=cases)
    manifest.update(graders_manifest(config, rubric.forbidden))
    when_decided = options.stop_when_decided or rubric.stop_when_decided
    if when_decided or config.budget is not None:  # the order is an input of the run: in the manifest
        manifest["stopping"] = stop_plan(config, [c.id for c in cases], when_decided=when_decided)
    if config.budget is not None:  # a metered model with no price, a cap that pays for no case: refused
        require_prices(config, rubric, cases, config.budget)
        first = manifest["stopping"]["order"][0] if manifest["stopping"]["order"] else None
        require_one_case(config, rubric, next((c for c in cases if c.id == first), None), config.budget)
    target_answers(config, use_cache, console)  # a target that cannot be run leaves no empty run directory
    run.create()
    with run.lock():
        run.write_json(MANIFEST, manifest)
        info = _start(run, config, rubric, options.limit, no_cache=use_cache is False,
                      target_overrides=options.target_overrides, cases=tuple(cases))
        if "stopping" in manifest:
            info.stopping = dict(manifest["stopping"])
        seal(run.path, "check")
        how = dataclasses.replace(options, use_cache=not info.no_cache)
        return _execute(run, info, config, rubric, cases, manifest["target"]["fingerprint"], "start", how)


def run_check_file(config_path: Path, options: CheckOptions, *, output_dir: Path | None = None,
                   overrides: tuple[str, ...] = ()) -> tuple[RunDir, dict[str, Any]]:
    """`run_check` on a config file's inputs, `output_dir` in place of the config's, `overrides` (`--set`) over
    it. Only the first `options.limit` cases are read and validated (see load_inputs)."""
    with options.timing.part("inputs_s"):
        config, rubric, cases = load_inputs(config_path, limit=options.limit, overrides=overrides)
    for line in first_named(list(config.warnings), "warning(s)"):  # keys the run will not use: said before it starts
        options.console.print(f"warning: {line}", markup=False, soft_wrap=True)
    config = dataclasses.replace(config, output_dir=output_dir) if output_dir is not None else config
    return run_check(config, rubric, cases, dataclasses.replace(options, hand_over_cases=True))  # read here, for it


def resume_check(
    run_dir: Path, *, console: Console, progress: bool = True, retry_errors: bool = False, allow_pending: bool = False,
    use_cache: bool | None = None, budget_usd: float | None = None,
) -> tuple[RunDir, dict[str, Any]]:
    """Finish an interrupted run in place: the cases not yet recorded (and, with `retry_errors`, those whose
    latest record has an error), then a load phase that did not finish, then judge and report again.
    `use_cache`: None keeps the run's own choice (`check --no-cache` stays off); `budget_usd`: a new cap on the
    whole spend of a budgeted run, what was spent counted (`with_budget`)."""
    run = RunDir(run_dir)
    timing = Timing()
    run.read_info()  # "not a run directory" before anything else
    with run.lock():
        guard_seal(run.path, "check")  # a run sealed whole was written by nobody since: keep what changed
        info = run.read_info()
        with timing.part("inputs_s"):
            config, rubric, cases = load_run_inputs(run, info)
            config = with_budget(config, rubric, cases, info, budget_usd)
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
        check_metrics(rubric)
        require_seeded_order(info, config, [c.id for c in cases], run.path / "run.json")
        run.repair("records.jsonl")
        for session in info.sessions:  # we hold the lock: a session still 'running' was killed
            if session.get("status") == "running":
                session["status"] = "killed"
        how = CheckOptions(console, progress, allow_pending=allow_pending, timing=timing, hand_over_cases=True,
                           use_cache=not info.no_cache if use_cache is None else use_cache)
        return _execute(run, info, config, rubric, cases, manifest["target"]["fingerprint"],
                        "retry_errors" if retry_errors else "resume", how)


def load_run_inputs(run: RunDir, info: RunInfo) -> tuple[Config, Rubric, list[Case]]:
    """The config, rubric and cases of a saved run: its snapshots, paths resolved next to the original config."""
    if not info.config_path:
        raise InputError("run.json has no config_path: the run predates resume support", file=run.path / "run.json",
                         hint="start a new run")
    base = Path(info.config_path).parent
    config = load_config(run.path / "config.yaml", base_dir=base, secrets_from=Path(info.config_path),
                         secrets_overrides=recorded_overrides(run.path))  # the snapshot holds them already
    config = dataclasses.replace(config, output_dir=run.path.parent)
    if info.target_overrides:
        overrides: dict[str, Any] = {k: Path(v) if k in ("adapter", "draft") and v is not None else v for k, v in info.target_overrides.items()}
        config = dataclasses.replace(config, target=dataclasses.replace(config.target, **overrides))
    rubric = load_rubric(sealed_snapshot(run.path, "rubric.yaml"))
    cases = with_probes(load_suites(config.suites, base, limit=info.limit), config.probes,  # the first info.limit
                        limited=info.limit is not None)
    return config, rubric, cases


def _test_judge_delay() -> None:
    """Test hook, not a feature: RELEASEGATE_TEST_JUDGE_DELAY_S=S makes judging S seconds longer, spent inside
    object finalizers (where a KeyboardInterrupt is printed as "Exception ignored" and dropped), so that
    tests/test_signals.py can interrupt judging at its worst moment. Unset (always, outside tests): nothing."""
    delay = env_number(TEST_JUDGE_DELAY)
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline:
        _SlowFinalizer()


class _SlowFinalizer:
    def __del__(self) -> None:
        time.sleep(0.005)


def _recorded(run: RunDir, cases: list[Case]) -> dict[str, CaseRecord]:
    """The journal's latest record of each case, for a resume; a record of a case the run's suites do not have
    (an edited journal, or another run's lines) is refused: counted, it would answer for a case never asked."""
    done = {r.case_id: r for r in run.read_records(required=False)}
    strangers = sorted(set(done) - {c.id for c in cases})
    if strangers:
        raise InputError(f"records of {len(strangers)} case(s) the run's suites do not have, e.g. {strangers[0]!r}: "
                         "the journal was edited or holds another run's lines", file=run.records_path,
                         hint="start a new run; this one's files are kept as they are")
    return done


def _execute(run: RunDir, info: RunInfo, config: Config, rubric: Rubric, cases: list[Case], fingerprint: str, mode: str,
             how: CheckOptions) -> tuple[RunDir, dict[str, Any]]:
    console, progress, allow_pending, use_cache, timing = how.console, how.progress, how.allow_pending, \
        bool(how.use_cache), how.timing
    # a fresh run's journal is empty: only a resumed run has records to keep
    done = {} if mode == "start" else _recorded(run, cases)
    # an empty answer is a failed request (`evidence.failure`): --retry-errors sends it again too
    todo = [c for c in cases if c.id not in done or (mode == "retry_errors" and failure(done[c.id]) is not None)]
    load_phase = config.load is not None and info.load_phase is None
    prefix_probe = config.prefix_cache is not None and info.prefix_cache is None
    # the session is named in the response cache before run.json is written: a kill cannot leave it unnamed
    session: dict[str, Any] = {"mode": mode, "started_at": now(), "cases": len(todo), "cached": 0, "generation_seconds": 0.0,
               "status": "running", "cache_session": cache_session_name(info.run_id, len(info.sessions))}
    info.sessions.append(session)
    info.cases, info.status, info.finished_at = len(cases), "running", None
    info.phases = (["quality"] + (["load"] if config.load is not None else [])
                   + (["prefix_cache"] if config.prefix_cache is not None else []))
    run.write_info(info)
    if mode != "start":
        console.print(f"{mode.replace('_', ' ')}: {len(todo)} of {len(cases)} cases to run"
                      + (", then the load phase" if load_phase else ""), markup=False, soft_wrap=True)
    backend = cache = None
    INTERRUPTION.active, INTERRUPTION.finished_with = (run, info), None
    try:
        INTERRUPTION.raise_if_pending()
        cache = open_cache(config, fingerprint, use_cache, console, info) if todo else None
        hits = cache_hits(cache, todo)
        keep_sources(run, info, cache)  # the sessions behind the cached answers: their every attempt counts
        session["cached"] = len(hits)
        draws = pending_draws(run, info, config, cases, mode)  # generation.repeats: draws 1..k-1, never cached
        if len(hits) < len(todo) or draws or load_phase or prefix_probe:
            with timing.part("model_load_s"):
                backend = create_backend(config.target, config.generation, scale=config.scale)
                _load(backend, info, console, progress)
        generate_all(backend, todo, hits, config, rubric, run, info, session, cache, console, progress)
        generate_draws(backend, draws, config, rubric, run, session, console, progress)
        timing.add("generation_s", session["generation_seconds"])
        keep_client(info, session, backend)
        INTERRUPTION.raise_if_pending()
        if load_phase:
            for stale in ("load.jsonl", "server_metrics.jsonl"):  # a load phase is measured whole or not at all
                (run.path / stale).unlink(missing_ok=True)
            with timing.part("load_phase_s"):
                run_load_phase(backend, config, cases, run, info, console, progress)
        INTERRUPTION.raise_if_pending()
        if prefix_probe:
            (run.path / JOURNAL).unlink(missing_ok=True)  # measured whole or not at all, like the load phase
            run_prefix_cache(backend, config, cases, run, info)
        INTERRUPTION.raise_if_pending()
        if config.leakage is not None:  # the model still loaded: its probes against the base, answers searched
            with step(console, progress, "leakage probe"):
                run_leakage(backend, config, run, info)
        INTERRUPTION.raise_if_pending()
        if backend is not None:  # the model under test is done: free it before a local judge loads
            backend.close()
            backend = None
        with timing.part("judging_s"):
            _judge_outputs(run, info, config, console, progress, use_cache)
            guard_stage(run, info, config, rubric.forbidden, console=console, use_cache=use_cache,
                        between=INTERRUPTION.raise_if_pending)
            reconcile_graders(run, info, config, rubric)  # the judge's and guards' bills for their reservations
        if config.response_cache_probe is not None:  # a simulation on the answers and the guards' verdicts on them
            run_response_cache_probe(config, rubric, cases, run, info)
        INTERRUPTION.raise_if_pending()
    except BaseException as exc:
        interrupted = isinstance(exc, KeyboardInterrupt)
        INTERRUPTION.taken = INTERRUPTION.taken or interrupted
        info.status = session["status"] = "interrupted" if interrupted else "failed"
        info.finished_at = session["finished_at"] = now()
        keep_client(info, session, backend)  # the part that ran was measured by this client: it counts too
        info.timing = session["timing"] = timing.as_dict()
        run.write_info(info)
        seal(run.path, "check")
        INTERRUPTION.active = None
        if interrupted:
            _print_resume_hint(console, run)
        if isinstance(exc, TargetStopped):  # one line: what failed, how often, the last error, and the way on
            raise TargetStopped(f"{exc}; what was recorded is kept: releasegate check --resume {run.path}") from None
        raise
    finally:
        if backend is not None:
            backend.close()
        if cache is not None:
            cache.close()
    del done, todo, hits, draws  # let go before judging reads the journal again, as the cases (`let_go`)
    how.let_go(cases)
    # Every record is in, but run.json says 'complete' only from just before the reports (which show it) are
    # written: a run stopped while judging is 'interrupted' (killed: 'running'), and `check --resume` then
    # judges it and writes the reports without generating anything.
    info.status = session["status"] = "complete"
    info.finished_at = session["finished_at"] = now()
    try:
        corpus = CorpusScores.of(run)
        with timing.part("judging_s"), step(console, progress, "judging"):
            typed, scored = _judge(run, info, rubric, mode, allow_pending, corpus)
        typed = judged_by_snapshot(typed, run.path, scored.journals())  # the rubric and journals judged
        _test_judge_delay()
        INTERRUPTION.raise_if_pending()
        run.write_info(info)
        corpus.save(run)  # the corpus metric values, for every later `gate` to read
        with timing.part("reports_s"), step(console, progress, "writing the reports"):
            write_reports(run, typed, scored)  # the records as the gate read and scored them
        info.timing = session["timing"] = timing.as_dict()
        run.write_info(info)
        seal(run.path, "check")
        INTERRUPTION.finish(typed.exit_code, how.ends_command)  # on disk and sealed: a signal cannot undo it now
        INTERRUPTION.active = None
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            INTERRUPTION.taken = True
            info.status = session["status"] = "interrupted"
        info.timing = session["timing"] = timing.as_dict()
        run.write_info(info)  # any other error: 'complete', every record is in and `gate` can judge it again
        seal(run.path, "check")
        INTERRUPTION.active = None
        if isinstance(exc, KeyboardInterrupt):
            _print_resume_hint(console, run)
        raise
    return run, typed.as_json()


def _judge(run: RunDir, info: RunInfo, rubric: Rubric, mode: str, allow_pending: bool,
           corpus: CorpusScores) -> tuple[GateReport, ScoredRun]:
    """The verdict on the run's records as they are now on disk, and those records as read and scored once (the
    reports render from them); `corpus`: the run's stored `evaluate` values, given those computed here."""
    labels, drawn = None, drawn_rows(run) if mode != "start" else ()
    if mode != "start":  # reviewers may have labelled part of the run while it was stopped
        labels = counted_labels(run, rubric.review, read_labels(run))
    verdicts = run_verdicts(run, info)
    scored = scored_run(run, rubric.forbidden, verdicts)
    report = judge_run(GateInputs(
        info, scored.records, rubric, info.cost, scored.load_records, labels or [], allow_pending, verdicts,
        edited_evidence(run.path, found_only=True), corpus, scored.scores, "", (), scored.draws, drawn,
        ledger=scored.ledger, reused_labels=reused_labels(run, info, rubric.review, scored.records, labels or [])))
    return report, scored


def _judge_outputs(run: RunDir, info: RunInfo, config: Config, console: Console, progress: bool,
                   use_cache: bool) -> None:
    """The LLM judge grades the judge-scored outputs (releasegate.llm_judge.stage), when the config has one."""
    if config.judge is None:
        return
    judge_stage(run, info, config, console=console, bar_factory=lambda: progress_bar(console, progress),
                use_cache=use_cache, between=INTERRUPTION.raise_if_pending)


def _print_resume_hint(console: Console, run: RunDir) -> None:
    console.print(f"interrupted; finish it with: releasegate check --resume {run.path}", markup=False, soft_wrap=True)


def _start(run: RunDir, config: Config, rubric: Rubric, limit: int | None, *, no_cache: bool,
           target_overrides: dict[str, Any] | None = None, cases: tuple[Any, ...] = ()) -> RunInfo:
    run.write_text("config.yaml", config.snapshot_text())  # credentials masked (userinfo, tokens, secret values)
    run.write_text("rubric.yaml", yaml.safe_dump(rubric.as_dict(), sort_keys=False, allow_unicode=True))
    info = RunInfo(
        comparability=settings_key(_as_run(config.raw, limit), rubric.as_dict()),
        run_id=run.path.name, created_at=now(),
        target=config.target.describe(),
        backend=config.target.backend,
        cost=dataclasses.asdict(config.cost) if config.cost else None,
        versions=_versions(config.target.backend),
        host={"platform": platform.platform(), "cpus": os.cpu_count(), "threads": config.target.threads},
        computed=where_computed(config.scale, config.target.backend),
        config_path=str(config.path.resolve()), limit=limit,
        cuts=suite_cuts(config.suites, [c.suite for c in cases], limit, overridden=config.overrides),
        overrides=[f"{o['key']}={o['value']}" for o in recorded_overrides(run.path)],
        composition_sha256=composition_sha256(read_manifest(run.path)),  # run.json is sealed, manifest.json not
        no_cache=no_cache,
        target_overrides={k: str(v) if isinstance(v, Path) else v for k, v in (target_overrides or {}).items()} or None,
    )
    run.write_info(info)
    return info


def _as_run(raw: dict[str, Any], limit: int | None) -> dict[str, Any]:
    """The config as the run runs it: `--limit` also bounds the load phase (`load_phase.limited_load`), so a
    limited run's load profile is another load than the full one's (`servers` does not compare them)."""
    if limit is None or not raw.get("load"):
        return raw
    return {**raw, "load": {**raw["load"], "limit": limit}}


def _load(backend: Backend, info: RunInfo, console: Console, progress: bool) -> None:
    started = time.perf_counter()
    with step(console, progress, f"loading {info.target}"):
        backend.load()
    info.load_seconds = time.perf_counter() - started
    info.versions.update(_versions(info.backend, loaded=True))


def _versions(backend: str, loaded: bool = False) -> dict[str, str]:
    out = {"python": platform.python_version(), "releasegate": __version__}
    names = capabilities(backend).versions if loaded else ()  # the backend imported them as it loaded
    return {**out, **{name: importlib.import_module(name).__version__ for name in names}}
