"""The run configuration (`releasegate.yaml`): what to run, on which suites, judged by which rubric.

Paths in a config are relative to the config file's directory. Each section is parsed by its own module
(`target`, `suite_config`, `load_profile`, `cost_config`, `cache_config`, `inputs.judge_settings`, `scale`).

Credentials a config carries anywhere (an API key's value, headers, userinfo and query tokens of any URL-valued
key, values under secret-looking keys: see `config_secrets`) are registered with `redaction` as soon as the
config is loaded, so nothing releasegate writes afterwards holds them; `TargetConfig.describe` and
`Config.snapshot_text` mask them by shape as well.
"""

from __future__ import annotations

import json
from dataclasses import field
from pathlib import Path
from typing import Any

from .. import DEFAULT_CONFIG  # defined in the package: the CLI names it without loading this module
from ..data_classes import dataclass
from ..errors import InputError, Where
from .backend_facts import SHARED_FIELDS, backend_names, capabilities, spec
from .budget_config import Budget, parse_budget, refuse_unbilled
from .cache_config import (
    CacheConfig,
    PrefixCacheConfig,
    ResponseCacheProbeConfig,
    parse_cache,
    parse_prefix_cache,
    parse_response_cache_probe,
)
from .composition import Composed, Override, compose, parse_override, recorded_override, value_at
from .config_doc import ConfigDoc
from .config_secrets import masked_config, register_config_secrets, restore_from
from .cost_config import CostConfig, parse_cost
from .files import MAX_YAML_BYTES, KeyAt, nowhere, read_text, resolve_under
from .guard_settings import GuardSettings, parse_guards
from .judge_settings import JudgeSettings, parse_judge
from .judging_keys import layered_over_official
from .leakage_inputs import parse_leakage, require_other_base
from .load_profile import LoadConfig, parse_load
from .probes import parse_probes
from .read_doc import read_doc
from .scale_config import ScaleConfig, parse_scale
from .schema_check import validate
from .suite_config import SuiteConfig, check_unique_names, parse_suite
from .target import TargetConfig, parse_target
from .variant_plan import VariantPlan, parse_variant_plan

__all__ = ["Config", "load_config", "DEFAULT_CONFIG"]


