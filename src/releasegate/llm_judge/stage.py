"""The LLM judge stage: every judge-scored case with an output, and every answered repeated draw of one
(draws.jsonl, `generation.repeats`), is graded once per (judge, criterion, case, output): a draw that said what
another reply of its case said shares that reply's verdict, so a stable answer costs one call, not k.

It runs after generation (and the load phase), with the model under test released. Verdicts are appended to
judgments.jsonl batch by batch, so a stopped run keeps what was judged and `check --resume` asks only for the rest
(and again for verdicts that failed). A judge that cannot be reached records nothing: its cases stay unjudged,
the criteria they feed are insufficient, and the run is still complete (the model under test was measured).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from ..backends import Generation, Request, capabilities, create_backend
from ..backends.response_cache import ResponseCache
from ..border.hub import hub_snapshot
from ..data_classes import dataclass
from ..errors import ErrorKind, TargetError, judge_kind
from ..inputs.judge_prompt import (
    TemplateFailed,
    Unparseable,
    judge_messages,
    pairwise_messages,
    parse_preference,
    parse_reply,
    preference_format,
    response_format,
)
from ..inputs.judge_settings import Criterion, JudgeSettings, criterion_of
from ..inputs.target import TargetConfig
from ..record.evidence import answered
from ..record.judge_journal import JudgeTokens, Judgment, append_judgments, judgment_key, read_judgments
from ..record.records import CaseRecord, RunDir
from ..record.review_outcome import output_hash
from ..record.seal import seal
from ..run.draws import DRAWS
from ..run.manifest import sha256_file, target_fingerprint
from ..run.manifest_inputs import directory_files
from .judge_summary import judge_summary, judged_records

if TYPE_CHECKING:
    from rich.console import Console

    from ..inputs.config import Config
    from ..record.records import RunInfo

__all__ = [
    "judged_records", "run_judging", "judge_fingerprint", "judge_summary", "judge_stage",
    "settings_info", "judge_manifest", "JUDGE_BATCH", "model_inputs", "grader_fingerprint",
]

JUDGE_BATCH = 32
"""Verdicts per journal append (the backend runs `judge.concurrency` of them at a time)."""


def judge_fingerprint(settings: JudgeSettings, inputs: list[dict[str, Any]] | None = None) -> str:
    """The judge's fingerprint: its model files' hashes (or endpoint), parameters and prompt template.
    `inputs`: the judge's files already hashed (`judge_inputs`), so no file is read twice."""
    inputs = judge_inputs(settings) if inputs is None else inputs
    return settings.fingerprint(grader_fingerprint(settings.target, [e for e in inputs if e["role"] != "prompt"]))


def grader_fingerprint(target: TargetConfig, inputs: list[dict[str, Any]]) -> str:
    """What decides a grader's (judge's or guard's) verdicts as `run.manifest.target_fingerprint` hashes it, its
    `model_inputs` given. A hub model with no copy in the hub cache has no bytes to hash: it is known by its id
    (and dtype, device...), so another model never shares its fingerprint, its cached verdicts or its journal."""
    named = [{**e, "sha256": e["sha256"] or f"unhashed:{e['path']}"} for e in inputs]
    return target_fingerprint(target, named) or "unhashed"


def judge_inputs(settings: JudgeSettings) -> list[dict[str, Any]]:
    """The judge's files, each hashed once: model and adapter files (or the replayed verdicts), the prompt."""
    prompt = [{"role": "prompt", "path": str(p), "sha256": sha256_file(p)} for p in [settings.prompt_path] if p]
    return model_inputs(settings.target) + prompt


def model_inputs(target: TargetConfig) -> list[dict[str, Any]]:
    """The files that decide a grader's (judge's or guard's) verdicts, each hashed once: its model and adapter
    files (a hub id's: the files of its copy in the hub cache, as for the target), or the verdicts it replays. An
    endpoint has none: its URL and model name stand for it. A hub id with no local copy: one entry, sha256 None."""
    caps = capabilities(target.backend)
    files: list[tuple[str, Path, str]] = [(role, Path(path), Path(path).name) for role, name in caps.data_files
                                          if (path := getattr(target, name, None)) is not None]
    unhashed: list[dict[str, Any]] = []
    for owner, location in ((role, getattr(target, name)) for role, name in caps.model_dirs):
        if location is None:
            continue
        folder = Path(location) if Path(location).is_dir() else hub_snapshot(str(location))
        if folder is None:  # not on disk: the backend fetches it; its id is all there is to know it by
            unhashed.append({"role": owner, "path": f"hub:{location}", "name": str(location), "sha256": None})
            continue
        folder = folder.resolve()  # every file the manifest hashes for a target, chat template too
        files += [(owner, p, f"{owner}/{_relative(p, folder)}") for _, p in directory_files(folder, owner)]
    # named relative to the model directory, so a moved checkout keeps its fingerprint (and its cached verdicts)
    return [{"role": role, "path": str(p), "name": name, "sha256": sha256_file(p)} for role, p, name in files] + unhashed


