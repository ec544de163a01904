"""Records as a command holds them while it judges a run: the gate reads every record many times but a case's
input (its prompt, or its chat messages, as sent) only for a few (a failing case's detail, a baseline's pairing,
a report row), so the input is held packed, about a third of its size as dicts and strings, and unpacked each
time it is read. A record of 100,000 cases' run holds about 0.5 KB less per case.

A streamed answer's inter-token gaps (`timing.itl_ms`, one a token) are held as an `array('d')`: 8 bytes a gap
instead of a float object and a list slot (32), the same doubles. They are the one part of a record that grows
with the answer's length: a 200-token answer's gaps are 6.4 KB as a list, 1.6 KB as an array."""

from __future__ import annotations

import marshal
from array import array
from typing import Any

from .records import CaseRecord

__all__ = ["HeldRecord", "hold_input"]

_INPUT, _TIMING, _GAPS = "input", "timing", "itl_ms"


class HeldRecord(CaseRecord):
    """A `CaseRecord` whose `input` is held as marshal bytes: reading `input` gives a new dict equal to the one
    read from the journal (marshal keeps every JSON value as it was: str, int, float, bool, None, list, dict).
    Only read, never written: `model_copy(update={"input": ...})` holds the given dict as it is. Dumped (JSON or
    a dict), it is the record it was read as."""

    def unpacked(self) -> CaseRecord:
        """The record as `RunDir.read_records` read it: a `CaseRecord`, its input a dict, its gaps a list."""
        timing = self.timing
        gaps = timing.__dict__.get(_GAPS)
        if type(gaps) is array:
            timing = timing.model_copy(update={_GAPS: gaps.tolist()})
        plain: CaseRecord = self.model_copy(update={_INPUT: self.input, _TIMING: timing})
        plain.__class__ = CaseRecord
        return plain

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        return self.unpacked().model_dump(**kwargs)

    def model_dump_json(self, **kwargs: Any) -> str:
        return self.unpacked().model_dump_json(**kwargs)


def _input(record: CaseRecord) -> dict[str, Any]:
    value = record.__dict__[_INPUT]
    held: dict[str, Any] = marshal.loads(value) if type(value) is bytes else value
    return held


setattr(HeldRecord, _INPUT, property(_input))  # after the class is made: the field stays as pydantic knows it


def hold_input(record: CaseRecord) -> None:
    """Hold the record's input packed and its inter-token gaps as an array (`HeldRecord`), in place: every other
    field is as it was."""
    if type(record) is CaseRecord:
        record.__dict__[_INPUT] = marshal.dumps(record.__dict__[_INPUT])
        timing = record.__dict__[_TIMING].__dict__
        gaps = timing.get(_GAPS)
        if type(gaps) is list and gaps:
            timing[_GAPS] = array("d", gaps)
        record.__class__ = HeldRecord
