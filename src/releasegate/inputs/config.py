"""The run configuration (`releasegate.yaml`): what to run, on which suites, judged by which rubric.

Paths in a config are relative to the config file's directory.

Credentials a config carries (the API key's value, `target.headers`, userinfo and query tokens in
`target.base_url`, secret-looking `extra_body` fields) are registered with `redaction` as soon as the config is
loaded, so nothing releasegate writes afterwards holds them; `TargetConfig.describe` and `Config.snapshot_text`
mask them by shape as well.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from .. import DEFAULT_CONFIG  # defined in the package: the CLI names it without loading this module
from ..errors import InputError
from ..llm_judge.settings import parse_judge
from ..redaction import (
    REDACTED,
    URL_REDACTED,
    add_secret,
    is_secret_name,
    mapping_secrets,
    mask_mapping,
    mask_url,
    secret_from_env,
    url_secrets,
)
from ..scale import ScaleConfig, parse_scale
from .files import exists, field_path, is_dir, is_file, line_of, load_yaml, read_text, validate
from .sources import EXTENSIONS

__all__ = [
    "Config", "TargetConfig", "SuiteConfig", "CostConfig", "LoadConfig", "SweepConfig", "PrefixCacheConfig", "CacheConfig", "load_config", "DEFAULT_CONFIG",
]

DEFAULT_CACHE = ".releasegate/cache.sqlite"
"""Where `cache: {}` keeps responses, relative to the config."""
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_OWN_HEADERS = frozenset({"host", "content-length", "content-type", "transfer-encoding", "connection", "accept"})
"""Headers the clients set themselves; `target.headers` may not replace them."""


@dataclass(frozen=True)
class TargetConfig:
    """The model under test and how to run it."""

    backend: str
    base: str | None = None
    adapter: Path | None = None
    merge: bool = False
    dtype: str = "float32"
    threads: int = 1
    batch_size: int = 8
    bucket_by_length: bool = True
    """hf: batch the fresh cases of a run by prompt length (less padding); records stay in case order."""
    device: str = "cpu"
    quantize: str | None = None
    draft: Path | None = None
    responses: Path | None = None
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    mode: str = "chat"
    concurrency: int = 8
    timeout_s: float = 120.0
    stall_timeout_s: float = 30.0
    connect_timeout_s: float = 5.0
    retries: int = 2
    client: str = "lean"
    extra_body: dict = field(default_factory=dict)
    tokenizer: Path | None = None
    headers: dict = field(default_factory=dict)
    """HTTP headers sent with every request: {name: literal value} or {name: {env: VARIABLE}}."""
    secret_keys: tuple[str, ...] = ()
    """More header, extra_body or query names whose values are credentials (beyond the secret-looking ones)."""

    def describe(self) -> str:
        """One line naming the target, for run.json and every report: credentials masked."""
        if self.backend == "replay":
            return f"replay of {self.responses}"
        if self.backend == "openai":
            return f"{self.model} at {mask_url(self.base_url, self.secret_keys)} ({self.mode})"
        text = f"hf {self.base}"
        if self.adapter:
            text += f" + adapter {self.adapter}" + (" (merged)" if self.merge else "")
        if self.quantize:
            text += f", {self.quantize}"
        if self.draft:
            text += f", speculative with draft {self.draft}"
        return text

    # -- what the HTTP clients send -------------------------------------------------------------------------
    def endpoint_url(self) -> str | None:
        """`base_url` without its userinfo, query and fragment (they travel as a header and query parameters)."""
        if not self.base_url:
            return self.base_url
        parts = urlsplit(self.base_url)
        return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))

    def url_query(self) -> dict[str, str]:
        """The query parameters of `base_url`, sent with every request (`?api-version=...&sig=...`)."""
        if not self.base_url:
            return {}
        return dict(parse_qsl(urlsplit(self.base_url).query, keep_blank_values=True))

    def request_headers(self) -> dict[str, str]:
        """The headers to send with every request: `Authorization: Basic ...` from the userinfo of `base_url`
        (when it has one), then `headers` (a same-named header replaces it, case-insensitively). Either replaces
        the api key's `Authorization: Bearer`. Values read from the environment here; every value that is a
        credential is registered for redaction. Raises InputError for an unset variable."""
        out: dict[str, str] = {}
        userinfo = _userinfo(self.base_url)
        if userinfo is not None:
            user, _, password = userinfo.partition(":")
            token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
            add_secret(token)
            out["Authorization"] = "Basic " + token
        for name, spec in self.headers.items():
            value = _header_value(name, spec)
            if isinstance(spec, dict) or is_secret_name(name, self.secret_keys):
                add_secret(value)
            for same in [k for k in out if k.lower() == name.lower()]:
                del out[same]
            out["Authorization" if name.lower() == "authorization" else name] = value  # one spelling: it replaces the key's
        return out

    def secrets(self) -> list[str]:
        """Every credential value this target carries that is known without reading the environment."""
        extra = self.secret_keys
        return (url_secrets(self.base_url, extra) + mapping_secrets(self.extra_body, extra)
                + mapping_secrets(self.headers, extra))

    def register_secrets(self) -> None:
        """Register every credential of this target with `redaction`, environment values included (when set)."""
        secret_from_env(self.api_key_env)
        for value in self.secrets():
            add_secret(value)
        for spec in self.headers.values():
            if isinstance(spec, dict):
                secret_from_env(spec.get("env"))
        userinfo = _userinfo(self.base_url)
        if userinfo is not None:
            user, _, password = userinfo.partition(":")
            add_secret(base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii"))

    def masked(self) -> dict:
        """The target's credential-bearing settings with the credentials masked (for fingerprints and records)."""
        extra = self.secret_keys
        return {"base_url": mask_url(self.base_url, extra), "extra_body": mask_mapping(self.extra_body, extra),
                "headers": mask_mapping(self.headers, extra)}