def _relative(path: Path, folder: Path) -> str:
    """`path` named within `folder`; a file linked from elsewhere (a hub snapshot's blobs) by its own name."""
    return str(path.relative_to(folder)) if path.is_relative_to(folder) else path.name


def run_judging(
    run: RunDir, records: list[CaseRecord], settings: JudgeSettings, *, cache_path: Path | None = None, use_cache: bool = True,
    console: Console | None = None, bar: Any = None, between: Callable[[], None] = lambda: None, fingerprint: str | None = None,
) -> dict[str, Any]:
    """Judge the run's judge-scored outputs that have no verdict yet (or a failed one), and, with a
    `judge.baseline`, compare each with the baseline run's output in both orders; return the summary."""
    fingerprint = fingerprint or judge_fingerprint(settings)
    have = read_judgments(run)
    groups: dict[tuple[Any, ...], list[_Ask]] = {}
    keys: set[tuple[Any, ...]] = set()
    for ask in _asks(records, settings):  # a draw that said what another reply of its case said: asked once
        key = ask.key(fingerprint)
        if key not in keys and ((j := have.get(key)) is None or j.error is not None):
            keys.add(key)
            groups.setdefault((ask.criterion.name, ask.order is not None), []).append(ask)
    task = bar.add_task("judging", total=sum(map(len, groups.values()))) if bar is not None and groups else None
    failure = None
    for asks in groups.values():
        failure = _judge_group(run, asks, settings, fingerprint, cache_path if use_cache and settings.cache else None,
                               bar, task, between) or failure
    if failure and console is not None:
        console.print(f"judge: {failure}; its cases are not judged (criteria they feed are insufficient); "
                      f"finish with: releasegate check --resume {run.path}", markup=False, soft_wrap=True)
    return {"fingerprint": fingerprint, "unreachable": failure}


@dataclass(frozen=True)
class _Ask:
    """One question to the judge: a verdict on an output, or (pairwise) a preference in one order."""

    record: CaseRecord
    criterion: Criterion
    order: str | None = None
    baseline_output: str | None = None

    @property
    def request_id(self) -> str:
        """The case's id (a repeated draw's: with '#DRAW'), and the order of a pairwise question."""
        case = f"{self.record.case_id}#{self.record.draw}" if self.record.draw else self.record.case_id
        return case if self.order is None else f"{case}:{self.order}"

    def key(self, fingerprint: str) -> tuple[Any, ...]:
        base = output_hash(self.baseline_output) if self.order else None
        return judgment_key(self.record.case_id, self.criterion.name, fingerprint, output_hash(self.record.output),
                            self.order, base)

    def messages(self, settings: JudgeSettings) -> list[dict[str, Any]]:
        if self.order is None:
            return judge_messages(self.record, self.criterion, settings)
        assert self.baseline_output is not None  # a pairwise question always carries the baseline's output
        return pairwise_messages(self.record, self.baseline_output, self.criterion, settings, self.order)

    def response_format(self, structured: str) -> dict[str, Any] | None:
        return response_format(self.criterion, structured) if self.order is None else preference_format(structured)


def _asks(records: list[CaseRecord], settings: JudgeSettings) -> list[_Ask]:
    baseline = _baseline_outputs(settings)
    out = []
    for record in judged_records(records):
        if not answered(record):  # a failed request or an empty answer has nothing to judge
            continue
        assert record.answer is not None  # judged_records keeps records with a judge answer spec only
        criterion = criterion_of(record.answer, settings)
        out.append(_Ask(record, criterion))
        other = baseline.get(record.case_id) if not record.draw else None  # compared on its draw 0 alone
        if other is not None:
            out += [_Ask(record, criterion, order, other) for order in PAIR_ORDERS]
    return out


PAIR_ORDERS = ("candidate_first", "baseline_first")


