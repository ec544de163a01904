"""The base of releasegate's pydantic models: each builds its validator the first time it validates, not when its
module is imported. A command imports some two hundred models and uses a few dozen (`gate` on a run without a load
phase, a baseline or a judge never reads theirs); building all of them cost a twentieth of its start. What a model
accepts, refuses and says is the same either way."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Model"]


class Model(BaseModel):
    """`pydantic.BaseModel`, built when first used (a subclass's own `model_config` keeps this)."""

    model_config = ConfigDict(defer_build=True)
