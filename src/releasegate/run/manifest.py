"""The run manifest: what a run was made of, hashed, so it can be reproduced and checked later.

`manifest.json` in a run directory holds the sha256 of every input file (config, suites, the JSON Schemas they
reference, rubric, forbidden rules, evaluate modules, price table, traffic log; for hf the model, adapter and
draft directories file by file, with the chat template on its own; for openai the tokenizer), the package
versions, the seeds and host facts. `releasegate verify RUN_DIR` re-hashes the same files (`compare_manifest`)
and says what changed. The target fingerprint (`target_fingerprint`) keys the response cache.
It names no credential: every string is redacted, and the fingerprint hashes the target with its credentials masked.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import socket
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..border.files import hash_once, is_dir, is_file, read_text, sha256_file, walk_files
from ..border.hub import hub_snapshot
from ..border.structured import json_loads
from ..clock import now
from ..errors import InputError
from ..inputs.backend_facts import capabilities
from ..inputs.leakage_inputs import read_leakage_suite
from ..record.stored_manifest import InputEntry, Manifest, read_manifest_file, typed_inputs, typed_manifest
from ..redaction import redact_data
from .manifest_inputs import (
    SNAPSHOT_KEY,
    Add,
    Row,
    directory_files,
    record_signing_digests,
    sample_entries,
    schema_paths,
    served_files,
    snapshot_commit,
    source_files,
)

if TYPE_CHECKING:
    from ..inputs.config import Config
    from ..inputs.leakage_inputs import LeakageConfig
    from ..inputs.suites import Case
    from ..inputs.target import TargetConfig

__all__ = [
    "MANIFEST", "build_manifest", "read_manifest", "compare_manifest", "diff_manifests", "target_fingerprint", "sha256_file",
    "package_versions", "GENERATION_ROLES", "recorded_overrides", "grader_inputs",
]

MANIFEST = "manifest.json"
FORMAT = 1
_TEMPLATE_KEY = "#chat_template"  # a chat template kept inside tokenizer_config.json, hashed on its own

PACKAGES = (
    "torch", "transformers", "peft", "tokenizers", "safetensors", "accelerate", "openai", "httpx", "jsonschema",
    "PyYAML", "pydantic", "evaluate", "datasets", "numpy",
)
"""Distributions whose versions a manifest records (when installed)."""

GENERATION_ROLES = ("suite", "schema", "responses", "traffic_log", "tokenizer", "model", "adapter", "draft")
"""Input roles (or role prefixes) that decide what a run generates: `check --resume` refuses when one changed."""

def build_manifest(config: Config, *, run_id: str, cases: Iterable[Case] | None = None) -> dict[str, Any]:
    """Hash every input of `config` (a loaded Config). Raises InputError for an input that cannot be read.
    `cases`: the run's cases, for the record of each sampled suite's draw (`samples`)."""
    with hash_once():  # a model directory's files read once: for its inputs, then its model-signing digest
        inputs, directories = _hash_inputs(config)
        record_signing_digests(directories)
    manifest: dict[str, Any] = redact_data({  # a dict, its strings redacted
        "format": FORMAT,
        "run_id": run_id,
        "created_at": now(),
        "config": str(Path(config.path).resolve()),
        "inputs": inputs,
        "directories": directories,
        "target": {"backend": config.target.backend, "fingerprint": target_fingerprint(config.target, inputs)},
        "packages": package_versions(),
        "seeds": {"seed": config.seed, "generation.seed": config.generation.get("seed"),
                  "load.seed": config.load.seed if config.load is not None else None},
        "host": host_facts(),
        "samples": sample_entries(config, cases or ()),
        **_composition(config),
    })
    return manifest


def _composition(config: Config) -> dict[str, Any]:
    """How the config was composed, when it was: the files it extends (each hashed as a `config:extends` input)
    and the --set overrides, values as the masked config holds them; `over_official`: every key laid over the
    config layer that names the rubric, by whom (`inputs.judging_keys`), which release checks hold to the rubric."""
    extends, overrides = getattr(config, "extends", ()), getattr(config, "overrides", ())
    if not extends and not overrides:
        return {}
    return {"composition": {"extends": [str(Path(p).resolve()) for p in extends],
                            "set": config.recorded_overrides(),
                            "over_official": [dict(o) for o in getattr(config, "over_official", ())]}}


def recorded_overrides(run_dir: Path) -> tuple[dict[str, Any], ...]:
    """The --set overrides a run's manifest records ({key, value} each); none for a run without them."""
    try:
        composition = typed_manifest(read_manifest(run_dir), Path(run_dir) / MANIFEST).composition
    except InputError:
        return ()
    return tuple(composition.set or ()) if composition is not None else ()