@dataclass(frozen=True)
class Config:
    """A validated, path-resolved `releasegate.yaml`."""

    path: Path
    raw: dict[str, Any]
    target: TargetConfig
    suites: tuple[SuiteConfig, ...]
    rubric: Path
    max_new_tokens: int = 64
    generation: dict[str, Any] = field(default_factory=dict)
    """The `generation:` section as the backend and the response cache take it: every key but `repeats`."""
    repeats: int = 1
    """Draws per case (`generation.repeats`); a suite's own `repeats:` overrides it for its cases."""
    load: LoadConfig | None = None
    cost: CostConfig | None = None
    budget: Budget | None = None
    """`budget:` (and `check --budget-usd`): what one check may spend (`inputs.budget_config`)."""
    output_dir: Path = field(default_factory=lambda: Path("reports"))
    run_id: str | None = None
    seed: int = 0
    cache: CacheConfig | None = None
    prefix_cache: PrefixCacheConfig | None = None
    """The prefix-cache probe (`prefix_cache:`), openai backend; None: not measured."""
    response_cache_probe: ResponseCacheProbeConfig | None = None
    """A cache in front of the deployed model, simulated on the run's answers (`response_cache_probe:`); None: not
    simulated."""
    scale: ScaleConfig | None = None
    """Where the work runs past this process (`scale:`); None: here."""
    variants: VariantPlan | None = None
    """The served variants `releasegate matrix` runs and chooses among (`variants:`, `variant_choice:`); None: none
    declared."""
    judge: JudgeSettings | None = None
    """The LLM judge (`judge:`, an `inputs.judge_settings.JudgeSettings`); None: no judge configured."""
    probes: Any = None
    """Attack families applied to the must-refuse cases (`probes:`, an `inputs.probes.ProbePlan`); None: none."""
    leakage: Any = None
    """What the fine-tune memorised (`leakage:`, an `inputs.leakage_inputs.LeakageConfig`); None: not probed."""
    guards: dict[str, GuardSettings] = field(default_factory=dict)
    """Guard models by name (`guards:`, `inputs.guard_settings.GuardSettings`) that `forbidden:` rules of kind
    guard ask; empty: none."""
    base_dir: Path | None = None
    """The directory relative paths were resolved against: the config's own, or, for a run's snapshot read by
    `check --resume`, the original config's."""
    extends: tuple[Path, ...] = ()
    """The configs this one extends (`extends:`), nearest first; empty: the file alone."""
    overrides: tuple[Override, ...] = ()
    """The `--set KEY=VALUE` overrides applied over the file, in order."""
    key_at: KeyAt = field(default=nowhere, compare=False, repr=False)
    """Where a key was written (`key_at("rubric")`): the file and line of the layer that wrote it, or the --set
    that gave it; what an error about the file a key names points at."""
    warnings: tuple[str, ...] = ()
    """One line per thing the config says that will have no effect (`ignored_target_keys`); `validate` and
    `check` print them."""
    rubric_set_by: str | None = None
    """Where `rubric:` was written when not in this file: the base config (`extends:`) whose key names the
    rubric, or '--set rubric'; None: this file names it."""
    over_official: tuple[dict[str, Any], ...] = ()
    """Every key laid over the official config ({'key', 'by'}): written by an `extends:` layer over the one that
    names the rubric, or by a `--set` (`judging_keys.layered_over_official`)."""

    def draws_of(self, suite: str) -> int:
        """Draws per case of the suite named `suite`: its own `repeats:`, else `generation.repeats`."""
        own = next((s.repeats for s in self.suites if s.name == suite), None)
        return own or self.repeats

    def masked_raw(self) -> dict[str, Any]:
        """The config as written, with the target's credentials masked (userinfo and query tokens of base_url,
        secret header and extra_body values; `{env: NAME}` references are kept, they hold no value)."""
        return masked_config(self.raw)

    def snapshot_text(self) -> str:
        """The text of the run's config.yaml snapshot: the file as written when it carries no credential,
        else the config re-written with them masked (comments are then lost)."""
        import yaml

        masked = self.masked_raw()
        if self.extends or self.overrides:  # the composed config, so that a resume reads what ran
            dumped: str = yaml.safe_dump(masked, sort_keys=False, allow_unicode=True)
            return self.composition_comment() + ("# credentials masked\n" if masked != self.raw else "") + dumped
        text = read_text(self.path, what="config", max_bytes=MAX_YAML_BYTES)
        if masked == self.raw:
            return text
        dumped = yaml.safe_dump(masked, sort_keys=False, allow_unicode=True)
        return "# snapshot of the run's config, credentials masked\n" + dumped

    def recorded_overrides(self) -> list[dict[str, Any]]:
        """The `--set` overrides as a run records them: each value as the masked config holds it (a credential
        given with --set is never written)."""
        masked, out = self.masked_raw(), []
        for o in self.overrides:
            value = value_at(masked, o.parts)
            out.append({**o.as_record(value), **({"masked": True} if value != value_at(self.raw, o.parts) else {})})
        return out

    def composition_lines(self) -> list[str]:
        """What was composed into this config, one line each: the files it extends, nearest first, then the
        --set overrides (values as recorded: a credential masked), names and values JSON-quoted."""
        lines = [f"extends {json.dumps(str(p))}" for p in self.extends]
        lines += [f"--set {o['key']}={json.dumps(o['value'], ensure_ascii=False, default=str)}"
                  for o in self.recorded_overrides()]
        return lines

    def composition_comment(self) -> str:
        """The snapshot's first lines: the config that was run and `composition_lines`, as YAML comments."""
        lines = [f"snapshot of the run's config {json.dumps(str(self.path))}, composed:"] + self.composition_lines()
        return "".join(f"# {line}\n" for line in lines)


