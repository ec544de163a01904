"""Every pydantic model of the package is built when first used (releasegate.model_base): one that builds at import
costs every command's start, used or not. The models of backends/, scorers/ and testing/ are left as they are
(scorers/ source is part of the stored scores' fingerprint), and so is a `RootModel[...]`."""

from __future__ import annotations

import importlib
from pathlib import Path

from pydantic import BaseModel, RootModel

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "releasegate"
LEFT = ("backends", "scorers", "testing")


def _modules() -> list[str]:
    return sorted(".".join(("releasegate", *p.relative_to(PACKAGE).with_suffix("").parts))
                  for p in PACKAGE.rglob("*.py")
                  if p.relative_to(PACKAGE).parts[0] not in LEFT and "BaseModel" in p.read_text("utf-8")
                  and not p.relative_to(PACKAGE).parts[0].startswith("schema_"))


def test_every_model_is_built_when_first_used():
    eager = []
    for name in _modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            # a RootModel[...] is pydantic's own class, parametrized where it is named
            if (isinstance(value, type) and issubclass(value, BaseModel) and not issubclass(value, RootModel)
                    and value.__module__ == name and not value.model_config.get("defer_build")):
                eager.append(f"{name}.{value.__qualname__}")
    assert eager == []


def test_a_model_is_built_by_its_first_validation_with_its_own_config():
    import pytest
    from pydantic import ConfigDict, ValidationError

    from releasegate.model_base import Model

    class Row(Model):
        model_config = ConfigDict(extra="forbid", frozen=True)
        n: int

    assert not Row.__pydantic_complete__
    assert Row.model_validate({"n": "3"}).n == 3 and Row.__pydantic_complete__
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        Row.model_validate({"n": 1, "x": 2})
    assert Row.model_config == {"defer_build": True, "extra": "forbid", "frozen": True}
