"""What makes two runs runs of the same thing: the comparability key.

Two parts:

- per case, a hash of what was asked and what counts as right (`case_hash`: the input as sent and the expected
  answer), read from the records themselves, so a case whose id matches but whose prompt or reference differs is
  a different case, never a shared one;
- per run, hashes of the settings that shape every figure (`settings_key`): generation settings, load profile,
  the capacity sweep's latency objective (SLO) and the rubric. `check` stores them in run.json (`comparability`)
  when the run starts; for a run that predates it they are derived from its snapshots (config.yaml, rubric.yaml),
  which hold the same sections, so a stored key and a derived one agree.

`differences` names the settings parts two keys disagree on; a part one run cannot tell (no snapshot) is
`unchecked`, never "the same". What each surface does with a difference is its own rule (docs/compare.md):
`compare` and rubric `baseline:` refuse different generation settings (BASELINE_PARTS), `servers` refuses
different generation, load or objective settings and never recommends a target judged by another rubric, and a
case whose contents differ is left out of the pairing and named.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict

from ..border.files import sha256_file
from ..errors import InputError
from ..inputs.files import stored_yaml
from ..model_base import Model
from ..scorers.forbidden import guard_names
from .health import saved_run_problems, target_failure

if TYPE_CHECKING:
    from ..inputs.rubric import ForbiddenRule
    from ..record.records import CaseRecord, RunInfo

__all__ = ["SETTINGS_PARTS", "BASELINE_PARTS", "case_hash", "paired_hash", "settings_key", "saved_settings_key", "differences",
           "same_run", "describe_differences", "baseline_problems", "settings_problem", "coverage_problem",
           "MIN_SHARED_SHARE", "guard_problem"]

SETTINGS_PARTS = ("generation", "load", "slo", "rubric")
"""The run-wide parts of the key, in the order a difference is named."""
BASELINE_PARTS = ("generation",)
"""The parts on which `compare` refuses (and a rubric `baseline:` decides nothing) when they differ: they change
what the model was asked to do. Load profile, SLO and rubric do not enter a comparison of quality records."""
_PART_NAMES = {"generation": "generation settings", "load": "load profile", "slo": "latency objective (SLO)",
               "rubric": "rubric"}


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def case_hash(record: CaseRecord) -> str:
    """The hash of one case's contents: its input as sent and its expected answer."""
    return _digest({"input": record.input, "expected": record.expected})


def paired_hash(record: CaseRecord) -> str:
    """`case_hash` and how the case is checked (its answer and format specs): two runs pair a case only where
    both asked it and judged it alike; a baseline graded by a stricter check would make any candidate look good."""
    return _digest({"case": case_hash(record), "answer": record.answer, "format": record.format})


def settings_key(config_raw: dict[str, Any] | None, rubric: dict[str, Any] | None) -> dict[str, str | None]:
    """The run-wide part of the key from the config as written (its `generation` and `load` sections) and the
    rubric as snapshotted; None for a part with nothing to read it from. The rubric's `baseline:` pointer and
    its name are left out: a candidate names its baseline, the baseline does not, and a name decides nothing."""
    config = _config_parts(_ConfigSettings.model_validate(config_raw)) if config_raw is not None else {}
    judged = {"rubric": _digest({k: v for k, v in rubric.items() if k not in ("baseline", "name")})} if rubric is not None else {}
    return {**dict.fromkeys(SETTINGS_PARTS), **config, **judged}


class _ConfigSettings(Model):
    """The sections of a config the settings key reads (as written: `inputs` has checked them)."""

    model_config = ConfigDict(extra="allow")

    generation: dict[str, Any] | None = None
    load: dict[str, Any] | None = None
    target: Any = None


class _Target(Model):
    model_config = ConfigDict(extra="allow")

    extra_body: Any = None


def _config_parts(config: _ConfigSettings) -> dict[str, str | None]:
    load = dict(config.load or {})
    sweep = dict(load.pop("sweep", None) or {})
    slo = sweep.pop("slo", None)  # the objective is its own part: the load around it is the same load
    swept = {"sweep": sweep} if sweep else {}
    return {"generation": _digest(_generation(config.generation or {}, config.target)),
            "load": _digest({**load, **swept}), "slo": _digest(slo or {})}


_GENERATION_DEFAULTS = {"max_new_tokens": 64, "temperature": 0.0}
"""What a config that leaves them out runs with (greedy decoding, `Config.max_new_tokens`)."""


_SAMPLING_KEYS = ("max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k", "min_p", "seed", "stop",
                  "n", "presence_penalty", "frequency_penalty", "repetition_penalty", "logit_bias")
"""Keys of `target.extra_body` that override how the server samples (sent in every request body, they win over
`generation`): part of the generation settings. Others (a per-request `lora`, say) choose what is compared."""