def read_manifest(run_dir: Path) -> dict[str, Any]:
    path = Path(run_dir) / MANIFEST
    data = read_manifest_file(Path(run_dir))  # bounded, and of the shape releasegate writes
    if data is None:
        hint = "runs started before manifests existed have none" if is_file(Path(run_dir) / "run.json") else (
            "pass a run directory, e.g. reports/<run-id>")
        raise InputError("no manifest.json in this directory", file=run_dir, hint=hint)
    if typed_manifest(data, path).format != FORMAT:  # of the shape releasegate writes: `inputs` a list
        raise InputError("not a releasegate manifest (format 1)", file=path)
    return data


def compare_manifest(manifest: dict[str, Any], *, roles: tuple[str, ...] | None = None,
                     packages: bool = True) -> list[Row]:
    """What differs now from `manifest`: one row {role, path, change, before, after} per changed, missing or
    added file and per package whose version changed. `roles`: only inputs whose role starts with one of these."""
    def wanted(role: str) -> bool:
        return roles is None or any(role == r or role.startswith(r + ":") for r in roles)

    stored = typed_manifest(manifest)
    rows: list[Row] = []
    known = set()
    for entry in stored.inputs + typed_inputs({"inputs": grader_inputs(manifest)}):
        known.add(entry.path)
        if not wanted(entry.role) or entry.sha256 is None:
            continue
        after = _current_hash(entry.path)
        if after != entry.sha256:
            rows.append({"role": entry.role, "path": entry.path, "change": "missing" if after is None else "changed",
                         "before": entry.sha256, "after": after})
    for directory in stored.directories:
        if not wanted(directory.role):
            continue
        for role, file in directory_files(Path(directory.path), directory.role):
            if str(file) not in known:
                rows.append({"role": role, "path": str(file), "change": "added", "before": None, "after": _hash(file)})
    if packages:
        current = package_versions()
        for name in sorted(set(stored.packages) | set(current)):
            before, after = stored.packages.get(name), current.get(name)
            if before != after:
                rows.append({"role": "package", "path": name, "change": "version", "before": before, "after": after})
    return rows


def grader_inputs(manifest: dict[str, Any]) -> list[Row]:
    """The files of the LLM judge and of each guard that judged the run (manifest.json `judge`, `guards`)."""
    graders = [manifest.get("judge")] + list((manifest.get("guards") or {}).values())
    return [e for g in graders if isinstance(g, dict) for e in g.get("inputs") or () if isinstance(e, dict)]


def diff_manifests(old: dict[str, Any], new: dict[str, Any], *, roles: tuple[str, ...]) -> list[Row]:
    """Inputs of the given roles that differ between two manifests (same rows as `compare_manifest`), plus a
    'target' row when the target fingerprints differ (same files, other settings: merge, dtype, endpoint...)."""
    def entries(manifest: Manifest) -> dict[str, InputEntry]:
        return {e.path: e for e in manifest.inputs if any(e.role == r or e.role.startswith(r + ":") for r in roles)}

    was, now_is = typed_manifest(old), typed_manifest(new)
    before, after = entries(was), entries(now_is)
    rows: list[Row] = []
    for path in sorted(set(before) | set(after)):
        a = before[path].sha256 if path in before else None
        b = after[path].sha256 if path in after else None
        if a != b:
            role = (before.get(path) or after[path]).role
            change = "added" if path not in before else "missing" if path not in after else "changed"
            rows.append({"role": role, "path": path, "change": change, "before": a, "after": b})
    before_draws = {e.suite: e for e in was.samples}
    for draw in now_is.samples:
        prior = before_draws.get(draw.suite)
        if prior is None or prior.ids_sha256 != draw.ids_sha256 or prior.sample != draw.sample:
            rows.append({"role": "sample", "path": draw.suite, "change": "changed",
                         "before": prior.ids_sha256 if prior else None, "after": draw.ids_sha256})
    if was.target.fingerprint != now_is.target.fingerprint:
        rows.append({"role": "target", "path": now_is.target.backend, "change": "changed",
                     "before": was.target.fingerprint, "after": now_is.target.fingerprint})
    return rows