def _baseline_outputs(settings: JudgeSettings) -> dict[str, str]:
    if settings.baseline is None:
        return {}
    return {r.case_id: r.output for r in RunDir(settings.baseline).read_records()
            if answered(r) and r.output is not None}  # an answer has an output: the check only narrows the type


def _judge_group(run: RunDir, asks: list[_Ask], settings: JudgeSettings, fingerprint: str, cache_path: Path | None,
                 bar: Any, task: Any, between: Callable[[], None]) -> str | None:
    """One criterion's questions of one kind (one response_format): batches, each appended as it comes back."""
    target, generation = _judge_target(settings, asks[0])

    def advance(n: int) -> None:
        if bar is not None:
            bar.advance(task, n)

    return ask_in_batches(
        run, asks, backend=create_backend(target, generation),
        cache=_open_cache(cache_path, fingerprint, generation), max_tokens=settings.max_tokens,
        request_id=lambda a: a.request_id, build=lambda a: _request(a, settings),
        judge=lambda a, gen, cached: _judgment(a, fingerprint, gen, cached=cached), between=between, advance=advance)


def ask_in_batches(run: RunDir, items: list[Any], *, backend: Any, cache: ResponseCache | None, max_tokens: int,
                   request_id: Callable[[Any], str], build: Callable[[Any], Request | Generation],
                   judge: Callable[[Any, Generation, bool], Any], between: Callable[[], None],
                   advance: Callable[[int], None] = lambda n: None) -> str | None:
    """Ask a judging model (the judge, a guard) about `items` in batches of JUDGE_BATCH: each item's request
    (`build`: a Request, or the failed Generation of a prompt template that failed) answered from the response
    cache or by `backend`, made a Judgment by `judge(item, generation, cached)` and appended as its batch comes
    back; only replies that held a verdict are cached. The failure that stopped it (the backend would not load),
    if any. The backend and the cache are closed at the end."""
    try:
        backend.load()
    except TargetError as exc:
        if cache is not None:
            cache.close()
        return str(exc)
    try:
        for start in range(0, len(items), JUDGE_BATCH):
            between()
            batch = items[start:start + JUDGE_BATCH]
            built = {request_id(item): build(item) for item in batch}
            requests = [q for q in built.values() if isinstance(q, Request)]
            hits = {q.case_id: g for q in requests if cache is not None and (g := cache.get(q)) is not None}
            fresh = [q for q in requests if q.case_id not in hits]
            gens = dict(zip([q.case_id for q in fresh], backend.generate(fresh, max_new_tokens=max_tokens)
                            if fresh else []))
            gens.update({rid: q for rid, q in built.items() if not isinstance(q, Request)})
            judgments = [judge(item, hits.get(request_id(item)) or gens[request_id(item)], request_id(item) in hits)
                         for item in batch]
            append_judgments(run, judgments)
            if cache is not None:  # only replies that held a verdict are worth keeping
                ok = {request_id(item) for item, j in zip(batch, judgments)
                      if j.error is None and not j.cached and j.truncated_to is None}  # the cache keeps no cut
                cache.put_many([(q, gens[q.case_id]) for q in fresh if q.case_id in ok])
            advance(len(batch))
    finally:
        backend.close()
        if cache is not None:
            cache.close()
    return None


def _request(ask: _Ask, settings: JudgeSettings) -> Request | Generation:
    """The judge request of one question, or, when its prompt template fails on this case (an exception, past
    its render budget), the failed Generation that becomes its judge error (judge_template_error)."""
    try:
        return Request(ask.request_id, ask.messages(settings))
    except TemplateFailed as exc:
        return Generation(None, error=ErrorKind.TEMPLATE_ERROR, error_message=f"judge prompt template: {exc.message}")


def _judge_target(settings: JudgeSettings, ask: _Ask) -> tuple[TargetConfig, dict[str, Any]]:
    t = settings.target
    generation: dict[str, Any] = {"temperature": settings.temperature}
    fmt = ask.response_format(settings.structured) if capabilities(t.backend).response_format else None
    if fmt is not None:
        t = dataclasses.replace(t, extra_body={**t.extra_body, "response_format": fmt})
        generation["response_format"] = fmt  # part of the cache key
    return t, generation


def _open_cache(path: Path | None, fingerprint: str, generation: dict[str, Any]) -> ResponseCache | None:
    if path is None:
        return None

    return ResponseCache(path, fingerprint=fingerprint, generation={**generation, "role": "judge"})