def load_config(
    path: Path, *, base_dir: Path | None = None, secrets_from: Path | None = None,
    overrides: tuple[str | Override, ...] = (), secrets_overrides: tuple[dict[str, Any], ...] = (),
) -> Config:
    """Load, compose (`extends:`, `overrides` as `--set KEY=VALUE`, see `composition`), validate and resolve a
    config; raise InputError naming the file, line and field, or the --set, that wrote the wrong value.
    `base_dir`: resolve relative paths there instead of next to `path` (a snapshot of a config kept elsewhere).
    `secrets_from`: the config a masked snapshot was made from (a run's `config_path`), composed again with the
    overrides the run recorded (`secrets_overrides`): its target credentials replace the masked ones, when the rest
    of its target still matches the snapshot.
    Every credential of the target is registered for redaction (see `redaction`), before validation even, so an
    error quoting a value cannot show one."""
    path = Path(path)
    composed = compose(path, tuple(o if isinstance(o, Override) else parse_override(o) for o in overrides))
    data = composed.data
    register_config_secrets(data)  # every section, whichever layer or --set wrote it
    for override in composed.overrides:
        register_config_secrets({str(override.parts[-1]) if override.parts else override.key: override.value})
    try:
        validate(data, "config", file=path, node=composed.layers[-1].node if composed.plain else None)
    except InputError as exc:
        raise composed.relocate(exc) from None
    if secrets_from is not None:
        data = restore_from(data, _original(Path(secrets_from), secrets_overrides))
    here = Path(base_dir) if base_dir is not None else path.parent
    at = composed.at
    doc = read_doc(ConfigDoc, data, path)

    target = parse_target(doc.target, here, at)
    target.register_secrets()
    _check_answers(target, at("target", "backend"))
    judge = _judge(doc.judge, here, at)
    guards = _guards(doc.guards, here, at)
    suites = tuple(parse_suite(s, here, path, lambda *p, i=i: at("suites", i, *p)) for i, s in enumerate(doc.suites))
    check_unique_names(suites, at)
    # With served variants the load, prefix-cache and scale sections are for their servers (an openai client),
    # whatever the target's own backend: `check` on the target itself refuses them (pipeline.check).
    served = {**doc.target, "backend": "openai"} if doc.variants is not None else doc.target
    budget, leakage = parse_budget(doc.budget, at), parse_leakage(doc.leakage, here, at, parse_target)
    refuse_unbilled(budget, target, doc.load, leakage, at)
    require_other_base(target, leakage, at)
    generation = doc.generation_settings
    return Config(
        path=path,
        raw=data,
        target=target,
        suites=suites,
        rubric=resolve_under(here, doc.rubric),
        max_new_tokens=generation.max_new_tokens,
        generation={k: v for k, v in doc.generation.items() if k != "repeats"},
        repeats=generation.repeats,
        load=parse_load(doc.load, served, here, at),
        cost=parse_cost(doc.cost, here, at),
        budget=budget,
        output_dir=resolve_under(here, doc.output.dir),
        run_id=doc.output.run_id,
        seed=doc.seed,
        cache=parse_cache(doc.cache, here),
        prefix_cache=parse_prefix_cache(doc.prefix_cache, served, here, at),
        response_cache_probe=parse_response_cache_probe(doc.response_cache_probe, here, at),
        judge=judge,
        guards=guards,
        probes=parse_probes(doc.probes, here, at),
        leakage=leakage,
        scale=parse_scale(doc.scale, served, doc.load, at),
        variants=parse_variant_plan(doc.variants, doc.variant_choice, doc.target, here, at),
        base_dir=here,
        extends=tuple(composed.extends),
        overrides=composed.overrides,
        key_at=at,
        rubric_set_by=_set_by(composed, path, "rubric"),
        over_official=layered_over_official(composed),
        warnings=ignored_target_keys(composed, path),
    )