def target_fingerprint(t: TargetConfig, inputs: list[Row]) -> str | None:
    """A hash of what decides the model's outputs, for the response cache; None when the target cannot be
    fingerprinted (a hub model that is not on disk). Performance knobs (batch size, threads, concurrency) are
    left out: they must not change greedy outputs."""
    by_role: dict[str, dict[str | None, str | None]] = {}
    for entry in typed_inputs({"inputs": inputs}):
        if entry.owner in ("model", "adapter", "draft", "tokenizer", "responses"):
            name = entry.name if "name" in entry.model_fields_set else entry.path
            by_role.setdefault(entry.owner, {})[name] = entry.sha256
    if any(sha is None for files in by_role.values() for sha in files.values()):
        return None
    named = capabilities(t.backend).fingerprint
    # credentials masked: a hash of a short password can be brute-forced, and a rotated key is the same target
    masked = (t.masked() if hasattr(t, "masked") else {"base_url": t.base_url, "extra_body": t.extra_body}) if named else {}
    facts: dict[str, Any] = {k: masked[k] if k in masked else getattr(t, k, None) for k in named if k != "headers"}
    if "headers" in named and masked.get("headers"):  # a routing header can select another model; secrets stay masked
        facts["headers"] = masked["headers"]
    facts = {"backend": t.backend, **facts, "files": by_role}
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "releasegate": __version__}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def host_facts() -> dict[str, Any]:
    return {
        "platform": platform.platform(), "machine": platform.machine(), "hostname": socket.gethostname(),
        "cpus": os.cpu_count(), "python": platform.python_implementation() + " " + platform.python_version(),
    }


# -- which files ----------------------------------------------------------------------------------------------

CASE_ROLES = ("suite", "schema")
"""The manifest roles of the files a run's cases are read from, which the effective rubric hashes."""


def case_digests(config: Config) -> list[str]:
    """The sha256 of every file the config's cases are read from (suites, their sources, the schemas their
    format checks name), as a run of it records them in its manifest (`case_digests_of`)."""
    inputs: list[Row] = []
    _case_files(config, _adder(inputs, set()), inputs, [])
    return case_digests_of({"inputs": inputs})


def case_digests_of(manifest: dict[str, Any]) -> list[str]:
    """The sha256 of the suite and schema files a run's manifest records, sorted."""
    return sorted(str(e["sha256"]) for e in manifest.get("inputs") or []
                  if isinstance(e, dict) and e.get("role") in CASE_ROLES and isinstance(e.get("sha256"), str))


def _adder(inputs: list[Row], seen: set[str]) -> Add:
    """`add(role, path, name=None)`: the file hashed into `inputs`, once per resolved path."""

    def add(role: str, path: Path, name: str | None = None) -> None:
        key = str(path.resolve())
        if key in seen:
            return
        seen.add(key)
        try:
            inputs.append({"role": role, "path": key, "name": name or path.name, "bytes": path.stat().st_size,
                           "sha256": sha256_file(path)})
        except OSError as exc:
            raise InputError(f"cannot read input to hash it: {exc.strerror}", file=path) from None
    return add


def _case_files(config: Config, add: Add, inputs: list[Row], directories: list[Row]) -> None:
    """The files the cases are read from: each suite (or its source's files) and the schemas its checks name."""
    base_dir = getattr(config, "base_dir", None) or Path(config.path).parent
    for suite in config.suites:
        if getattr(suite, "source", None) is None:
            add("suite", suite.path)
        else:
            source_files(suite, add, inputs, directories)
        for schema in schema_paths(suite, base_dir):
            add("schema", schema)


def _hash_inputs(config: Config) -> tuple[list[Row], list[Row]]:
    inputs: list[Row] = []
    directories: list[Row] = []
    add = _adder(inputs, set())
    add("config", Path(config.path))
    for extended in getattr(config, "extends", ()):
        add("config:extends", Path(extended))
    _case_files(config, add, inputs, directories)
    base_dir = getattr(config, "base_dir", None) or Path(config.path).parent
    rubric = Path(config.rubric)
    add("rubric", rubric)
    if (set_by := getattr(config, "rubric_set_by", None)) and inputs[-1]["role"] == "rubric":
        inputs[-1]["named_by"] = set_by  # the extends: layer (or --set) that named it: the verdict says so
    for role, path in _rubric_files(rubric):
        add(role, path)
    _target_files(config.target, add, inputs, directories)
    cost = config.raw.get("cost") or {}
    if isinstance(cost.get("price_table"), str):
        add("price_table", base_dir / cost["price_table"])
    if config.load is not None and config.load.replay is not None:
        add("traffic_log", config.load.replay)
    for path in getattr(getattr(config, "probes", None), "files", ()):  # the attack families the probes were made by
        add("probe_families", path)
    if getattr(config, "leakage", None) is not None:
        _leakage_files(config.leakage, add, inputs, directories)
    return inputs, directories