@dataclass(frozen=True)
class SuiteConfig:
    """One validation suite and the scoring it uses unless a case overrides it."""

    path: Path
    """The JSONL file; for a tabular source, the file that stands for its data (the source file, the split's
    state.json of a save_to_disk directory, the config file itself for a hub dataset)."""
    name: str
    limit: int | None = None
    answer: dict | None = None
    format: tuple[dict, ...] = ()
    source: dict | None = None
    """A tabular source instead of a JSONL file: {format, path (resolved), split, sheet} or {hub, config,
    split, revision}; see `suite_sources`."""
    columns: dict | None = None
    """Which source columns give the case: id, prompt or messages, expected (a column, or {key: column}), tags."""
    template: dict | None = None
    """{system, user}: Jinja templates (sandboxed, strict) building the messages from a row's fields."""
    sample: dict | None = None
    """{n or per_stratum, seed, by}: a seeded, stratified sample of the source's rows; see `suite_sample`."""


@dataclass(frozen=True)
class CostConfig:
    """How cost per token is priced: self-hosted hourly price or an API price table."""

    mode: str
    hourly_usd: float | None = None
    input_usd_per_1m: float | None = None
    output_usd_per_1m: float | None = None


@dataclass(frozen=True)
class LoadConfig:
    """A load profile: closed loop (concurrency), open loop (rate + arrival), or a replayed traffic log."""

    concurrency: int | None = None
    rate: float | None = None
    arrival: str = "poisson"
    burstiness: float = 1.0
    replay: Path | None = None
    requests: int | None = None
    duration_s: float | None = None
    warmup: int = 0
    seed: int = 0
    sweep: SweepConfig | None = None
    """A capacity sweep (`load.sweep`) instead of one fixed load: open-loop steps of rising rate."""


@dataclass(frozen=True)
class SweepConfig:
    """`load.sweep`: raise the open-loop rate step by step until the latency objective breaks (see capacity)."""

    start_rps: float
    max_rps: float
    factor: float = 2.0
    requests_per_step: int = 60
    step_s: float = 5.0
    """A step sends at least rate x step_s requests: long enough at high rates for an overload to show as a
    growing queue (a short burst above capacity can still meet the objective)."""
    refine: int = 3
    """Bisection steps between the last rate that met the objective and the first that broke it."""
    slo: dict = field(default_factory=dict)
    """The latency objective: `ttft_ms_p95`, `tpot_ms_p95` (limits in ms) and `error_rate` (default 0.01)."""


