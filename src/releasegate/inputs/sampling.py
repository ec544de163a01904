"""A seeded, stratified sample of a suite source's rows (`sample: {n | per_stratum, seed, by}`).

The strata are the distinct values of the `by` columns (read alone first: a parquet file reads only those
column chunks, an arrow file or `save_to_disk` table is memory-mapped). Each row draws a uniform number from
the seed (numpy's PCG64, one number per row in row order); a stratum gives the rows with the smallest numbers.

- `n`: n rows in all, shared in proportion to the strata sizes. When n is at least the number of strata, each
  stratum first gets one row (a small slice is never left out); rows left over by rounding go to the largest
  strata. A stratum never gives more rows than it has; an n at least the source's size takes every row.
- `per_stratum`: that many rows from each stratum (all of a smaller one).

The sample's order: first one row of each stratum, then the others interleaved, the j-th (from 0) of a stratum
that gives m rows at j / m of the way (ties in the drawn numbers' order). So its first k rows, for any k, hold
every stratum once k reaches their number, and no stratum more than one row above its share of the sample
(k * m / n). `check --limit N` (and the suite's `limit`) take the first N rows of that order, so a limited run
is itself stratified, and only those rows are read. The same seed and source bytes always give the same rows in
the same order; the manifest records the sampled case ids' digest, so `check --resume` can tell.

Each sampled row is a `SampledRow`: its stratum (the `by` values) and the stratum's size in the source go onto
the case's record (`CaseRecord.stratum`), so the gate's rates estimate the source, not the sample: each case
stands for its stratum's rows over the run's cases of that stratum (`sample_weights.stratum_counts`). With
`estimate: sample` the rates describe the sample only, and the verdict says so.

numpy and pyarrow are imported only when a sampled suite is read.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from .schema_check import did_you_mean
from .source_spec import SampleSpec, SourceSpec
from .tables import SampledSource, arrow_table, disk_dataset, where

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

Table = Any
"""A pyarrow Table or ParquetFile (pyarrow has no type information)."""

Row = dict[str, Any]
"""A source row: its columns' plain values."""

RowsOf = Callable[[SampledSource], Iterator[tuple[int, Row]]]
"""A suite's source rows, numbered from 1, for formats that are not columnar."""

__all__ = ["allocate", "draw", "sampled_rows", "SampledRow", "ESTIMATES"]

ESTIMATES = ("population", "sample")
"""`sample.estimate`: population (the default: rates weighted to the source's strata) or sample (unweighted,
the verdict then describes the sample only)."""


class SampledRow(dict[str, Any]):
    """A sampled source row (its columns, as a plain row) with the stratum it was drawn from."""

    stratum: dict[str, Any]
    """{name: the `by` values ('risk=high,task=x'), population: the stratum's rows in the source, weighted:
    whether rates weight the case by population / (the run's cases of its stratum)}."""


def _sampled_row(row: Row, by: list[str], population: int, spec: SampleSpec) -> SampledRow:
    out = SampledRow(row)
    out.stratum = {"name": ",".join(f"{c}={row.get(c)}" for c in by), "population": int(population),
                   "weighted": spec.weighted}
    return out

COLUMNAR = ("parquet", "arrow", "disk")
"""Formats whose strata columns and chosen rows are read without the other columns and rows."""


