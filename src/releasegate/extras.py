"""What the optional parts of releasegate need, and the one line that says what to install when it is missing.

`pip install releasegate` is the core: endpoint targets, replay, review, reports, gate, compare and servers,
without torch, transformers, peft, datasets or evaluate. The rest comes as extras (see pyproject.toml):

    hf        torch, transformers, peft, accelerate, safetensors: `backend: hf`, the GGUF export's weights
    llamacpp  xllamacpp, gguf: `python -m releasegate.export.llamacpp` and `... .gguf`
    ray       ray: `scale: {engine: ray}`
    datasets  datasets: hub suites (`source: {hub: ...}`), save_to_disk directories
    evaluate  evaluate: a rubric's corpus-level `evaluate:` metrics
    mlflow    mlflow-skinny: `promote --mlflow-model` (a model version in an MLflow registry)

A command that needs a missing one stops with an InputError (exit 2) on one line, e.g.
"releasegate.yaml:3: field 'target.backend': backend: hf needs torch, transformers, which are not installed
(install them with: pip install 'releasegate[hf]')". Presence is checked with `importlib.util.find_spec`,
which finds a module without importing it, so `validate` stays as light as the core.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any, Unpack

from .errors import InputError, Where

__all__ = ["EXTRA_OF", "DISTRIBUTION_OF", "install_command", "missing", "require", "load"]

EXTRA_OF = {
    "torch": "hf", "transformers": "hf", "peft": "hf", "accelerate": "hf", "safetensors": "hf",
    "xllamacpp": "llamacpp", "gguf": "llamacpp",
    "ray": "ray",
    "datasets": "datasets",
    "evaluate": "evaluate",
    "mlflow": "mlflow",
}
"""The extra that installs each optional module (its top-level import name)."""
DISTRIBUTION_OF = {"mlflow": "mlflow-skinny"}
"""A module whose extra installs it from a distribution of another name (the MLflow client alone)."""


def install_command(*extras: str) -> str:
    """`pip install 'releasegate[hf]'`, or several extras at once."""
    return f"pip install 'releasegate[{','.join(extras)}]'"


def missing(*modules: str) -> list[str]:
    """Those of `modules` that cannot be imported here, in the order given; none of them is imported."""
    return [name for name in modules if not _found(name)]


def _found(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken install, or an import hook refusing it: not usable either way
        return False


def require(purpose: str, *modules: str, **where: Unpack[Where]) -> None:
    """Nothing when every module `purpose` needs is installed; else the one-line InputError naming the extras.
    `where`: the file, line and field to name (a config's `at(...)`)."""
    absent = missing(*modules)
    if absent:
        raise _missing_error(purpose, absent, where)


def load(module: str, purpose: str, **where: Unpack[Where]) -> Any:  # the module, used as its library documents
    """`module` imported, or the one-line InputError of `require` when it (or what it imports) is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        broken = exc.name is not None and exc.name.partition(".")[0] != module.partition(".")[0]
        # installed, but a package of its own is not: installing the extra again brings it back
        raise _missing_error(purpose, [module], where, broken=str(exc) if broken else None) from None


def _missing_error(purpose: str, absent: list[str], where: Where, broken: str | None = None) -> InputError:
    extras = list(dict.fromkeys(EXTRA_OF.get(name.partition(".")[0], name) for name in absent))
    names = ", ".join(absent)
    if broken:
        state = f"which fails to import ({broken})"
    else:
        state = "which is not installed" if len(absent) == 1 else "which are not installed"
    pronoun = "it" if len(absent) == 1 else "them"
    return InputError(f"{purpose} needs {names}, {state}", hint=f"install {pronoun} with: {install_command(*extras)}",
                      **where)
