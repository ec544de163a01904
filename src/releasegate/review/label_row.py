"""One data row of a filled-in review CSV as import reads it: the cells of the columns it reads back, raw (still
neutralised, as the CSV holds them). Columns the export only shows are not kept."""

from __future__ import annotations

from dataclasses import fields

from ..data_classes import dataclass

__all__ = ["LabelRow"]


@dataclass(frozen=True)
class LabelRow:
    """The review CSV's read-back cells of one row (`csv_io.READ_BACK`); a column the file lacks reads as ''."""

    review_id: str = ""
    output: str = ""
    output_hash: str = ""
    label: str = ""
    reason: str = ""
    reviewer: str = ""
    forbidden: str = ""
    round: str = ""
    """'adjudication' in a row of the adjudication CSV."""

    @classmethod
    def of(cls, columns: dict[str, int], cells: list[str]) -> LabelRow:
        """The row `cells` under the header `columns` (name -> index; a short row's missing cells read as '')."""
        return cls(**{f.name: cells[columns[f.name]] if columns.get(f.name, len(cells)) < len(cells) else ""
                      for f in fields(cls)})