@dataclass(frozen=True)
class PrefixCacheConfig:
    """`prefix_cache`: TTFT of requests sharing a long system prompt, with the server's prefix cache warm and cold."""

    system: str
    """The shared system prompt (`system`, or the text of `system_file`)."""
    requests: int = 16
    """Measured pairs: each case's question once after the same prompt (warm) and once after a new one (cold)."""


@dataclass(frozen=True)
class CacheConfig:
    """The response cache (off unless the config has a `cache:` section): a SQLite file, optional TTL."""

    path: Path
    ttl_s: float | None = None


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
        return _masked_raw(self.raw)

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
    _register_raw(data.get("target"))
    _register_raw(data.get("judge"))
    validate(data, "config", file=path, node=node)
    if secrets_from is not None:
        data = _unmask(data, Path(secrets_from))
    here = Path(base_dir) if base_dir is not None else path.parent

    def at(*parts: str | int) -> dict:
        return {"file": path, "line": line_of(node, list(parts)), "field": field_path(list(parts))}

    target = _target(data["target"], here, at)
    target.register_secrets()
    judge = _judge(data.get("judge"), here, at)
    suites = tuple(_suite(s, here, path, lambda *p, i=i: at("suites", i, *p)) for i, s in enumerate(data["suites"]))
    _unique_names(suites, at)
    output = data.get("output", {})
    return Config(
        path=path,
        raw=data,
        target=target,
        suites=suites,
        rubric=_under(here, data["rubric"]),
        max_new_tokens=data.get("generation", {}).get("max_new_tokens", 64),
        generation=dict(data.get("generation", {})),
        load=_load(data.get("load"), data["target"], here, at),
        cost=_cost(data.get("cost"), here, at),
        output_dir=_under(here, output.get("dir", "reports")),
        run_id=output.get("run_id"),
        seed=data.get("seed", 0),
        cache=_cache(data.get("cache"), here),
        prefix_cache=_prefix_cache(data.get("prefix_cache"), data["target"], here, at),
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
        target = _target(section, here, judge_at)
        target.register_secrets()
        return target

    return parse_judge(raw, here, at, make_target)


def _prefix_cache(raw: dict | None, target: dict, here: Path, at) -> PrefixCacheConfig | None:
    if raw is None:
        return None
    if target["backend"] != "openai":
        raise InputError("the prefix-cache probe measures a server: it needs the openai backend",
                         **at("prefix_cache"), hint="remove prefix_cache: or serve the model")
    if ("system" in raw) == ("system_file" in raw):
        raise InputError("prefix_cache needs one of system (the text) or system_file (a path)", **at("prefix_cache"))
    system = raw.get("system")
    if system is None:
        system = read_text(_under(here, raw["system_file"]), what="system prompt")
    return PrefixCacheConfig(system=system, requests=raw.get("requests", 16))


def _cache(raw: dict | None, here: Path) -> CacheConfig | None:
    if raw is None:
        return None
    return CacheConfig(path=_under(here, raw.get("path", DEFAULT_CACHE)), ttl_s=raw.get("ttl_s"))


def _target(raw: dict, here: Path, at) -> TargetConfig:
    base = raw.get("base")
    if base is not None:
        local = _under(here, base)
        if exists(local):
            base = str(local)
        elif not _HUB_ID.match(base):
            raise InputError(f"base model '{base}' is neither a directory nor a hub id", **at("target", "base"))
    adapter = _under(here, raw["adapter"]) if raw.get("adapter") else None
    if adapter is not None and not exists(adapter / "adapter_config.json"):
        raise InputError(
            f"no adapter_config.json in {adapter}", **at("target", "adapter"), hint="point at a peft adapter directory"
        )
    if raw.get("merge") and adapter is None:
        raise InputError("merge: true needs an adapter", **at("target", "merge"))
    responses = _under(here, raw["responses"]) if raw.get("responses") else None
    tokenizer = _tokenizer_file(_under(here, raw["tokenizer"]), at) if raw.get("tokenizer") else None
    draft = _under(here, raw["draft"]) if raw.get("draft") else None
    if draft is not None and not exists(draft / "config.json"):
        raise InputError(f"no config.json in {draft}", **at("target", "draft"), hint="point at a model directory")
    for name in raw.get("headers") or {}:
        if name.lower() in _OWN_HEADERS:
            raise InputError(f"header '{name}' is set by releasegate itself", **at("target", "headers", name),
                             hint="remove it from target.headers")
    keys = (
        "backend", "merge", "dtype", "threads", "batch_size", "bucket_by_length", "device", "quantize", "base_url", "model",
        "api_key_env", "mode", "concurrency", "timeout_s", "stall_timeout_s", "connect_timeout_s", "retries", "extra_body",
        "client", "headers",
    )
    return TargetConfig(
        **{k: raw[k] for k in keys if k in raw}, base=base, adapter=adapter, responses=responses, tokenizer=tokenizer,
        draft=draft, secret_keys=tuple(raw.get("secret_keys") or ()),
    )


def _masked_raw(data: dict) -> dict:
    raw = copy.deepcopy(data)
    for target in (raw.get("target"), raw.get("judge")):
        if not isinstance(target, dict):
            continue
        extra = tuple(target.get("secret_keys") or ())
        if isinstance(target.get("base_url"), str):
            target["base_url"] = mask_url(target["base_url"], extra)
        for key in ("extra_body", "headers"):
            if key in target:
                target[key] = mask_mapping(target[key], extra)
    return raw


def _userinfo(url: str | None) -> str | None:
    """The `user:password` of a URL, None when it has none (or only the mask a snapshot left)."""
    if not url:
        return None
    netloc = urlsplit(url).netloc
    if "@" not in netloc:
        return None
    userinfo = netloc.rpartition("@")[0]
    return None if userinfo in (URL_REDACTED, REDACTED) else userinfo


def _header_value(name: str, spec) -> str:
    if isinstance(spec, dict):
        variable = spec["env"]
        value = os.environ.get(variable)
        if not value:
            raise InputError(f"environment variable {variable} is not set", field=f"target.headers.{name}",
                             hint=f"export {variable}=...")
        if any(c in value for c in "\r\n\0"):
            raise InputError(f"environment variable {variable} holds a line break: not a header value",
                             field=f"target.headers.{name}")
    else:
        value = str(spec)
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        raise InputError(f"header '{name}' has a character HTTP headers cannot carry", field=f"target.headers.{name}",
                         hint="headers are Latin-1 text") from None
    return value


def _register_raw(target) -> None:
    """Best-effort registration from the unvalidated target section (a validation error may quote a value)."""
    if not isinstance(target, dict):
        return
    try:
        extra = tuple(k for k in target.get("secret_keys") or () if isinstance(k, str))
        if isinstance(target.get("base_url"), str):
            for value in url_secrets(target["base_url"], extra):
                add_secret(value)
        for key in ("extra_body", "headers"):
            for value in mapping_secrets(target.get(key), extra):
                add_secret(value)
        for spec in (target.get("headers") or {}).values() if isinstance(target.get("headers"), dict) else ():
            if isinstance(spec, dict) and isinstance(spec.get("env"), str):
                secret_from_env(spec["env"])
        if isinstance(target.get("api_key_env"), str):
            secret_from_env(target["api_key_env"])
    except (TypeError, ValueError, AttributeError):
        pass


def _unmask(data: dict, original: Path) -> dict:
    """`data` (a masked snapshot) with the target credentials of the config it was made from, when that
    config's target, masked, is still the snapshot's: a resumed run talks to the endpoint as the run did."""
    try:
        source, _ = load_yaml(original, what="config")
    except InputError:
        return data
    if not isinstance(source, dict):
        return data
    data = dict(data)
    masked = _masked_raw(source)
    for section in ("target", "judge"):  # the judge's credentials come back the same way
        if isinstance(source.get(section), dict) and masked.get(section) == data.get(section):
            _register_raw(source[section])
            data[section] = copy.deepcopy(source[section])
    return data


def _tokenizer_file(path: Path, at) -> Path:
    file = path / "tokenizer.json" if is_dir(path) else path
    if not is_file(file):
        raise InputError(f"no tokenizer.json at {path}", **at("target", "tokenizer"), hint="give a tokenizer.json or its directory")
    return file


def _load(raw: dict | None, target: dict, here: Path, at) -> LoadConfig | None:
    if raw is None:
        return None
    if target["backend"] != "openai":
        raise InputError("a load phase needs the openai backend", **at("load"), hint="remove load: or serve the model")
    shapes = [k for k in ("concurrency", "rate", "replay", "sweep") if k in raw]
    if not shapes:
        raise InputError("load needs concurrency, rate, replay or sweep", **at("load"))
    if "replay" in raw and "rate" in raw:
        raise InputError("replay sets its own arrival times; drop rate", **at("load", "rate"))
    if "replay" not in raw and "sweep" not in raw and "requests" not in raw and "duration_s" not in raw:
        raise InputError("load needs requests or duration_s (when to stop)", **at("load"))
    replay = _under(here, raw["replay"]) if "replay" in raw else None
    if replay is not None and not is_file(replay):
        raise InputError(f"traffic log not found: {replay}", **at("load", "replay"))
    keys = ("concurrency", "rate", "arrival", "burstiness", "requests", "duration_s", "warmup", "seed")
    return LoadConfig(**{k: raw[k] for k in keys if k in raw}, replay=replay, sweep=_sweep(raw, at))


def _sweep(raw: dict, at) -> SweepConfig | None:
    """`load.sweep`: the rates come from the sweep, so a fixed rate, log or length beside it is refused."""
    sweep = raw.get("sweep")
    if sweep is None:
        return None
    for key in ("rate", "replay", "requests", "duration_s"):
        if key in raw:
            raise InputError(f"a sweep sets its own rates and lengths; drop load.{key}", **at("load", key),
                             hint="size each step with sweep.requests_per_step")
    if sweep["max_rps"] < sweep["start_rps"]:
        raise InputError("max_rps is below start_rps", **at("load", "sweep", "max_rps"))
    return SweepConfig(**{k: sweep[k] for k in ("start_rps", "max_rps", "factor", "requests_per_step", "step_s", "refine")
                          if k in sweep}, slo={"error_rate": 0.01, **sweep["slo"]})


def _suite(raw: dict, here: Path, config_path: Path, at) -> SuiteConfig:
    if "source" not in raw:
        for key in ("columns", "template", "sample"):
            if key in raw:
                raise InputError(f"{key} is for a suite with a source", **at(key), hint="add source: or remove it")
        path = _under(here, raw["path"])
        return SuiteConfig(
            path=path,
            name=raw.get("name", path.stem),
            limit=raw.get("limit"),
            answer=raw.get("answer"),
            format=tuple(raw.get("format", ())),
        )
    if "path" in raw:
        raise InputError("a suite has a path (JSONL) or a source, not both", **at("path"),
                         hint="give a tabular file as source.path")
    source = dict(raw["source"])
    columns = raw["columns"]
    if "hub" in source:
        for key in ("path", "format", "sheet"):
            if key in source:
                raise InputError(f"source.{key} is for a local source, not a hub dataset", **at("source", key))
    else:
        for key in ("config", "revision"):
            if key in source:
                raise InputError(f"source.{key} is for a hub dataset", **at("source", key))
    if "hub" in source:
        path = Path(config_path)  # nothing local stands for a hub dataset: the config itself is hashed
        name = raw.get("name", source["hub"].rsplit("/", 1)[-1])
    else:
        source["path"] = _under(here, source["path"])
        if "format" not in source:
            fmt = EXTENSIONS.get(source["path"].suffix.lower())
            if fmt is None:
                fmt = "disk" if is_dir(source["path"]) else None
            if fmt is None:
                raise InputError(f"cannot tell the format of '{source['path'].name}' from its name",
                                 **at("source", "path"), hint="set source.format")
            source["format"] = fmt
        path = source["path"]
        if source["format"] == "disk":  # a directory: its state.json (the data files and their fingerprint)
            split = source.get("split") or _only_split(path)
            path = path / split / "state.json" if split and is_dir(path / split) else path / "state.json"
        if source["format"] != "xlsx" and "sheet" in source:
            raise InputError("sheet is for xlsx sources", **at("source", "sheet"))
        name = raw.get("name", source["path"].stem)
    forms = [k for k in ("prompt", "messages") if k in columns] + (["template"] if "template" in raw else [])
    if len(forms) != 1:
        raise InputError(
            "a source suite needs exactly one of columns.prompt, columns.messages or template"
            + (f" (has {', '.join(forms)})" if forms else ""), **at("columns"),
        )
    return SuiteConfig(
        path=path,
        name=name,
        limit=raw.get("limit"),
        answer=raw.get("answer"),
        format=tuple(raw.get("format", ())),
        source=source,
        columns=dict(columns),
        template=dict(raw["template"]) if "template" in raw else None,
        sample=_sample(raw.get("sample"), at),
    )


def _sample(raw: dict | None, at) -> dict | None:
    if raw is None:
        return None
    sizes = [k for k in ("n", "per_stratum") if k in raw]
    if len(sizes) != 1:
        raise InputError("sample needs exactly one of n (rows in all) or per_stratum (rows from each stratum)",
                         **at("sample"))
    return {"seed": 0, "by": [], **raw}


def _only_split(directory: Path) -> str | None:
    """The one split of a DatasetDict's save_to_disk directory, None when it has several (or is no such)."""
    try:
        splits = json.loads((directory / "dataset_dict.json").read_text("utf-8")).get("splits")
    except (OSError, ValueError, AttributeError):
        return None
    return splits[0] if isinstance(splits, list) and len(splits) == 1 and isinstance(splits[0], str) else None


def _unique_names(suites: tuple[SuiteConfig, ...], at) -> None:
    seen: set[str] = set()
    for i, suite in enumerate(suites):
        if suite.name in seen:
            raise InputError(
                f"two suites are named '{suite.name}'", **at("suites", i), hint="give each a distinct name"
            )
        seen.add(suite.name)


def _cost(raw: dict | None, here: Path, at) -> CostConfig | None:
    if raw is None:
        return None
    if raw["mode"] == "self_hosted":
        return CostConfig(mode="self_hosted", hourly_usd=raw["hourly_usd"])
    prices: dict[str, Any] = {k: raw[k] for k in ("input_usd_per_1m", "output_usd_per_1m") if k in raw}
    if "price_table" in raw:
        prices = _price_row(_under(here, raw["price_table"]), raw.get("price_model"), at)
    missing = [k for k in ("input_usd_per_1m", "output_usd_per_1m") if k not in prices]
    if missing:
        raise InputError(
            "api cost needs input and output prices", **at("cost", missing[0]),
            hint="set both prices or a price_table with price_model",
        )
    return CostConfig(mode="api", **prices)


def _price_row(table: Path, model: str | None, at) -> dict:
    """A price table is YAML: {model-name: {input_usd_per_1m: x, output_usd_per_1m: y}}."""
    if model is None:
        raise InputError("price_table needs price_model", **at("cost", "price_model"))
    data, _ = load_yaml(table, what="price table")
    row = data.get(model) if isinstance(data, dict) else None
    if not isinstance(row, dict) or not all(isinstance(row.get(k), (int, float)) for k in ("input_usd_per_1m", "output_usd_per_1m")):
        raise InputError(
            f"no prices for '{model}'", file=table, hint="add {model: {input_usd_per_1m: N, output_usd_per_1m: N}}"
        )
    return {k: float(row[k]) for k in ("input_usd_per_1m", "output_usd_per_1m")}


def _under(here: Path, relative: str) -> Path:
    """A config path resolved against the config's directory, `..` folded, so reports show clean paths."""
    return Path(os.path.normpath(here / relative))
