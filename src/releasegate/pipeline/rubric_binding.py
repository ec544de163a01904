"""The rubric that actually judged a run, as release records it (attest, bless, promote, compare, history).

The effective rubric is the run's rubric snapshot (criteria, thresholds, forbidden rules, review keys, what may be
overridden) together with every judging key of the config the run was composed with (answer and format checks,
sample, generation, judge, guards, probes...; `inputs.judging_keys`), after `extends:` and `--set`. Its hash
(`effective_sha256`) is what a deploy can require (`verify-attestation --rubric-sha256`): the same official config
and rubric give the same hash on any machine, since paths are hashed as written. The overrides are every key laid
over the config layer that names the rubric, recorded by `check` in manifest.json (`composition.over_official`,
vouched for by the digest the sealed run.json keeps: `record.sealed_composition`), and a what-if (`gate
--rubric`) when the report was judged by another rubric.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ConfigDict

from ..border.files import sha256_file
from ..data_classes import dataclass
from ..errors import InputError
from ..inputs.files import stored_yaml
from ..inputs.judging_keys import effective_rubric_sha256, judges, key_parts
from ..model_base import Model
from ..record.records import RunDir, RunInfo
from ..record.sealed_composition import require_sealed_composition
from ..record.stored_manifest import SealOnly, read_manifest_file
from ..run.manifest import case_digests_of

__all__ = ["RubricOverride", "RubricBinding", "binding_of", "run_binding"]

CONFIG_SNAPSHOT = "config.yaml"
RUBRIC_SNAPSHOT = "rubric.yaml"


@dataclass(frozen=True)
class RubricOverride:
    """One key laid over the official config: the key path, who wrote it ('--set', an `extends:` file, or
    'what-if FILE'), and whether it can change what is measured against the criteria."""

    key: str
    by: str
    judges: bool

    def as_record(self) -> dict[str, Any]:
        return {"key": self.key, "by": self.by, "judges": self.judges}


@dataclass(frozen=True)
class RubricBinding:
    """The rubric that judged a run: its effective hash, the rubric file's, every override, and the overrides the
    rubric itself allows by name (`release.allow_overrides`)."""

    effective_sha256: str | None
    """None: a snapshot could not be read (nothing can then be bound)."""
    official_sha256: str | None
    """sha256 of the run's rubric snapshot: the rubric file as the run took it."""
    overrides: tuple[RubricOverride, ...]
    allow_overrides: tuple[str, ...]

    def as_record(self) -> dict[str, Any]:
        return {"effective_sha256": self.effective_sha256, "official_sha256": self.official_sha256,
                "overrides": [o.as_record() for o in self.overrides],
                "allow_overrides": list(self.allow_overrides)}


def run_binding(run_path: Path, whatif: Path | None = None, whatif_policy: dict[str, Any] | None = None) -> RubricBinding:
    """`binding_of` with the run's manifest read here (none readable: no override known beyond a what-if)."""
    try:
        manifest = read_manifest_file(Path(run_path), whole=False) or {}
    except InputError:
        manifest = {}
    return binding_of(Path(run_path), manifest, str(whatif) if whatif is not None else None, whatif_policy)


def binding_of(run_path: Path, manifest: dict[str, Any], whatif: str | None = None,
               whatif_policy: dict[str, Any] | None = None) -> RubricBinding:
    """The run's rubric binding from its sealed snapshots and manifest; `whatif`: the rubric file a what-if report
    was judged by (an override of the whole rubric), and `whatif_policy` that rubric's snapshot form
    (`Rubric.as_dict`), which then stands in the effective rubric for the run's own. A manifest whose composition
    is not the one the run's sealed run.json recorded is refused (InputError); an empty one (none readable) is not
    read for overrides."""
    info = _sealed_info(run_path)
    if manifest:
        require_sealed_composition(run_path, manifest, info.composition_sha256 if info is not None else None)
    config = stored_yaml(run_path / CONFIG_SNAPSHOT, what="config snapshot")
    rubric = whatif_policy if whatif_policy is not None else stored_yaml(run_path / RUBRIC_SNAPSHOT,
                                                                         what="rubric snapshot")
    try:
        official = sha256_file(run_path / RUBRIC_SNAPSHOT, what="rubric snapshot")
    except InputError:
        official = None
    effective = effective_rubric_sha256(config, rubric, case_digests_of(manifest)) \
        if config is not None and rubric is not None else None
    overrides = list(_recorded(manifest))
    overrides += _sealed_sets(info, {o.key for o in overrides})
    if whatif is not None:
        overrides.append(RubricOverride("rubric", f"what-if {whatif}", True))
    allowed = _Release.model_validate(rubric).allowed() if isinstance(rubric, dict) else ()
    return RubricBinding(effective, official, tuple(overrides), allowed)


class _Lenient(Model):
    model_config = ConfigDict(extra="allow")


class _Release(_Lenient):
    """A rubric's `release:` as far as the binding reads it (any value: what is not a list allows nothing)."""

    release: Any = None

    def allowed(self) -> tuple[str, ...]:
        """`release.allow_overrides`: the judging keys the rubric allows overriding, by name."""
        section = _AllowOverrides.model_validate(self.release) if isinstance(self.release, dict) else None
        allowed = section.allow_overrides if section else None
        return tuple(str(a) for a in allowed) if isinstance(allowed, list) else ()


class _AllowOverrides(_Lenient):
    allow_overrides: Any = None


class _Keyed(_Lenient):
    """A `--set` entry or an input entry, as far as the binding reads it."""

    key: Any = None
    role: Any = None
    named_by: Any = None


def _recorded(manifest: dict[str, Any]) -> list[RubricOverride]:
    """The overrides manifest.json records. A run composed before they were recorded names its `--set` keys
    only; when a base config named its rubric, the layers over it are unknown, and count as one judging override."""
    shape = SealOnly.model_validate(manifest)  # read through `read_manifest_file`: of this shape
    composition = shape.composition
    if composition is None:
        return []
    if composition.over_official is not None:
        return [_override(o.key, o.by) for o in composition.over_official]
    out = [_override(str(_Keyed.model_validate(o).key), "--set") for o in composition.set or ()]
    inputs = [_Keyed.model_validate(r) for r in shape.inputs or ()]
    rubric_row = next((r for r in inputs if r.role == "rubric"), None)
    if composition.extends and rubric_row is not None and rubric_row.named_by:
        out.append(RubricOverride("*", "extends: layers over the config naming the rubric (not recorded)", True))
    return out


def _sealed_info(run_path: Path) -> RunInfo | None:
    """The run's sealed run.json, None when it cannot be read (`verify` says why)."""
    try:
        return RunDir(run_path).read_info()
    except InputError:
        return None


def _sealed_sets(info: RunInfo | None, known: set[str]) -> list[RubricOverride]:
    """The `--set` keys run.json records that the manifest does not (any more): manifest.json is no sealed file,
    run.json is, so a key deleted from the manifest's `composition` still counts."""
    recorded = (info.overrides if info is not None else None) or []
    keys = dict.fromkeys(str(entry).split("=", 1)[0] for entry in recorded)
    return [_override(key, "--set") for key in keys if key not in known]


def _override(key: str, by: str) -> RubricOverride:
    return RubricOverride(key, by, judges(key_parts(key)))
