"""Ray itself: imported on use, connected once per run, disconnected (a local cluster stopped) when it ends."""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from ..errors import ReleasegateError, TargetError
from ..extras import load
from ..inputs.scale_config import ScaleConfig

__all__ = ["require_ray", "Cluster", "WORKER_ENV", "worker_env", "normal_priority", "first_line"]

WORKER_ENV = (
    "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HOME", "HF_HUB_CACHE",
    "HF_HUB_DISABLE_PROGRESS_BARS", "TOKENIZERS_PARALLELISM",
)
"""The driver's variables a worker needs to load the model the same way (offline, the same hub cache). Workers
start from the cluster's environment, not the driver's: these are set in each one before it imports anything."""


Ray = Any
"""The `ray` module (untyped, optional): its API is used as documented."""
_Handler = Callable[[int, FrameType | None], Any] | int | None


def require_ray() -> Ray:
    """The `ray` module, or a one-line InputError (exit 2) saying how to install it."""
    return load("ray", "scale: {engine: ray}", field="scale.engine")


def normal_priority() -> int:
    """Called in each worker: Ray starts its workers at niceness 15 (behind its own daemons), where a model or a
    load client loses the CPU to every normal process, the server under test included, and its clock reads run
    late by that wait. Back to 0 where the worker may (root, CAP_SYS_NICE; a local cluster starts them at 0);
    returns the niceness it runs at, reported with its figures."""
    now = os.nice(0)
    if now > 0:
        try:
            os.nice(-now)
        except OSError:  # not allowed here: the cluster must be started with RAY_worker_niceness=0
            pass
    return os.nice(0)


def worker_env() -> dict[str, str]:
    return {k: os.environ[k] for k in WORKER_ENV if k in os.environ}


class Cluster:
    """The run's connection to Ray. `address: none` starts a local cluster (this machine's CPUs, no dashboard)
    and stops it on `close`; any other address joins a running cluster and only disconnects from it. A process
    already connected (a test, a notebook) is used as it is and left connected."""

    def __init__(self, scale: ScaleConfig) -> None:
        self.scale = scale
        self.ray = require_ray()
        self.owned = False

    def connect(self) -> Ray:
        ray = self.ray
        if ray.is_initialized():
            return ray
        kwargs: dict[str, object] = {"address": self.scale.address, "log_to_driver": False, "logging_level": logging.ERROR}
        if self.scale.address == "none":  # "local": a new cluster even where `ray start` left one running
            kwargs.update(address="local", include_dashboard=False, _system_config={"worker_niceness": 0})
        handlers = _signal_handlers()
        try:
            ray.init(**kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise TargetError(f"cannot connect to Ray at {self.scale.address}: {first_line(exc)}") from None
        finally:
            _restore(handlers)
        self.owned = True
        return ray

    def check_fits(self) -> None:
        """Refuse a request the cluster can never grant: Ray would otherwise wait for the resources forever."""
        total = self.ray.cluster_resources()
        s = self.scale
        for name, each in (("CPU", s.cpus_per_worker), ("GPU", s.gpus_per_worker)):
            have = total.get(name, 0)
            if each and each * s.workers > have:
                raise TargetError(f"scale asks for {s.workers} workers x {each:g} {name} but the Ray cluster has "
                                  f"{have:g} {name}: lower scale.workers or scale.{name.lower()}s_per_worker")

    def get(self, refs: Any, what: str) -> Any:
        """`ray.get`, with a worker's failure as one TargetError line (exit 4) instead of a remote traceback."""
        ray = self.ray
        try:
            return ray.get(refs)
        except ray.exceptions.RayTaskError as exc:  # the worker's own exception, e.g. a TargetError from load
            cause = getattr(exc, "cause", None)
            if isinstance(cause, ReleasegateError):  # already one line: a model that cannot load, a key unset
                raise cause from None
            raise TargetError(f"a Ray worker failed to {what}: {first_line(cause or exc)}") from None
        except ray.exceptions.RayError as exc:  # a worker or node lost beyond Ray's retries
            raise TargetError(f"a Ray worker was lost while trying to {what}: {first_line(exc)} "
                              "(what was recorded is kept: finish with check --resume)") from None

    def close(self) -> None:
        if self.owned and self.ray.is_initialized():
            self.ray.shutdown()
        self.owned = False


def _signal_handlers() -> dict[signal.Signals, _Handler]:
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}


def _restore(handlers: dict[signal.Signals, _Handler]) -> None:
    """Put back the handlers `ray.init` replaced: Ray's core installs a crash handler for SIGTERM that prints a
    stack and aborts, where `check` stops cleanly (exit 130, run.json 'interrupted', resumable)."""
    for signum, handler in handlers.items():
        if handler is not None:
            signal.signal(signum, handler)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
