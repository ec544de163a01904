"""A tabular suite's `source:`, `columns:`, `template:` and `sample:` as typed settings.

The config keeps each section as written (the manifest records a `sample:` as given, and `source:` is what
`tables` hashes and opens); these models read a section once, after JSON Schema validation, so the readers use
attributes. Unknown keys are kept (`extra="allow"`): the schema, not these models, says what a section may hold.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import ConfigDict

from ..model_base import Model

__all__ = ["SourceSpec", "ColumnSpec", "TemplateSpec", "SampleSpec", "section"]


class _Section(Model):
    model_config = ConfigDict(frozen=True, extra="allow", arbitrary_types_allowed=True)


_SectionT = TypeVar("_SectionT", bound=_Section)


class SourceSpec(_Section):
    """`source:`: a local file or directory ({format, path, split, sheet}) or a hub dataset ({hub, config,
    split, revision})."""

    hub: str | None = None
    path: str | Path | None = None
    format: str | None = None
    split: str | None = None
    sheet: str | int | None = None
    config: str | None = None
    revision: str | None = None


class ColumnSpec(_Section):
    """`columns:`: which source columns give the case."""

    id: str | None = None
    prompt: str | None = None
    messages: str | None = None
    expected: str | dict[str, str] | None = None
    """A column, or {key: column} for a json_fields answer."""
    tags: list[str] | dict[str, str] | None = None
    """Columns whose values become tags of the same names, or {tag: column}."""

    def tag_columns(self) -> dict[str, str]:
        """{tag: column}."""
        tags = self.tags or {}
        return {c: c for c in tags} if isinstance(tags, list) else dict(tags)

    def tag_key(self, tag: str, column: str) -> str | int:
        """The key under `columns.tags` that names `column`: its index in a list, else the tag."""
        return self.tags.index(column) if isinstance(self.tags, list) else tag


class TemplateSpec(_Section):
    """`template:`: Jinja templates of the system and user messages."""

    system: str | None = None
    user: str | None = None

    def roles(self) -> list[tuple[str, str]]:
        """(role, template) in message order."""
        return [(role, text) for role, text in (("system", self.system), ("user", self.user)) if text is not None]


class SampleSpec(_Section):
    """`sample:`: n rows in all or per_stratum rows a stratum, drawn with `seed`, strata the `by` columns."""

    n: int | None = None
    per_stratum: int | None = None
    seed: int = 0
    by: list[str] | None = None
    estimate: str = "population"

    @property
    def weighted(self) -> bool:
        """Whether rates weight a case to its stratum's share of the source."""
        return self.estimate == "population"


def section(model: type[_SectionT], raw: dict[str, Any] | None) -> _SectionT | None:
    """`raw` (a validated section) read into `model`, or None when the section is absent."""
    return None if raw is None else model.model_validate(raw)

