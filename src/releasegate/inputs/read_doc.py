"""A user's file (or a section of it) read into its typed model once JSON Schema validation has passed it."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import InputError
from ..record.run_parts import problem_line

__all__ = ["read_doc"]

Doc = TypeVar("Doc", bound=BaseModel)


def read_doc(model: type[Doc], data: object, file: str | Path | None) -> Doc:
    """`data` as a `model`. The schema has already accepted it, so a refusal here is a schema that allows more
    than the model: still the user's file, named with its field (exit 2), never a traceback."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InputError(problem_line(exc), file=file) from None
