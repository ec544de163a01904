"""The leakage stage of `check`: the arms set up from the loaded target (and `leakage.base`), the probes run,
every answer of the run's suites searched for the training file's personal values, and the figures recorded in
run.json `leakage`. A probe that cannot run (no base to compare with, the base will not load) is recorded as its
`error`: the leakage criteria then have no figure (unknown, never a pass)."""

from __future__ import annotations

from typing import Any

from ..backends import Backend, create_backend
from ..errors import TargetError
from ..inputs.leakage_inputs import read_leakage_suite
from ..record.records import RunDir, RunInfo
from .arms import Arm, adapter_facts
from .canary import canary_figures
from .probe import probe_figures, search_answers

__all__ = ["run_leakage", "NO_BASE"]

NO_BASE = ("no base to compare with: an hf target with an unmerged adapter is its own base (the adapter disabled); "
           "any other target needs leakage.base")


def run_leakage(backend: Backend | None, config: Any, run: RunDir, info: RunInfo) -> None:
    """Run the probes on `backend` (the loaded target) and record them (see the module docstring)."""
    settings = config.leakage
    suite = read_leakage_suite(settings.suite)
    owned: list[Backend] = []
    try:
        cand, base = _arms(backend, config, owned)
        probed, index = probe_figures(suite, cand, base, max_new_tokens=settings.max_new_tokens,
                                      templates=settings.templates)
        answers = search_answers(index, run.read_records(required=False))
        canaries = canary_figures(cand, base, settings.canaries, settings.canary_candidates) \
            if settings.canaries is not None else None
        figures = {**probed, "run_answers": answers, **({"canaries": canaries} if canaries is not None else {})}
    except TargetError as exc:
        figures = {"error": str(exc), "suite": {"path": str(suite.path), "sources": suite.sources}}
    finally:
        for loaded in owned:
            loaded.close()
    info.leakage = {**figures, "adapter": adapter_facts(config.target),
                    "base": config.leakage.base.describe() if config.leakage.base is not None else "the adapter disabled"}
    run.write_info(info)


def _arms(backend: Backend | None, config: Any, owned: list[Backend]) -> tuple[Arm, Arm]:
    """The candidate and the base; a backend loaded here is added to `owned`, for the caller to close."""
    if backend is None:  # every case came from the response cache: the model was not loaded
        backend = create_backend(config.target, config.generation)
        owned.append(backend)
        backend.load()
    cand = Arm("cand", backend)
    base_target = config.leakage.base
    if base_target is None:
        model = getattr(backend, "model", None)
        if model is None or not hasattr(model, "disable_adapter") or config.target.merge:
            raise TargetError(NO_BASE)
        return cand, Arm("base", backend, model.disable_adapter)
    other = create_backend(base_target, config.generation)
    owned.append(other)
    other.load()
    return cand, Arm("base", other)
