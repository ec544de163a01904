"""The generation stage of a run: cached responses looked up, fresh ones generated in batches, each batch journaled.

Batches are appended to records.jsonl and fsynced as they are generated, so a kill loses at most the batch in
flight; with length bucketing they are generated in order of prompt length and the journal is put back in case
order when generation ends.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from rich.console import Console

from ..backends import Backend, Generation, Request, capabilities
from ..backends.response_cache import ResponseCache
from ..border.files import read_capped, replace_file
from ..border.structured import json_loads
from ..errors import ErrorKind, InputError
from ..gate.stopping import stopping_of
from ..inputs.config import Config
from ..inputs.rubric import Rubric
from ..inputs.suites import Case, load_suites
from ..record.evidence import answered, attempt_outcomes, worst_client
from ..record.ledger import append_sources, read_ledger
from ..record.records import MAX_JOURNAL_BYTES, CaseRecord, RunDir, RunInfo
from ..scorers import stored_scores
from .budget import BudgetWatch
from .interruption import INTERRUPTION
from .progress import count_done, progress_bar
from .stop_watch import StopWatch
from .stopping import stop_if_dead
from .tool_path import prove_tool_path
from .tool_turns import continue_turns

__all__ = ["open_cache", "cache_hits", "cache_session_name", "keep_sources", "generate_all", "keep_client"]

_MAX_PENDING = 512  # cached records appended at least this often, so a long run of hits is journaled too


def open_cache(config: Config, fingerprint: str | None, use_cache: bool, console: Console, info: RunInfo | None = None) -> ResponseCache | None:
    """The config's response cache for this model and generation settings, for the run's latest session (`info`:
    its name in the cache, standing on the run's earlier sessions); None when off or unusable."""
    if config.cache is None or not use_cache:
        return None
    if config.repeats > 1 or any((s.repeats or 1) > 1 for s in config.suites):
        console.print("response cache not used: generation.repeats asks every draw of every case anew",
                      markup=False, soft_wrap=True)
        return None
    if fingerprint is None:
        console.print("response cache not used: the model is a hub id with no local copy to fingerprint",
                      markup=False, soft_wrap=True)
        return None

    generation = {**config.generation, "max_new_tokens": config.max_new_tokens}
    own = _cache_sessions(info)
    return ResponseCache(config.cache.path, fingerprint=fingerprint, generation=generation, ttl_s=config.cache.ttl_s,
                         session=own[-1] if own else None, stood_on=tuple(own[:-1]))


def _cache_sessions(info: RunInfo | None) -> list[str]:
    """The run's sessions' names in the response cache, oldest first; the latest session is given one here."""
    if info is None or not info.sessions:
        return []
    info.sessions[-1].setdefault("cache_session", cache_session_name(info.run_id, len(info.sessions) - 1))
    return [s["cache_session"] for s in info.sessions if isinstance(s.get("cache_session"), str)]


def cache_session_name(run_id: str, index: int) -> str:
    """A session's name in the response cache, 'run id/session-random': the random part keeps runs that share a
    run id (in other directories) from sharing a tally."""
    return f"{run_id}/{index}-{uuid.uuid4().hex[:12]}"


def keep_sources(run: RunDir, info: RunInfo, cache: ResponseCache | None) -> None:
    """Write to the attempts ledger the tally of every session the run's cached answers came from (and those they
    stood on), each once, before any cached record is: a run that serves one answer of a session counts every
    attempt that session made, its failures on other cases too (`record.ledger`). The run's own sessions are
    left out: its records hold their attempts."""
    if cache is None or not cache.sources:
        return
    append_sources(run.path, cache.ledger(leave_out=set(_cache_sessions(info))))


def cache_hits(cache: ResponseCache | None, cases: list[Case]) -> dict[str, Generation]:
    """Case id -> the cached generation, for the cases the cache has a response for."""
    if cache is None:
        return {}
    hits: dict[str, Generation] = {}
    for case in cases:
        gen = cache.get(_request(case)) if case.tools is None else None  # tool calls are never cached
        if gen is not None:
            hits[case.id] = gen
    return hits


def generate_all(backend: Backend | None, todo: list[Case], hits: dict[str, Generation], config: Config, rubric: Rubric,
                 run: RunDir, info: RunInfo, session: dict[str, Any], cache: ResponseCache | None, console: Console,
                 show: bool) -> None:
    """Generate in batches of fresh requests; cached responses are recorded in case order between them.

    With length bucketing (`_by_length`) the cached cases come first and the fresh ones follow in order of prompt
    length, so a batch holds neighbours in length and pads little. Each batch is appended and fsynced as soon as it
    is generated, as ever (a kill loses at most the batch in flight, a resume skips the recorded ids), and when
    generation ends (done, interrupted or failed; after a kill -9, when the resumed run's does)
    `_restore_case_order` puts records.jsonl back in case order, the order every reader has always seen."""
    if backend is not None and any(c.tools for c in todo):  # the server's tool path, before any tool case is asked
        prove_tool_path(backend, todo, config.max_new_tokens, console)
    watch, budget, batches = _dispatch(todo, hits, config, rubric, run, info, backend)
    try:
        with progress_bar(console, show) as bar:
            task = bar.add_task("generating", total=len(todo))
            for group, gens in _generated(backend, batches, hits, config, run, info, session):
                sent = [c for c in group if c.id in hits or gens[c.id].error != ErrorKind.NOT_SENT]
                records = [_record(c, hits.get(c.id) or gens[c.id], rubric, cached=c.id in hits) for c in sent]
                if INTERRUPTION.signum is not None:
                    # the run is stopping: a request that failed now may have been cut by the stop itself, which is
                    # no failure of the target; left unrecorded, the resume sends it again
                    kept = [(c, r) for c, r in zip(sent, records) if answered(r)]
                    sent, records = [c for c, _ in kept], [r for _, r in kept]
                run.append(records)
                if budget is not None:
                    budget.count(records)
                # after the append: a response is cached once it is recorded; an empty answer never is (a failure)
                if cache is not None:
                    _cache_batch(cache, [(c, r) for c, r in zip(sent, records) if c.id not in hits], gens)
                count_done(bar, task, len(sent), failed=sum(not answered(r) for r in records))
                stop_if_dead(backend, "quality phase")  # a case never sent is not recorded: a resume sends it
                if watch is not None and watch.decided(records):
                    break  # every criterion decided: nothing more is sent
    finally:
        if budget is not None:
            budget.write(len(run.read_records(required=False)))
        # length order, or batches finishing out of order on several workers; also mends a killed session's order
        if capabilities(config.target.backend).reorders_cases and (config.target.bucket_by_length or config.scale is not None):
            try:
                _restore_case_order(run, info, config, todo)
            except OSError:  # every record is in all the same, in the order generated; a resume reorders them
                pass
    if cache is not None and cache.error:
        console.print(f"response cache: {cache.error}; every response was recorded; some were not cached or not looked up",
                      markup=False, soft_wrap=True)


def _dispatch(todo: list[Case], hits: dict[str, Generation], config: Config, rubric: Rubric, run: RunDir, info: RunInfo,
              backend: Backend | None) -> tuple[StopWatch | None, BudgetWatch | None, Iterable[list[Case]]]:
    """(the stop watch, the budget watch, the batches to send): the seed's order for a run that may stop, and no
    more in flight than the target's concurrency asks; with a budget, each batch cut where a case's worst case
    would cross a cap (`run.budget`), what earlier sessions spent counted first."""
    size = max(1, backend.batch_size) if backend is not None else 1
    # what earlier sessions recorded, only where a stop or a budget counts it (a plain run reads its journal once)
    done = run.read_records(required=False) if stopping_of(info) or config.budget is not None else []
    watch = StopWatch(info, rubric, done, read_ledger(run.path, None)) if stopping_of(info) else None
    if watch is not None:
        order = [] if watch.decided([]) else watch.arrange(todo)  # a resumed run that had stopped asks no more
        if capabilities(config.target.backend).in_flight == "concurrency":
            size = min(size, max(1, config.target.concurrency))
    else:
        order = _by_length(backend, todo, hits, config, size) or todo
    batches: Iterable[list[Case]] = _batches(order, hits, size)
    if config.budget is None:
        return watch, None, batches
    budget = BudgetWatch(config, rubric, info, config.budget)
    budget.count(done)
    admitted = budget.admit(batches, hits)
    # workers are handed every batch at once: each reserved up front (a budget also asks the seed's order, which
    # refuses scale: this is for a backend of its own that generates many)
    return watch, budget, list(admitted) if getattr(backend, "generate_many", None) else admitted


def _batches(order: list[Case], hits: dict[str, Generation], size: int) -> list[list[Case]]:
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


def _generated(backend: Backend | None, batches: Iterable[list[Case]], hits: dict[str, Generation], config: Config,
               run: RunDir, info: RunInfo, session: dict[str, Any]
               ) -> Iterator[tuple[list[Case], dict[str, Generation]]]:
    """Each batch with its fresh cases' generations: one after the other, or, for a backend spread over workers
    (`generate_many`, see releasegate.scale), in the order they finish, generation time counted as wall time."""
    many = getattr(backend, "generate_many", None)
    if many is None:
        for group in batches:
            fresh = [c for c in group if c.id not in hits]
            yield group, _generate(backend, fresh, config, run, info, session) if fresh else {}
        return
    batches = list(batches)  # a list already: workers are handed every batch at once (`_dispatch`)
    fresh_of = [[c for c in group if c.id not in hits] for group in batches]
    last = time.perf_counter()
    for i, out in many([[_request(c) for c in f] for f in fresh_of], max_new_tokens=config.max_new_tokens):
        continue_turns(backend, fresh_of[i], out, config.max_new_tokens)
        if fresh_of[i]:
            now_s = time.perf_counter()
            _count_generation(info, session, run, now_s - last)
            last = now_s
        yield batches[i], {c.id: g for c, g in zip(fresh_of[i], out)}


def _by_length(backend: Backend | None, todo: list[Case], hits: dict[str, Generation], config: Config, size: int) -> list[Case] | None:
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
    assert measure is not None  # one of the two, checked above

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
    data = read_capped(path, what="records.jsonl", max_bytes=MAX_JOURNAL_BYTES)
    lines = [line for line in data.splitlines(keepends=True) if line.strip()]
    try:
        ids = [json_loads(line)["case_id"] for line in lines]
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
    replace_file(path, b"".join(moved), what="records.jsonl", durable=True)


def _generate(backend: Backend | None, fresh: list[Case], config: Config, run: RunDir, info: RunInfo,
              session: dict[str, Any]) -> dict[str, Generation]:
    assert backend is not None  # fresh cases are asked: the run loaded one (pipeline.check)
    started = time.perf_counter()
    out = backend.generate([_request(c) for c in fresh], max_new_tokens=config.max_new_tokens)
    continue_turns(backend, fresh, out, config.max_new_tokens)  # a scripted conversation's later turns
    keep_client(info, session, backend)  # checkpointed with the time: a killed part's lateness is kept too
    if backend.measures_latency:
        _count_generation(info, session, run, time.perf_counter() - started)
    return {c.id: g for c, g in zip(fresh, out)}


def keep_client(info: RunInfo, session: dict[str, Any], backend: Backend | None) -> None:
    """The client's own lateness over the quality phase: this session's so far (`sessions[].client`), and in
    run.json `client` the worst of every session's (`evidence.worst_client`), so a resume that re-ran a few cases
    never hides the lateness of an earlier part whose samples the run still holds."""
    stats = getattr(backend, "client_stats", None)
    if stats:
        session["client"] = stats
        # requests in flight at most: the reports say under what load the quality cases' latency was measured
        session["concurrency"] = getattr(getattr(backend, "target", None), "concurrency", None)
        info.client = worst_client(*(s.get("client") for s in info.sessions if isinstance(s, dict)), info.client, stats)


def _cache_batch(cache: ResponseCache, fresh: list[tuple[Case, CaseRecord]], gens: dict[str, Generation]) -> None:
    """Cache a recorded batch's answers, with the session's tally (every attempt just recorded, failed ones too)
    and the requests that failed (a later session that sends them again stands on this one)."""
    answers = [(_request(c), gens[c.id]) for c, r in fresh if answered(r) and c.tools is None]
    failed = [_request(c) for c, r in fresh if not answered(r)]
    cache.put_many(answers, attempt_outcomes([r for _, r in fresh]), failed)


def _count_generation(info: RunInfo, session: dict[str, Any], run: RunDir, elapsed: float) -> None:
    """Checkpointed before the records it paid for (see RunInfo.generation_seconds)."""
    info.generation_seconds = (info.generation_seconds or 0.0) + elapsed
    session["generation_seconds"] += elapsed
    run.write_info(info)


def _request(case: Case) -> Request:
    tools = case.tools or {}
    return Request(case.id, list(case.messages) if case.messages else None, case.prompt,
                   tools=tools.get("tools") or None, tool_choice=tools.get("tool_choice"))


def _record(case: Case, gen: Generation, rubric: Rubric, *, cached: bool = False) -> CaseRecord:
    record = CaseRecord(
        case_id=case.id, suite=case.suite, tags=case.tags, input=case.input, expected=case.expected,
        answer=case.answer, format=list(case.format), output=gen.text, error=gen.error,
        error_message=gen.error_message, tokens=gen.tokens, timing=gen.timing, cached=cached,
        produced_by=gen.produced_by if cached else None, produced_in=gen.produced_in if cached else None,
        stratum=getattr(case, "stratum", None), tools=case.tools, tool_calls=gen.tool_calls,
    )
    record.scores, record.scored_with = stored_scores(record, rubric.forbidden)  # reused by every later stage
    return record