def _leakage_files(leakage: LeakageConfig, add: Add, inputs: list[Row], directories: list[Row]) -> None:
    """The leakage suite, the training and held-out files it was drawn from (as hashed when it was built, where
    the file is gone), and the files of `leakage.base`, each role prefixed `leakage_base:`."""
    add("leakage_suite", leakage.suite)
    if leakage.canaries is not None:
        add("leakage_canaries", leakage.canaries)
    for name, src in read_leakage_suite(leakage.suite).sources.items():
        if is_file(Path(str(src.get("path")))):
            add(f"leakage_{name}", Path(src["path"]))
        else:
            inputs.append({"role": f"leakage_{name}", "path": str(src.get("path")), "name": Path(str(src.get("path"))).name,
                           "sha256": src.get("sha256"), "note": "hashed when the suite was built: the file is not here"})
    if leakage.base is not None:
        def add_base(role: str, path: Path, name: str | None = None) -> None:
            add(f"leakage_base:{role}", path, name)

        base_dirs: list[Row] = []  # named as the base's, never as the target's model (attested, promoted)
        _target_files(leakage.base, add_base, inputs, base_dirs)
        directories += [{**d, "role": f"leakage_base:{d['role']}"} for d in base_dirs]


def _target_files(t: TargetConfig, add: Add, inputs: list[Row], directories: list[Row]) -> None:
    served_files(t, add, inputs, directories)
    caps = capabilities(t.backend)
    for role, name in caps.data_files:
        if getattr(t, name) is not None:
            add(role, getattr(t, name))
    if t.tokenizer is not None:
        add("tokenizer", t.tokenizer)
    for owner, location in ((role, getattr(t, name, None)) for role, name in caps.model_dirs):
        if location is None:
            continue
        folder = Path(location).resolve() if Path(location).is_dir() else hub_snapshot(str(location))
        if folder is None:
            inputs.append({"role": owner, "path": f"hub:{location}", "name": str(location), "sha256": None,
                           "note": "a hub id not in the local cache: not hashed, so not cacheable"})
            continue
        folder = folder.resolve()
        directories.append({"role": owner, "path": str(folder)})
        for role, file in directory_files(folder, owner):
            add(role, file, name=f"{owner}/{file.relative_to(folder)}")
            if file.name == "tokenizer_config.json":
                template = _embedded_template(file)
                if template is not None:
                    inputs.append({"role": f"{owner}:chat_template", "path": str(file.resolve()) + _TEMPLATE_KEY,
                                   "name": f"{owner}/{file.name}{_TEMPLATE_KEY}", "sha256": template})


def _embedded_template(path: Path) -> str | None:
    try:
        template = json_loads(read_text(path, what="tokenizer config")).get("chat_template")
    except (InputError, ValueError, AttributeError, RecursionError):
        return None
    if template is None:
        return None
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()


def _rubric_files(rubric: Path) -> list[tuple[str, Path]]:
    import yaml

    try:
        data = yaml.safe_load(read_text(rubric, what="rubric"))
    except (InputError, ValueError, yaml.YAMLError, RecursionError):
        return []
    if not isinstance(data, dict):
        return []
    out = []
    if isinstance(data.get("forbidden"), str):
        out.append(("forbidden", rubric.parent / data["forbidden"]))
    for metric in data.get("evaluate") or []:
        module = metric.get("module") if isinstance(metric, dict) else None
        local = rubric.parent / module if isinstance(module, str) and not module.startswith("releasegate:") else None
        if local is not None and is_file(local):
            out.append(("evaluate", local))
        elif local is not None and is_dir(local):
            out += [("evaluate", p) for p in walk_files(local, what="evaluate module directory") if p.suffix == ".py"]
    return out


def _current_hash(path: str) -> str | None:
    if path.endswith(SNAPSHOT_KEY):
        return snapshot_commit(path)
    if path.endswith(_TEMPLATE_KEY):
        return _embedded_template(Path(path[: -len(_TEMPLATE_KEY)]))
    return _hash(Path(path))


def _hash(path: Path) -> str | None:
    try:
        return sha256_file(path) if is_file(path) else None
    except (OSError, InputError):  # gone, or no longer a regular file: not the file that was sealed
        return None
