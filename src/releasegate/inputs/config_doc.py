"""A composed `releasegate.yaml` as written, read once after JSON Schema validation (`config.load_config` builds
the `Config` from it). Each section stays the mapping its own module parses (`target`, `suite_config`,
`load_profile`, ...); this model gives the top level and the small sections read here their types and defaults.
Unknown keys are kept (`extra="allow"`): the schema is the judge of them."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from ..model_base import Model

__all__ = ["ConfigDoc", "SuiteDoc"]

Section = dict[str, Any]
"""A config section as written, parsed by its own module."""


class _Doc(Model):
    model_config = ConfigDict(frozen=True, extra="allow")


class GenerationDoc(_Doc):
    """`generation:`: what this module reads of it (the backend takes the whole section)."""

    max_new_tokens: int = 64
    repeats: int = 1


class OutputDoc(_Doc):
    """`output:`."""

    dir: str = "reports"
    run_id: str | None = None


class ConfigDoc(_Doc):
    """The top level of a config."""

    target: Section
    suites: list[Section]
    rubric: str
    generation: Section = Field(default_factory=dict)
    output: OutputDoc = Field(default_factory=OutputDoc)
    seed: int = 0
    judge: Section | None = None
    guards: Section | None = None
    load: Section | None = None
    cost: Section | None = None
    budget: Section | None = None
    cache: Section | None = None
    prefix_cache: Section | None = None
    response_cache_probe: Section | None = None
    probes: Section | None = None
    leakage: Section | None = None
    scale: Section | None = None
    variants: list[Section] | None = None
    variant_choice: Section | None = None

    @property
    def generation_settings(self) -> GenerationDoc:
        return GenerationDoc.model_validate(self.generation)


class SuiteDoc(_Doc):
    """One entry of `suites:`: a JSONL path, or a tabular source with its columns."""

    path: str | None = None
    name: str | None = None
    limit: int | None = None
    repeats: int | None = None
    answer: Section | None = None
    format: list[Section] = Field(default_factory=list)
    source: Section | None = None
    columns: Section | None = None
    template: Section | None = None
    sample: Section | None = None
