"""The run configuration (`releasegate.yaml`): what to run, on which suites, judged by which rubric.

Paths in a config are relative to the config file's directory. Each section is parsed by its own module
(`target`, `suite_config`, `load_profile`, `cost_config`, `cache_config`, `llm_judge.settings`, `scale`).

Credentials a config carries (the API key's value, `target.headers`, userinfo and query tokens in
`target.base_url`, secret-looking `extra_body` fields) are registered with `redaction` as soon as the config is
loaded, so nothing releasegate writes afterwards holds them; `TargetConfig.describe` and `Config.snapshot_text`
mask them by shape as well.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import DEFAULT_CONFIG  # defined in the package: the CLI names it without loading this module
from ..errors import InputError
from ..llm_judge.settings import parse_judge
from ..scale import ScaleConfig, parse_scale
from .cache_config import CacheConfig, PrefixCacheConfig, parse_cache, parse_prefix_cache
from .config_secrets import masked_config, register_raw_secrets, restore_secrets
from .cost_config import CostConfig, parse_cost
from .files import field_path, line_of, load_yaml, resolve_under
from .load_profile import LoadConfig, parse_load
from .schema_check import validate
from .suite_config import SuiteConfig, check_unique_names, parse_suite
from .target import TargetConfig, parse_target

__all__ = ["Config", "load_config", "DEFAULT_CONFIG"]


@dataclass(frozen=True)
class Config:
    """A validated, path-resolved `releasegate.yaml`."""

    path: Path
    raw: dict
    target: TargetConfig
    suites: tuple[SuiteConfig, ...]
    rubric: Path
    max_new_tokens: int = 64
    generation: dict = field(default_factory=dict)
    load: LoadConfig | None = None
    cost: CostConfig | None = None
    output_dir: Path = field(default_factory=lambda: Path("reports"))
    run_id: str | None = None
    seed: int = 0
    cache: CacheConfig | None = None
    prefix_cache: PrefixCacheConfig | None = None
    """The prefix-cache probe (`prefix_cache:`), openai backend; None: not measured."""
    scale: ScaleConfig | None = None
    """Where the work runs past this process (`scale:`); None: here."""
    judge: Any = None
    """The LLM judge (`judge:`, a `llm_judge.JudgeSettings`); None: no judge configured."""
    base_dir: Path | None = None
    """The directory relative paths were resolved against: the config's own, or, for a run's snapshot read by
    `check --resume`, the original config's."""

    def masked_raw(self) -> dict:
        """The config as written, with the target's credentials masked (userinfo and query tokens of base_url,
        secret header and extra_body values; `{env: NAME}` references are kept, they hold no value)."""
        return masked_config(self.raw)

    def snapshot_text(self) -> str:
        """The text of the run's config.yaml snapshot: the file as written when it carries no credential,
        else the config re-written with them masked (comments are then lost)."""
        import yaml

        text = self.path.read_text(encoding="utf-8-sig")
        masked = self.masked_raw()
        if masked == self.raw:
            return text
        return ("# snapshot of the run's config, credentials masked\n"
                + yaml.safe_dump(masked, sort_keys=False, allow_unicode=True))


def load_config(path: Path, *, base_dir: Path | None = None, secrets_from: Path | None = None) -> Config:
    """Load, validate and resolve a config file; raise InputError naming file, line and field.
    `base_dir`: resolve relative paths there instead of next to `path` (a snapshot of a config kept elsewhere).
    `secrets_from`: the config a masked snapshot was made from (a run's `config_path`): its target credentials
    replace the masked ones, when the rest of its target still matches the snapshot.
    Every credential of the target is registered for redaction (see `redaction`), before validation even, so an
    error quoting a value cannot show one."""
    path = Path(path)
    data, node = load_yaml(path, what="config")
    if not isinstance(data, dict):
        raise InputError("a config must be a mapping of keys (target, suites, rubric, ...)", file=path, line=1)
    register_raw_secrets(data.get("target"))
    register_raw_secrets(data.get("judge"))
    validate(data, "config", file=path, node=node)
    if secrets_from is not None:
        data = restore_secrets(data, Path(secrets_from))
    here = Path(base_dir) if base_dir is not None else path.parent

    def at(*parts: str | int) -> dict:
        return {"file": path, "line": line_of(node, list(parts)), "field": field_path(list(parts))}

    target = parse_target(data["target"], here, at)
    target.register_secrets()
    judge = _judge(data.get("judge"), here, at)
    suites = tuple(parse_suite(s, here, path, lambda *p, i=i: at("suites", i, *p)) for i, s in enumerate(data["suites"]))
    check_unique_names(suites, at)
    output = data.get("output", {})
    return Config(
        path=path,
        raw=data,
        target=target,
        suites=suites,
        rubric=resolve_under(here, data["rubric"]),
        max_new_tokens=data.get("generation", {}).get("max_new_tokens", 64),
        generation=dict(data.get("generation", {})),
        load=parse_load(data.get("load"), data["target"], here, at),
        cost=parse_cost(data.get("cost"), here, at),
        output_dir=resolve_under(here, output.get("dir", "reports")),
        run_id=output.get("run_id"),
        seed=data.get("seed", 0),
        cache=parse_cache(data.get("cache"), here),
        prefix_cache=parse_prefix_cache(data.get("prefix_cache"), data["target"], here, at),
        judge=judge,
        scale=parse_scale(data.get("scale"), data["target"], data.get("load"), at),
        base_dir=here,
    )


def _judge(raw: dict | None, here: Path, at):
    """The `judge:` section: its model is built exactly as `target:` is, errors named under judge."""
    if raw is None:
        return None

    def judge_at(*parts):
        return at("judge", *parts[1:]) if parts and parts[0] == "target" else at(*parts)

    def make_target(section: dict) -> TargetConfig:
        target = parse_target(section, here, judge_at)
        target.register_secrets()
        return target

    return parse_judge(raw, here, at, make_target)
