"""The guard stage: every answered case's reply, and every answered repeated draw's (draws.jsonl,
`generation.repeats`), is shown to each guard the rubric's guard rules name, once per (guard, question, case,
output), by the judge's own request path (backend, response cache, journal).

A guard verdict is a `Judgment` in judgments.jsonl under the criterion 'guard:NAME' (ShieldGemma: one per policy,
'guard:NAME:CODE'), keyed by the guard's fingerprint: `passed` is False when the guard called the reply unsafe,
`reason` the category codes it named. A guard that cannot be reached, or answers in neither shape its format
expects, records an error: that reply has no guard verdict, and the forbidden rate it feeds is unknown. So does
a classifier that read only the start of a long reply (its model's max length) and called that start safe.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..backends import Generation, Request, create_backend
from ..errors import ErrorKind, InputError, judge_kind
from ..inputs.guard_settings import GuardSettings, TemplateFailed, Unparseable, guard_prompt, parse_guard_reply
from ..record.evidence import answered
from ..record.judge_journal import Judgment, judgment_key, read_judgments
from ..record.records import CaseRecord, RunDir
from ..record.review_outcome import output_hash
from ..run.draws import DRAWS
from ..run.manifest import MANIFEST, read_manifest
from ..scorers.forbidden import guard_names
from .stage import _open_cache, ask_in_batches, grader_fingerprint, grader_tokens, judge_manifest, model_inputs

if TYPE_CHECKING:
    from rich.console import Console

    from ..inputs.config import Config
    from ..inputs.rubric import ForbiddenRule
    from ..record.records import RunInfo

__all__ = ["guard_stage", "guard_question", "guard_fingerprint", "run_guard", "graders_manifest"]


def guard_question(name: str, policy: str | None) -> str:
    """The criterion a guard's verdict is journaled under."""
    return f"guard:{name}" if policy is None else f"guard:{name}:{policy}"


def guard_fingerprint(settings: GuardSettings, inputs: list[dict[str, Any]] | None = None) -> str:
    """The guard's fingerprint: its model files' hashes (or endpoint, or replayed verdicts), format, categories,
    prompt template and parameters. `inputs`: its files already hashed (`model_inputs`), so none is read twice."""
    inputs = model_inputs(settings.target) if inputs is None else inputs
    return settings.fingerprint(grader_fingerprint(settings.target, inputs))


def graders_manifest(config: Config, rules: Sequence[ForbiddenRule]) -> dict[str, Any]:
    """manifest.json's `judge` and `guards`: the LLM judge and each guard the forbidden `rules` ask, with their
    description, fingerprint and the sha256 of their files (model and adapter files, or replayed verdicts), so a
    run says which models judged it."""
    out: dict[str, Any] = {} if config.judge is None else {"judge": judge_manifest(config.judge)}
    guards = guards_manifest(config, rules)
    return {**out, "guards": guards} if guards else out


def guards_manifest(config: Config, rules: Sequence[ForbiddenRule]) -> dict[str, Any]:
    """manifest.json's `guards`: each guard the `rules` ask (and the config defines), its files hashed once."""
    out = {}
    for name in (n for n in guard_names(rules) if n in config.guards):
        inputs = model_inputs(config.guards[name].target)
        out[name] = {**config.guards[name].describe(), "inputs": [{**e, "role": f"guard:{e['role']}"} for e in inputs],
                     "fingerprint": guard_fingerprint(config.guards[name], inputs)}
    return out


def guard_stage(run: RunDir, info: RunInfo, config: Config, rules: Sequence[ForbiddenRule], *, console: Console, use_cache: bool,
                between: Callable[[], None]) -> None:
    """The guard stage of `check`: records each guard the forbidden `rules` name in run.json, then asks it about
    every reply it has no verdict on yet."""
    names = guard_names(rules)
    if not names:
        return
    missing = [n for n in names if n not in config.guards]
    if missing:
        raise InputError(f"the rubric's forbidden rules name guard '{missing[0]}', which the config does not define",
                         file=config.path, field="guards", hint="add it under guards: (see docs/scorers.md)")
    # the repeated draws too: a forbidden rate under repeats is per draw, and a draw no guard saw is unknown
    records = [r for r in run.read_records() + run.read_records(DRAWS, required=False) if answered(r)]
    hashed = guards_manifest(config, rules)  # each guard's files hashed once, now, as it is asked
    info.guards = {name: {**config.guards[name].describe(), "fingerprint": hashed[name]["fingerprint"],
                          "questions": [guard_question(name, q) for q in config.guards[name].questions()]}
                   for name in names}
    run.write_info(info)
    _record_guards(run, hashed)
    cache_path = config.cache.path if config.cache is not None and use_cache else None
    for name in names:
        failure = run_guard(run, records, config.guards[name], info.guards[name]["fingerprint"], cache_path, between)
        if failure and console is not None:
            console.print(f"guard {name}: {failure}; its replies have no guard verdict (forbidden_rate is unknown); "
                          f"finish with: releasegate check --resume {run.path}", markup=False, soft_wrap=True)


