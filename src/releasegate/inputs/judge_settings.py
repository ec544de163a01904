"""The config's `judge:` section: which model grades, how it is asked, and the named grading criteria."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict

from ..data_classes import dataclass
from ..errors import InputError
from ..model_base import Model
from .backend_facts import spec
from .files import KeyAt, is_file, read_text
from .judge_prompt import check_template, template_text
from .read_doc import read_doc
from .schema_check import did_you_mean

if TYPE_CHECKING:
    from .config import Config
    from .suites import Case
    from .target import TargetConfig

__all__ = [
    "JudgeSettings", "Criterion", "criterion_of", "parse_judge", "TARGET_KEYS", "CalibrationPolicy", "parse_calibration",
    "check_judged_cases",
]

TARGET_KEYS = (
    "backend", "base", "adapter", "dtype", "threads", "batch_size", "device", "responses", "base_url", "model",
    "api_key_env", "client", "concurrency", "timeout_s", "stall_timeout_s", "connect_timeout_s", "retries",
    "extra_body", "headers", "secret_keys", "tokenizer", "max_response_bytes", "max_response_tokens",
)
"""Keys of `judge:` that describe the judge model exactly as `target:` describes the model under test."""


@dataclass(frozen=True)
class Criterion:
    """One grading criterion: pass/fail (no scale) or a grade 1..scale that passes from `pass_mark`."""

    name: str
    instructions: str
    scale: int | None = None
    pass_mark: int | None = None
    reference: bool | None = None
    """Show the judge the expected answer: True, False, or None (when the case has one)."""

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "instructions": self.instructions,
                **({"scale": self.scale, "pass_mark": self.pass_mark} if self.scale is not None else {}),
                **({"reference": self.reference} if self.reference is not None else {})}


class _Doc(Model):
    model_config = ConfigDict(frozen=True, extra="allow")


class CriterionDoc(_Doc):
    """A grading criterion as written: under `judge.criteria`, or inline in a `{type: judge}` answer spec (which
    may name a criterion of the config instead)."""

    criterion: str | None = None
    instructions: str | None = None
    scale: int | None = None
    pass_mark: int | None = None
    reference: bool | None = None


class JudgeDoc(_Doc):
    """The config's `judge:` section as written (its target keys are read as `target:` is)."""

    backend: str = "openai"
    prompt: str | None = None
    criteria: dict[str, CriterionDoc] | None = None
    baseline: str | None = None
    temperature: float = 0.0
    max_tokens: int = 256
    structured: str = "json_schema"
    max_output_chars: int = 20000
    system: str | None = None
    on_error: str = "insufficient"
    cache: bool = True
    price: dict[str, Any] | None = None


class CalibrationDoc(_Doc):
    """The rubric's `judge:` section as written."""

    min_agreement: float = 0.8
    min_labels: int = 20
    min_kappa: float | None = None
    confidence: float = 0.95
    max_order_inconsistency: float = 0.2


@dataclass(frozen=True)
class JudgeSettings:
    """A validated `judge:` section."""

    target: TargetConfig
    """A TargetConfig for the judge model (backend openai, hf or replay)."""
    temperature: float = 0.0
    max_tokens: int = 256
    structured: str = "json_schema"
    prompt_path: Path | None = None
    prompt_text: str | None = None
    """The user-message template read from `prompt_path` (None: the built-in one)."""
    max_output_chars: int = 20000
    system: str | None = None
    """The judge's system message (None: the built-in `prompt.SYSTEM`)."""
    on_error: str = "insufficient"
    cache: bool = True
    price: dict[str, Any] = field(default_factory=dict)
    criteria: dict[str, Criterion] = field(default_factory=dict)
    baseline: Path | None = None
    """A saved run directory: each judge-scored case is also compared with that run's output, in both orders."""

    def describe(self) -> dict[str, Any]:
        """What the manifest and report say of the judge: model, parameters, prompt template (credentials masked)."""
        t = self.target
        model = t.model or (str(t.base) if t.base else None) or (str(t.responses) if t.responses else None)
        return {
            "backend": t.backend, "model": model, "base_url": t.masked()["base_url"], "temperature": self.temperature,
            "max_tokens": self.max_tokens, "structured": self.structured, "max_output_chars": self.max_output_chars,
            "prompt": str(self.prompt_path) if self.prompt_path else "built-in",
            "prompt_sha256": hashlib.sha256(template_text(self).encode()).hexdigest(),
            "system_sha256": hashlib.sha256((self.system or "").encode()).hexdigest() if self.system else "built-in",
            "on_error": self.on_error, "criteria": {n: c.as_dict() for n, c in self.criteria.items()},
            "baseline": str(self.baseline) if self.baseline else None,
        }

    def fingerprint(self, target_fingerprint: str) -> str:
        """Everything that can change a verdict but the case itself: the judge model (its file hashes or endpoint),
        the parameters and the prompt template. Judgments and cached verdicts are keyed by it."""
        d = self.describe()
        payload = {"target": target_fingerprint, **{k: d[k] for k in (
            "temperature", "max_tokens", "structured", "max_output_chars", "prompt_sha256", "system_sha256")}}
        return "judge-" + hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def criterion_of(answer: dict[str, Any], settings: JudgeSettings | None, *, where: str = "answer") -> Criterion:
    """The criterion a `{type: judge}` answer spec grades by: named in the config, or written inline."""
    doc = read_doc(CriterionDoc, answer, None)
    name = doc.criterion
    if name is not None and doc.instructions is None:
        if settings is None or name not in settings.criteria:
            known = ", ".join(sorted(settings.criteria)) if settings else "none: the config has no judge section"
            guess = did_you_mean(str(name), sorted(settings.criteria)) if settings else ""
            raise InputError(f"judge criterion '{name}' is not defined (known: {known})", field=f"{where}.criterion",
                             hint=guess or "add it under judge.criteria in the config")
        return settings.criteria[name]
    return _criterion(name or "inline", doc, where)


