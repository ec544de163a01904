"""The `suites:` section of a config: each suite's JSONL file or tabular source, columns, template and sample."""

from __future__ import annotations

from dataclasses import field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..border.structured import json_loads
from ..data_classes import dataclass
from ..errors import InputError
from .config_doc import SuiteDoc
from .files import KeyAt, is_dir, nowhere, read_text, resolve_under
from .read_doc import read_doc
from .schema_check import did_you_mean
from .source_spec import ColumnSpec, SourceSpec
from .sources import EXTENSIONS

if TYPE_CHECKING:
    from .composition import Override

__all__ = ["SuiteConfig", "parse_suite", "check_unique_names", "suite_cuts"]


@dataclass(frozen=True)
class SuiteConfig:
    """One validation suite and the scoring it uses unless a case overrides it."""

    path: Path
    """The JSONL file; for a tabular source, the file that stands for its data (the source file, the split's
    state.json of a save_to_disk directory, the config file itself for a hub dataset)."""
    name: str
    limit: int | None = None
    repeats: int | None = None
    """Draws per case for this suite (`repeats:`); None: the config's `generation.repeats`."""
    answer: dict[str, Any] | None = None
    format: tuple[dict[str, Any], ...] = ()
    source: dict[str, Any] | None = None
    """A tabular source instead of a JSONL file: {format, path (resolved), split, sheet} or {hub, config,
    split, revision}; see `suite_sources`."""
    columns: dict[str, Any] | None = None
    """Which source columns give the case: id, prompt or messages, expected (a column, or {key: column}), tags."""
    template: dict[str, Any] | None = None
    """{system, user}: Jinja templates (sandboxed, strict) building the messages from a row's fields."""
    sample: dict[str, Any] | None = None
    """{n or per_stratum, seed, by, estimate}: a seeded, stratified sample of the source's rows; see
    `suite_sample`. `estimate`: population (default; rates weighted to the source) or sample (the sample only)."""
    key_at: KeyAt = field(default=nowhere, compare=False, repr=False)
    """Where a key of this suite's entry was written (`key_at("answer", "fields", 1)`: the config file and line,
    or the --set): an error in the suite's own settings (its path, answer, format) names that line, not the
    suite's file."""

    @cached_property
    def column_spec(self) -> ColumnSpec:
        """`columns:` read once (a source suite's; empty for a JSONL suite)."""
        return ColumnSpec.model_validate(self.columns or {})


def parse_suite(raw: dict[str, Any], here: Path, config_path: Path, at: KeyAt) -> SuiteConfig:
    """One validated entry of `suites:`: a JSONL path, or a tabular source with its columns (format inferred)."""
    doc = read_doc(SuiteDoc, raw, config_path)
    if doc.source is None:
        for key in ("columns", "template", "sample"):
            if key in raw:
                raise InputError(f"{key} is for a suite with a source", **at(key), hint="add source: or remove it")
        path = resolve_under(here, str(doc.path))
        return SuiteConfig(path=path, name=doc.name if doc.name is not None else path.stem, limit=doc.limit,
                           repeats=doc.repeats, answer=doc.answer, format=tuple(doc.format), key_at=at)
    if doc.path is not None:
        raise InputError("a suite has a path (JSONL) or a source, not both", **at("path"),
                         hint="give a tabular file as source.path")
    _check_source_keys(doc.source, at)
    spec = SourceSpec.model_validate(doc.source)
    if spec.hub is not None:
        source = dict(doc.source)
        path = Path(config_path)  # nothing local stands for a hub dataset: the config itself is hashed
        name = doc.name if doc.name is not None else spec.hub.rsplit("/", 1)[-1]
    else:
        source, resolved, path = _local_source(doc.source, spec, here, at)
        name = doc.name if doc.name is not None else resolved.stem
    columns = ColumnSpec.model_validate(doc.columns or {})
    forms = [k for k, v in (("prompt", columns.prompt), ("messages", columns.messages)) if v is not None] + (
        ["template"] if doc.template is not None else [])
    if len(forms) != 1:
        raise InputError(
            "a source suite needs exactly one of columns.prompt, columns.messages or template"
            + (f" (has {', '.join(forms)})" if forms else ""), **at("columns"),
        )
    _check_answer_fields(doc.answer, columns.expected, at)
    return SuiteConfig(
        path=path, name=name, limit=doc.limit, repeats=doc.repeats, answer=doc.answer, format=tuple(doc.format),
        source=source, columns=dict(doc.columns or {}), template=dict(doc.template) if doc.template is not None else None,
        sample=_sample(doc.sample, at), key_at=at,
    )