def _generation(raw: dict[str, Any], target: dict[str, Any] | None = None) -> dict[str, Any]:
    """Generation settings as run: defaults filled in, numbers as floats (`temperature: 0` is `0.0`, and greedy),
    and the sampling keys `target.extra_body` sends (`extra_body.<key>`; none: the key is as before)."""
    extra = _Target.model_validate(target).extra_body if isinstance(target, dict) else None
    sampling = {f"extra_body.{k}": v for k, v in extra.items() if k in _SAMPLING_KEYS} if isinstance(extra, dict) else {}
    out = {**_GENERATION_DEFAULTS, **raw, **sampling}
    return {k: float(v) if isinstance(v, int | float) and not isinstance(v, bool) else v for k, v in out.items()}


def saved_settings_key(run_path: Path, info: RunInfo) -> dict[str, str | None]:
    """A saved run's settings key: as stored in run.json, else derived from its config.yaml and rubric.yaml."""
    stored = getattr(info, "comparability", None)
    if stored:
        return {part: stored.get(part) for part in SETTINGS_PARTS}
    return settings_key(_yaml(Path(run_path) / "config.yaml"), _yaml(Path(run_path) / "rubric.yaml"))


def _yaml(path: Path) -> dict[str, Any] | None:
    return stored_yaml(path, what="run snapshot")


def differences(a: dict[str, Any], b: dict[str, Any], parts: Iterable[str] = SETTINGS_PARTS) -> tuple[list[str], list[str]]:
    """(parts that differ, parts that cannot be checked because one run or both do not record them)."""
    differ = [p for p in parts if a.get(p) is not None and b.get(p) is not None and a[p] != b[p]]
    unchecked = [p for p in parts if a.get(p) is None or b.get(p) is None]
    return differ, unchecked


def describe_differences(parts: list[str]) -> str:
    """The parts in words: 'generation settings, rubric'."""
    return ", ".join(_PART_NAMES[p] for p in parts)


def same_run(path_a: Path, info_a: RunInfo, path_b: Path, info_b: RunInfo) -> bool:
    """The same run: the same directory, or a copy of it (the same run id and start time, and the same
    records.jsonl byte for byte)."""
    if Path(path_a).resolve() == Path(path_b).resolve():
        return True
    if (info_a.run_id, info_a.created_at) != (info_b.run_id, info_b.created_at):
        return False
    return _file_digest(Path(path_a) / "records.jsonl") == _file_digest(Path(path_b) / "records.jsonl")


def _file_digest(path: Path) -> str | None:
    try:
        return sha256_file(path, what="run snapshot")
    except InputError:
        return None


def baseline_problems(path: Path, info: RunInfo, records: list[CaseRecord], load_records: list[CaseRecord]) -> list[str]:
    """Why a saved run cannot stand as a baseline: it is not whole (not complete, cases or a phase missing) or
    it measured nothing (its target failed most requests: TARGET_ERROR). Empty when it can."""
    problems = list(saved_run_problems(path, info, records, load_records))
    failed = target_failure(records, load_records)
    if failed is not None:
        problems.append(f"it is TARGET_ERROR ({failed})")
    return problems


MIN_SHARED_SHARE = 0.9
"""The share of the baseline's planned cases a comparison must share (same ids and contents) to speak for the
baseline run: a candidate run on a corner of the baseline's suite compares a corner, not the runs."""


def coverage_problem(shared: int, base_cases: int) -> str | None:
    """One line when the shared cases are fewer than MIN_SHARED_SHARE of the baseline's `base_cases`; None when
    they are enough (or the baseline plans none: nothing to compare says so already)."""
    if not base_cases or shared >= MIN_SHARED_SHARE * base_cases:
        return None
    return (f"{shared} of the baseline's {base_cases} cases shared (at least {MIN_SHARED_SHARE:.0%} are needed): the "
            "comparison would speak for a part of the suite, not for the runs")


def settings_problem(base_key: dict[str, Any], cand_key: dict[str, Any], parts: Iterable[str] = SETTINGS_PARTS) -> str | None:
    """One line naming the settings `parts` on which a baseline and a candidate differ; None when they agree."""
    differ, _ = differences(base_key, cand_key, parts)
    if not differ:
        return None
    return f"the runs differ in {describe_differences(differ)}: they are not runs of the same thing"


def guard_problem(base_guards: dict[str, Any], cand_guards: dict[str, Any], forbidden_rules: Sequence[ForbiddenRule]) -> str | None:
    """One line naming the first guard the forbidden rules ask that judged the two runs with another model or
    settings (run.json `guards` fingerprints differ): their forbidden rates would differ by the guards. None when
    they agree (a guard one run never asked leaves its replies without a verdict: unknown there anyway)."""
    for name in guard_names(forbidden_rules):
        a, b = _fingerprint(base_guards.get(name)), _fingerprint(cand_guards.get(name))
        if a and b and a != b:
            return (f"guard {name} judged the baseline run with another model or settings (fingerprint differs): "
                    "the forbidden rates would differ by the guards; judge both runs with the same guard")
    return None


class _Guard(Model):
    model_config = ConfigDict(extra="allow")

    fingerprint: Any = None


def _fingerprint(guard: Any) -> Any:
    """A guard's fingerprint as run.json `guards` records it (None: none)."""
    return _Guard.model_validate(guard).fingerprint if isinstance(guard, dict) else None