def _criterion(name: str, raw: CriterionDoc, where: str) -> Criterion:
    scale, mark = raw.scale, raw.pass_mark
    if (scale is None) != (mark is None):
        raise InputError("scale and pass_mark go together", field=f"{where}.{'pass_mark' if scale else 'scale'}",
                         hint="give both (grades 1..scale, passing from pass_mark) or neither (pass/fail)")
    if scale is not None and mark is not None and not 1 <= mark <= scale:  # both or neither (checked above)
        raise InputError(f"pass_mark {mark} is outside the scale 1..{scale}", field=f"{where}.pass_mark")
    return Criterion(name, str(raw.instructions), scale, mark, raw.reference)


def parse_judge(raw: dict[str, Any] | None, here: Path, at: KeyAt,
                make_target: Callable[[dict[str, Any]], TargetConfig]) -> JudgeSettings | None:
    """The `judge:` section; `make_target(raw)` builds its TargetConfig (as `target:` is built)."""
    if raw is None:
        return None

    doc = read_doc(JudgeDoc, raw, None)
    backend = doc.backend
    need = spec(backend).required
    for key in need:
        if key not in raw:
            raise InputError(f"a judge with backend {backend} needs {key}", **at("judge"))
    # a judge that stops answering leaves its criteria undecided (judge errors): it never stops the run
    target = make_target({**{k: raw[k] for k in TARGET_KEYS if k in raw}, "backend": backend, "stop_after_errors": 0})
    prompt_path = prompt_text = None
    if doc.prompt:
        prompt_path = (here / doc.prompt).resolve()
        if not is_file(prompt_path):
            raise InputError(f"no prompt template at {prompt_path}", **at("judge", "prompt"))
        prompt_text = read_text(prompt_path, what="judge prompt template")
    criteria = {name: _criterion(name, spec, f"judge.criteria.{name}") for name, spec in (doc.criteria or {}).items()}
    baseline = (here / doc.baseline).resolve() if doc.baseline else None
    if baseline is not None and not is_file(baseline / "records.jsonl"):
        raise InputError(f"no run at {baseline} (no records.jsonl)", **at("judge", "baseline"),
                         hint="point at a saved run directory under reports/")
    settings = JudgeSettings(
        target=target, temperature=doc.temperature, max_tokens=doc.max_tokens, structured=doc.structured,
        prompt_path=prompt_path, prompt_text=prompt_text, max_output_chars=doc.max_output_chars, system=doc.system,
        on_error=doc.on_error, cache=doc.cache, price=dict(doc.price or {}), criteria=criteria, baseline=baseline,
    )

    check_template(settings, at("judge", "prompt"))
    return settings


@dataclass(frozen=True)
class CalibrationPolicy:
    """The rubric's `judge:` section."""

    min_agreement: float = 0.8
    min_labels: int = 20
    min_kappa: float | None = None
    confidence: float = 0.95
    max_order_inconsistency: float = 0.2
    """Pairwise: criteria on pairwise metrics decide only while the judge changes its preference with the order
    of the two outputs on at most this share of the cases."""

    def as_dict(self) -> dict[str, Any]:
        return {"min_agreement": self.min_agreement, "min_labels": self.min_labels, "confidence": self.confidence,
                "max_order_inconsistency": self.max_order_inconsistency,
                **({"min_kappa": self.min_kappa} if self.min_kappa is not None else {})}


def parse_calibration(raw: dict[str, Any] | None) -> CalibrationPolicy:
    doc = read_doc(CalibrationDoc, raw or {}, None)
    return CalibrationPolicy(min_agreement=doc.min_agreement, min_labels=doc.min_labels, min_kappa=doc.min_kappa,
                             confidence=doc.confidence, max_order_inconsistency=doc.max_order_inconsistency)


def check_judged_cases(config: Config, cases: Iterable[Case]) -> None:
    """Refuse, before anything runs, judge-scored cases with no judge configured or an unknown criterion."""
    for case in cases:
        answer = case.answer or {}
        if answer.get("type") != "judge":
            continue
        if config.judge is None:
            raise InputError(f"case {case.id} (suite {case.suite}) is graded by the judge, but the config has no "
                             "judge: section", file=config.path, field="judge",
                             hint="add judge: {base_url, model} (see docs/llm-judge.md)")
        suite = next((s for s in config.suites if s.name == case.suite), None)
        if suite is not None and answer is suite.answer:  # the suite's own answer check: its line in the config
            try:
                criterion_of(answer, config.judge)
            except InputError as exc:
                raise InputError(exc.message, **suite.key_at("answer", "criterion"), hint=exc.hint) from None
        criterion_of(answer, config.judge, where=f"suite {case.suite}, case {case.id}: answer")
