"""The `scale:` section of a config: where a run's work goes past one machine (Ray workers); `scale/` runs it."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from ..data_classes import dataclass
from ..errors import InputError
from ..extras import install_command, require
from ..model_base import Model
from ..text import inert
from .backend_facts import capabilities
from .files import KeyAt
from .read_doc import read_doc

__all__ = ["ScaleConfig", "parse_scale", "INSTALL_HINT", "where_computed", "computed_words"]

INSTALL_HINT = install_command("ray")


@dataclass(frozen=True)
class ScaleConfig:
    """Where a run's work goes: `workers` Ray workers on the cluster at `address`."""

    engine: str = "ray"
    workers: int = 2
    address: str = "none"
    """`none`: a local Ray cluster started for the run and stopped after it; `auto`: the running cluster this
    machine belongs to (`ray start --head` / a KubeRay pod; RAY_ADDRESS); else a cluster address (host:port or
    ray://host:10001)."""
    cpus_per_worker: float = 1.0
    """CPUs Ray reserves for each worker (the hf backend's torch threads stay `target.threads`)."""
    gpus_per_worker: float = 0.0
    """GPUs Ray reserves for each worker; a worker with one sees it as `cuda` (set `target.device: cuda`)."""


class _Doc(Model):
    model_config = ConfigDict(frozen=True, extra="allow")


class ScaleDoc(_Doc):
    """`scale:` as written (what `parse_scale` reads of it; ScaleConfig takes its keys as written)."""

    gpus_per_worker: float = 0.0


class ScaledTargetDoc(_Doc):
    """What `parse_scale` reads of `target:`."""

    backend: str
    device: str | None = None


class ScaledLoadDoc(_Doc):
    """What `parse_scale` reads of `load:`."""

    sweep: dict[str, Any] | None = None


def parse_scale(raw: dict[str, Any] | None, target: dict[str, Any], load: dict[str, Any] | None, at: KeyAt) -> ScaleConfig | None:
    """The validated `scale:` section (the schema checked its types), or None when there is none."""
    if raw is None:
        return None
    scaled = read_doc(ScaledTargetDoc, target, None)
    scales = capabilities(scaled.backend).scale
    if scales is None:
        raise InputError("the replay backend reads outputs from a file: there is nothing to scale", **at("scale"),
                         hint="remove scale:")
    if scales == "load" and load is None:
        raise InputError("with the openai backend, scale spreads the load phase: this config has no load:",
                         **at("scale"), hint="add a load: section, or remove scale: (the server scales the quality cases)")
    if scales == "cases" and scaled.device == "cuda" and not read_doc(ScaleDoc, raw, None).gpus_per_worker:
        raise InputError("target.device is cuda but scale gives the workers no GPU (Ray hides the GPUs from them)",
                         **at("scale"), hint="set scale.gpus_per_worker, e.g. 1")
    if load is not None and read_doc(ScaledLoadDoc, load, None).sweep is not None:
        raise InputError("scale does not spread a capacity sweep across workers", **at("scale"),
                         hint="remove scale: or load.sweep")
    require("scale: {engine: ray}", "ray", **at("scale", "engine"))  # found, not imported: validate stays light
    keys = ("engine", "workers", "address", "cpus_per_worker", "gpus_per_worker")
    return ScaleConfig(**{k: raw[k] for k in keys if k in raw})


def where_computed(scale: ScaleConfig | None, backend: str) -> dict[str, Any]:
    """Where a run's work is computed, as run.json and the report record it: {"where": "local"} (this machine:
    which one is no artifact's business), or {"where": "ray", "address", "workers", "spreads"} where `scale:`
    sends it to a Ray cluster: its address as configured ('none': a local cluster started for the run; 'auto':
    the cluster this machine belongs to), the workers asked, and the part of the run they compute."""
    if scale is None:
        return {"where": "local"}
    spreads = {"cases": "quality cases", "load": "load phase"}.get(str(capabilities(backend).scale), "run")
    return {"where": "ray", "address": scale.address, "workers": scale.workers, "spreads": spreads}


def computed_words(computed: dict[str, Any] | None) -> str:
    """'computed: locally', 'computed: on the Ray cluster at ray://head:10001, 4 workers (quality cases)'; for a run
    that predates the record, 'computed: not recorded (a run from before releasegate recorded it)'."""
    if not isinstance(computed, dict) or computed.get("where") not in ("local", "ray"):
        return "computed: not recorded (a run from before releasegate recorded it)"
    if computed["where"] == "local":
        return "computed: locally"
    address = computed.get("address")
    at = {"none": "on a local Ray cluster started for the run", "auto": "on the Ray cluster this machine belongs to "
          "(address auto)"}.get(str(address), f"on the Ray cluster at {address}")
    return inert(f"computed: {at}, {computed.get('workers')} workers ({computed.get('spreads')})", keep="")