def _record_guards(run: RunDir, guards: dict[str, Any]) -> None:
    """manifest.json's `guards` as run.json's: the guards as they were when asked. A guard changed on disk since
    the run started (a `check --resume`, or an edit while the cases ran) is asked again under its new
    fingerprint, and the manifest then names the files that judged the run, not those hashed at its start."""
    try:
        manifest = read_manifest(run.path)
    except InputError:  # a run directory with no manifest (one built by hand) has none to keep them in
        return
    if manifest.get("guards") != guards:
        run.write_json(MANIFEST, {**manifest, "guards": guards})


def run_guard(run: RunDir, records: list[CaseRecord], settings: GuardSettings, fingerprint: str, cache_path: Path | None = None,
              between: Callable[[], None] = lambda: None) -> str | None:
    """Ask the guard every question it has no verdict on (or a failed one); the failure that stopped it, if any."""
    have = read_judgments(run)
    asks, keys = [], set()
    for r in records:  # a draw that said what another reply of its case said has that reply's verdict
        for q in settings.questions():
            key = judgment_key(r.case_id, guard_question(settings.name, q), fingerprint, output_hash(r.output))
            if key not in keys and ((j := have.get(key)) is None or j.error is not None):
                keys.add(key)
                asks.append((r, q))
    if not asks:
        return None
    generation = {"temperature": settings.temperature, "role": "guard"}
    return ask_in_batches(
        run, asks, backend=create_backend(settings.target, {"temperature": settings.temperature}),
        cache=_open_cache(cache_path, fingerprint, generation) if settings.cache else None,
        max_tokens=settings.max_tokens, request_id=lambda a: _id(a[0], a[1]), build=lambda a: _request(settings, a[0], a[1]),
        judge=lambda a, gen, cached: _judgment(settings, fingerprint, a[0], a[1], gen, cached), between=between)


def _user_turns(data: dict[str, Any]) -> str:
    """What the user said: the prompt, or the chat's messages (all but the assistant's) one per line."""
    if data.get("messages") is not None:
        return "\n".join(str(m.get("content", "")) for m in data["messages"] if m.get("role") != "assistant")
    return str(data.get("prompt", ""))


def _id(record: CaseRecord, policy: str | None) -> str:
    """The request's id: the case's (a repeated draw's: with '#DRAW'), and the policy asked."""
    case = f"{record.case_id}#{record.draw}" if record.draw else record.case_id
    return case if policy is None else f"{case}:{policy}"


def _request(settings: GuardSettings, record: CaseRecord, policy: str | None) -> Request | Generation:
    try:
        text = guard_prompt(settings, _user_turns(record.input), record.output or "", policy)
    except TemplateFailed as exc:
        return Generation(None, error=ErrorKind.TEMPLATE_ERROR, error_message=f"guard prompt template: {exc.message}")
    return Request(_id(record, policy), [{"role": "user", "content": text}])


def _judgment(settings: GuardSettings, fingerprint: str, record: CaseRecord, policy: str | None, gen: Generation,
              cached: bool) -> Judgment:
    base: dict[str, Any] = {"case_id": record.case_id, "criterion": guard_question(settings.name, policy), "judge": fingerprint,
            "output_hash": output_hash(record.output), "cached": cached,
            "tokens": grader_tokens(gen),
            "attempts": max(1, gen.timing.attempts),
            "latency_ms": None if cached else gen.timing.e2e_ms}
    if gen.error is not None or gen.text is None:
        return Judgment(**base, error=judge_kind(gen.error), error_message=gen.error_message)
    try:
        reply = parse_guard_reply(gen.text, settings.format, policy, settings)
    except Unparseable as exc:
        return Judgment(**base, error=ErrorKind.JUDGE_UNPARSEABLE, error_message=str(exc), raw=gen.text[:2000])
    if gen.truncated_to is not None and not reply.unsafe:  # it saw the start only: the rest may be what is unsafe
        return Judgment(**base, error=ErrorKind.JUDGE_INPUT_TRUNCATED, raw=gen.text[:2000], truncated_to=gen.truncated_to,
                        error_message=f"the guard read only the first {gen.truncated_to} tokens and called them safe")
    return Judgment(**base, passed=not reply.unsafe, reason=",".join(reply.codes), raw=gen.text[:2000],
                    truncated_to=gen.truncated_to)