def allocate(sizes: list[int], *, n: int | None = None, per_stratum: int | None = None) -> list[int]:
    """How many rows each stratum gives (see the module docstring)."""
    if per_stratum is not None:
        return [min(per_stratum, size) for size in sizes]
    assert n is not None, "allocate needs n or per_stratum"
    if n >= sum(sizes):
        return list(sizes)
    take = [1] * len(sizes) if n >= len(sizes) else [0] * len(sizes)
    left = n - sum(take)
    while left > 0:
        open_ = [s for s, size in enumerate(sizes) if take[s] < size]
        total = sum(sizes[s] for s in open_)
        give = {s: min(left * sizes[s] // total, sizes[s] - take[s]) for s in open_}
        if not any(give.values()):  # each share under one row: the largest strata get one
            for s in sorted(open_, key=lambda s: (-sizes[s], s))[:left]:
                take[s] += 1
            return take
        for s, g in give.items():
            take[s] += g
        left -= sum(give.values())
    return take


def draw(codes: ArrayLike, spec: SampleSpec | Mapping[str, Any], *, limit: int | None = None) -> NDArray[np.int64]:
    """Row indices (0-based) of the sample in its order; `codes`: each row's stratum (0, 1, ... in order of
    first appearance). `limit`: only the first rows of that order. `spec`: the suite's `sample:`."""
    import numpy as np

    if not isinstance(spec, SampleSpec):
        spec = SampleSpec.model_validate(spec)
    codes = np.asarray(codes, dtype=np.int64)
    if not len(codes):  # an empty source: no sample (the suite is then refused as empty)
        return codes
    u = np.random.Generator(np.random.PCG64(spec.seed)).random(len(codes))
    sizes = np.bincount(codes)
    take = np.asarray(allocate(sizes.tolist(), n=spec.n, per_stratum=spec.per_stratum), dtype=np.int64)
    by_stratum = np.lexsort((u, codes))  # grouped by stratum, smallest number first
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    rank = np.empty(len(codes), dtype=np.int64)
    rank[by_stratum] = np.arange(len(codes)) - np.repeat(starts, sizes)
    chosen = np.flatnonzero(rank < take[codes])
    place = rank[chosen] / take[codes[chosen]]
    ordered = chosen[np.lexsort((u[chosen], place))]
    return ordered[:limit] if limit else ordered


# -- reading ---------------------------------------------------------------------------------------------------

def sampled_rows(suite: SampledSource, rows_of: RowsOf, *, limit: int | None = None) -> Iterator[tuple[int, SampledRow]]:
    """(row number, row) of the sample in its order. `rows_of(suite)`: the source's rows, for formats that are
    not columnar (the strata are then collected in one pass and the chosen rows in a second)."""
    spec = SampleSpec.model_validate(suite.sample)
    by = list(spec.by or ())
    source = SourceSpec.model_validate(suite.source)
    table = _table(suite, source) if source.format in COLUMNAR and source.hub is None else None
    if table is not None:
        codes = _codes_of_table(table, by, suite)
        order = draw(codes, spec, limit=limit)
        sizes = _sizes(codes)
        for (number, row), i in zip(_take_rows(table, order), order.tolist()):
            yield number, _sampled_row(row, by, sizes[codes[i]], spec)
        return
    row_codes = _codes_of_rows(rows_of(suite), by, suite)
    order = draw(row_codes, spec, limit=limit)
    wanted: dict[int, Row | None] = {int(i): None for i in order}
    for number, row in rows_of(suite):  # to the end: a reader left half-way keeps its file open
        if number - 1 in wanted:
            wanted[number - 1] = row
    got = {i: row for i, row in wanted.items() if row is not None}
    if len(got) < len(wanted):
        raise InputError("the source changed while it was read (fewer rows the second time)", file=where(suite),
                         hint="run again once it is written")
    sizes = _sizes(row_codes)
    for i in order:
        yield int(i) + 1, _sampled_row(got[int(i)], by, sizes[row_codes[int(i)]], spec)


def _sizes(codes: ArrayLike) -> NDArray[np.int64]:
    """Rows of the source in each stratum (by stratum code)."""
    import numpy as np

    counted = np.asarray(codes, dtype=np.int64)
    return np.bincount(counted) if len(counted) else np.zeros(0, dtype=np.int64)


def _table(suite: SampledSource, source: SourceSpec) -> Table | None:
    """The source as a pyarrow table or parquet file, read lazily (None: read it row by row instead)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = str(source.path)
    if source.format == "parquet":
        return pq.ParquetFile(path)
    if source.format == "arrow":
        return arrow_table(path)

    data = disk_dataset(source)
    if getattr(data, "_indices", None) is not None:  # a selection over the table: read through datasets
        return None
    table = data.data
    return table.table if hasattr(table, "table") else pa.table(table)


def _is_parquet(table: Table) -> bool:
    import pyarrow.parquet as pq

    return isinstance(table, pq.ParquetFile)


def _codes_of_table(table: Table, by: list[str], suite: SampledSource) -> NDArray[np.int64]:
    """Each row's stratum from the `by` columns alone (a parquet file reads only their column chunks)."""
    import numpy as np

    parquet = _is_parquet(table)
    names = list(table.schema_arrow.names if parquet else table.schema.names)
    for column in by:
        if column not in names:
            raise _no_column(column, names, by, suite)
    if not by:
        return np.zeros(table.metadata.num_rows if parquet else table.num_rows, dtype=np.int64)
    data = table.read(columns=by) if parquet else table.select(by)
    parts = []
    for column in by:
        values = data.column(column).combine_chunks()
        try:
            encoded = values.dictionary_encode(null_encoding="encode")
        except (NotImplementedError, ValueError, TypeError):  # pyarrow's errors for a list or struct column
            raise InputError(f"column '{column}' ({values.type}) cannot make strata",
                             **suite.key_at("sample", "by", by.index(column)),
                             hint="sample by columns of text, numbers or booleans") from None
        parts.append(np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64))
    return _first_seen(parts)


def _first_seen(parts: list[NDArray[np.int64]]) -> NDArray[np.int64]:
    """One stratum code per row from each `by` column's codes, numbered in order of each stratum's first row.
    The columns are folded in one at a time, renumbered densely after each, so no key outgrows int64."""
    import numpy as np

    key = parts[0]
    for part in parts[1:]:
        _, key = np.unique(key * (int(part.max()) + 1) + part, return_inverse=True)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    renumber = np.empty(len(first), dtype=np.int64)
    renumber[np.argsort(first, kind="stable")] = np.arange(len(first))
    return renumber[inverse.reshape(-1)]


def _no_column(column: str, names: list[str], by: list[str], suite: SampledSource) -> InputError:
    """A `sample.by` column the source lacks: the config's line, with the columns the source has."""
    return InputError(f"{where(suite)} has no column '{column}' to sample by (its columns: {', '.join(names)})",
                      **suite.key_at("sample", "by", by.index(column)), hint=did_you_mean(column, names) or None)


def _codes_of_rows(rows: Iterator[tuple[int, Row]], by: list[str], suite: SampledSource) -> array[int]:
    """Each row's stratum, one pass over the rows keeping 8 bytes a row."""
    codes: array[int] = array("q")
    strata: dict[Any, int] = {}
    for _, row in rows:
        for column in by:
            if column not in row:  # the config's typo, not the row's: every row has the same columns
                raise _no_column(column, list(map(str, row)), by, suite)
        key = tuple(_hashable(row[c]) for c in by)
        codes.append(strata.setdefault(key, len(strata)))
    return codes


_NAN = ("NaN",)  # every NaN one stratum, as in an arrow column (NaN != NaN would make each its own)


def _hashable(value: object) -> object:
    if isinstance(value, float) and value != value:
        return _NAN
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True, default=str)
    return value


def _take_rows(table: Table, order: NDArray[np.int64]) -> Iterator[tuple[int, Row]]:
    """The chosen rows, read in row order (a parquet file: only the row groups holding one), given in the
    sample's order."""
    import numpy as np

    wanted = np.sort(order)
    rows: dict[int, Row] = {}
    if _is_parquet(table):
        ends = np.cumsum([table.metadata.row_group(g).num_rows for g in range(table.num_row_groups)])
        groups = np.searchsorted(ends, wanted, side="right")
        for group in np.unique(groups):
            local = wanted[groups == group] - (ends[group - 1] if group else 0)
            picked = table.read_row_group(int(group)).take(local)
            rows.update(zip(wanted[groups == group].tolist(), picked.to_pylist()))
    elif len(wanted):
        rows = dict(zip(wanted.tolist(), table.take(wanted).to_pylist()))
    for i in order.tolist():
        yield i + 1, rows.pop(i)