def _check_source_keys(source: dict[str, Any], at: KeyAt) -> None:
    """A hub source takes no local keys, a local source no hub keys."""
    hub = "hub" in source
    for key in ("path", "format", "sheet") if hub else ("config", "revision"):
        if key in source:
            raise InputError(f"source.{key} is for a local source, not a hub dataset" if hub
                             else f"source.{key} is for a hub dataset", **at("source", key))


def _local_source(raw: dict[str, Any], spec: SourceSpec, here: Path, at: KeyAt) -> tuple[dict[str, Any], Path, Path]:
    """A local source with its path resolved and its format (given, or told by the name), that path, and the file
    that stands for its data."""
    resolved = resolve_under(here, str(spec.path))
    fmt = spec.format or EXTENSIONS.get(resolved.suffix.lower()) or ("disk" if is_dir(resolved) else None)
    if fmt is None:
        raise InputError(f"cannot tell the format of '{resolved.name}' from its name",
                         **at("source", "path"), hint="set source.format")
    path = resolved
    if fmt == "disk":  # a directory: its state.json (the data files and their fingerprint)
        split = spec.split or _only_split(resolved)
        path = resolved / split / "state.json" if split and is_dir(resolved / split) else resolved / "state.json"
    if fmt != "xlsx" and spec.sheet is not None:
        raise InputError("sheet is for xlsx sources", **at("source", "sheet"))
    return {**raw, "path": resolved, "format": fmt}, resolved, path


def _check_answer_fields(answer: dict[str, Any] | None, expected: object, at: KeyAt) -> None:
    """Each of `answer.fields` is a key of `columns.expected` (when that maps keys to columns): a field named
    there and nowhere else is a typo of the config, not an empty cell in every row."""
    if not isinstance(expected, dict) or not answer or answer.get("type") != "json_fields":
        return
    for j, name in enumerate(answer.get("fields") or ()):
        if name not in expected:
            raise InputError(f"'{name}' is not a key of columns.expected ({', '.join(map(str, expected))})",
                             **at("answer", "fields", j),
                             hint=did_you_mean(str(name), list(expected)) or "add it to columns.expected")


def _sample(raw: dict[str, Any] | None, at: KeyAt) -> dict[str, Any] | None:
    if raw is None:
        return None
    sizes = [k for k in ("n", "per_stratum") if k in raw]
    if len(sizes) != 1:
        raise InputError("sample needs exactly one of n (rows in all) or per_stratum (rows from each stratum)",
                         **at("sample"))
    return {"seed": 0, "by": [], **raw}  # estimate: population unless given (read with its default)


def _only_split(directory: Path) -> str | None:
    """The one split of a DatasetDict's save_to_disk directory, None when it has several (or is no such)."""
    try:  # a regular file, read with a cap: a FIFO or /dev/zero here is refused when the source is read
        splits = json_loads(read_text(directory / "dataset_dict.json", what="dataset_dict.json", max_bytes=2**20)).get("splits")
    except (InputError, ValueError, AttributeError, RecursionError):
        return None
    return splits[0] if isinstance(splits, list) and len(splits) == 1 and isinstance(splits[0], str) else None


def check_unique_names(suites: tuple[SuiteConfig, ...], at: KeyAt) -> None:
    """Raise InputError at the first suite whose name an earlier suite already has."""
    seen: set[str] = set()
    for i, suite in enumerate(suites):
        if suite.name in seen:
            raise InputError(
                f"two suites are named '{suite.name}'", **at("suites", i), hint="give each a distinct name"
            )
        seen.add(suite.name)


def suite_cuts(suites: tuple[SuiteConfig, ...], case_suites: list[str], limit: int | None, *,
               overridden: tuple[Override, ...] = (), limit_flag: str = "--limit") -> list[str]:
    """Every cut a run makes of its suites, in words: `limit` (the command's `--limit`) when it stopped the run
    short, and each suite's own `limit:` that its cases reached. `case_suites`: the suite name of each case run;
    `overridden`: the `--set` overrides given (`composition.Override`: a limit set by one is named so). A `sample:`
    is no cut: its rates are weighted to its source."""
    counts = {name: case_suites.count(name) for name in set(case_suites)}
    cuts = [f"{limit_flag} {limit}"] if limit and len(case_suites) >= limit else []
    for i, suite in enumerate(suites):
        if suite.limit and counts.get(suite.name, 0) >= suite.limit:
            by = next((f", by --set {o.key}" for o in overridden if tuple(o.parts[:2]) == ("suites", i)), "")
            cuts.append(f"suites[{i}].limit: {suite.limit} ({suite.name}{by})")
    return cuts