def ignored_target_keys(composed: Composed, path: Path) -> tuple[str, ...]:
    """A warning per config layer that wrote target keys the target's backend does not take, naming the file and
    line: an `extends:` to another backend keeps the base's target keys (`base_url` under a replay target), and
    the new backend would silently ignore them."""
    target = composed.data.get("target") or {}
    backend = target.get("backend")
    if backend not in backend_names() or composed.data.get("variants") is not None:
        return ()  # served variants take target keys of their own servers (`model`, `base`, client settings)
    taken = set(spec(backend).fields) | set(SHARED_FIELDS)
    by_layer: dict[int, list[str]] = {}
    for key in target:
        if key not in taken:
            by_layer.setdefault(id(composed.layer_of(["target", key])), []).append(key)
    backend_layer = composed.layer_of(["target", "backend"])
    out = []
    for keys in by_layer.values():
        owners = sorted({name for name in backend_names() for key in keys if key in spec(name).fields})
        of = f" (for the {' and '.join(owners)} backend)" if owners else ""
        named = ", ".join(f"target.{k}" for k in keys)
        if composed.layer_of(["target", keys[0]]) is backend_layer:
            hint = "remove them" if len(keys) > 1 else "remove it"
        else:
            hint = (f"written by an extends: layer for another backend; set {', '.join(f'target.{k}: null' for k in keys)}"
                    f" in {path.name} to drop {'them' if len(keys) > 1 else 'it'}")
        out.append(InputError(f"the {backend} backend ignores {named}{of}", **composed.at("target", keys[0]),
                              hint=hint).one_line())
    return tuple(out)


def _set_by(composed: Composed, path: Path, key: str) -> str | None:
    """The layer that wrote `key` when it is not the config at `path`: a base config's path, or '--set KEY'."""
    layer = composed.layer_of([key])
    if layer.override is not None:
        return f"--set {layer.override.key}"
    if layer.file is None or Path(layer.file).resolve() == path.resolve():
        return None
    return str(Path(layer.file).resolve())


def _original(path: Path, recorded: tuple[dict[str, Any], ...]) -> dict[str, Any] | None:
    """The original config of a run composed as the run composed it; None when it no longer composes. A
    credential the run was given with --set was never written: the run cannot be continued without it."""
    masked = next((r for r in recorded if r.get("masked")), None)
    if masked is not None:
        raise InputError(f"the run was given a credential with --set {masked.get('key')}: it was never written, so "
                         "a resume cannot send it", hint="keep credentials in api_key_env or {env: NAME}")
    try:
        return compose(path, tuple(recorded_override(r) for r in recorded)).data
    except InputError:
        return None


def _check_answers(target: TargetConfig, where: Where) -> None:
    """The model under test and the judge write text: a classifier's reply is a label, read only by a guard."""
    if capabilities(target.backend).labels_from:
        raise InputError(f"backend {target.backend} replies with a label name, not an answer", **where,
                         hint="a classifier is a guard: declare it under guards: with format: classifier")


def _guards(raw: dict[str, Any] | None, here: Path, at: KeyAt) -> dict[str, GuardSettings]:
    """The `guards:` section: each guard's model is built exactly as `target:` is, errors named under its key."""

    def make_target(section: dict[str, Any], name: str) -> TargetConfig:
        target = parse_target(section, here, lambda *parts: at("guards", name, *parts[1:]) if parts and parts[0] == "target" else at(*parts))
        target.register_secrets()
        return target

    return parse_guards(raw, here, at, make_target)


def _judge(raw: dict[str, Any] | None, here: Path, at: KeyAt) -> JudgeSettings | None:
    """The `judge:` section: its model is built exactly as `target:` is, errors named under judge."""
    if raw is None:
        return None

    def judge_at(*parts: str | int) -> Where:
        return at("judge", *parts[1:]) if parts and parts[0] == "target" else at(*parts)

    def make_target(section: dict[str, Any]) -> TargetConfig:
        target = parse_target(section, here, judge_at)
        target.register_secrets()
        _check_answers(target, at("judge", "backend"))
        return target

    return parse_judge(raw, here, at, make_target)