class _JudgmentBase(TypedDict):
    """The fields every Judgment of one question shares, verdict or error."""

    case_id: str
    criterion: str
    judge: str
    output_hash: str
    scale: int | None
    pass_mark: int | None
    tokens: JudgeTokens
    cached: bool
    attempts: int
    latency_ms: float | None
    order: str | None
    baseline_hash: str | None


def grader_tokens(gen: Generation) -> JudgeTokens:
    """A grader's token counts as journaled: an output counted one a streamed chunk (no usage, no tokenizer) is a
    guess, not a count, so it is left out and the grader's bill (`pipeline.grader_spend`) takes its worst case."""
    output = gen.tokens.output if gen.tokens.source != "chunks" else None
    return JudgeTokens(input=gen.tokens.input, output=output)


def _judgment(ask: _Ask, fingerprint: str, gen: Generation, *, cached: bool) -> Judgment:
    record, criterion = ask.record, ask.criterion
    base = _JudgmentBase(case_id=record.case_id, criterion=criterion.name, judge=fingerprint,
                output_hash=output_hash(record.output), scale=criterion.scale, pass_mark=criterion.pass_mark,
                tokens=grader_tokens(gen), cached=cached,
                attempts=max(1, gen.timing.attempts),
                latency_ms=None if cached else gen.timing.e2e_ms, order=ask.order,
                baseline_hash=output_hash(ask.baseline_output) if ask.order else None)
    if gen.error is not None or gen.text is None:
        return Judgment(**base, error=judge_kind(gen.error), error_message=gen.error_message)
    try:
        if ask.order is not None:
            position, reason = parse_preference(gen.text)
            return Judgment(**base, preferred=_undo_position(position, ask.order), reason=reason)
        parsed = parse_reply(gen.text, criterion)
        return Judgment(**base, passed=parsed.passed, score=parsed.score, reason=parsed.reason)
    except Unparseable as exc:
        return Judgment(**base, error=ErrorKind.JUDGE_UNPARSEABLE, error_message=str(exc), raw=gen.text[:2000])
    except Exception as exc:  # a reply no parser foresaw (the judge is a server: untrusted) is this case's error
        return Judgment(**base, error=ErrorKind.JUDGE_UNPARSEABLE, error_message=f"unreadable reply: {type(exc).__name__}",
                        raw=gen.text[:2000])


def _undo_position(position: str, order: str) -> str:
    """'A' / 'B' / 'tie' as shown in `order` -> 'candidate' / 'baseline' / 'tie'."""
    if position == "tie":
        return "tie"
    first = "candidate" if order == "candidate_first" else "baseline"
    second = "baseline" if first == "candidate" else "candidate"
    return first if position == "A" else second


def settings_info(settings: JudgeSettings, fingerprint: str) -> dict[str, Any]:
    """What run.json keeps of the judge (`RunInfo.judge`)."""
    return {**settings.describe(), "fingerprint": fingerprint, "price": settings.price}


def judge_manifest(settings: JudgeSettings) -> dict[str, Any]:
    """manifest.json `judge`: the judge's description, fingerprint and the sha256 of its files (model, adapter or
    replayed verdicts, and the prompt template)."""
    inputs = judge_inputs(settings)
    return {**settings.describe(), "fingerprint": judge_fingerprint(settings, inputs),
            "inputs": [{**e, "role": f"judge:{e['role']}"} for e in inputs]}


def judge_stage(run: RunDir, info: RunInfo, config: Config, *, console: Console, bar_factory: Callable[[], Any],
                use_cache: bool, between: Callable[[], None]) -> None:
    """The judging stage of `check`: records the judge in run.json, then grades what is not graded yet."""
    settings = config.judge
    # the repeated draws too: accuracy under repeats is per draw, and a draw the judge never saw is unknown
    records = [r for r in run.read_records() + run.read_records(DRAWS, required=False) if answered(r)]
    if settings is None or not judged_records(records):
        return
    fingerprint = judge_fingerprint(settings)
    info.judge = settings_info(settings, fingerprint)
    run.write_info(info)
    cache_path = config.cache.path if config.cache is not None else None  # as for responses: on with `cache:`
    with bar_factory() as bar:
        run_judging(run, records, settings, cache_path=cache_path, use_cache=use_cache, console=console, bar=bar,
                    between=between, fingerprint=fingerprint)
    seal(run.path, "judge")
