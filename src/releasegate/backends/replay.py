"""Replay backend: outputs read from a JSONL file of {"id": ..., "output": ...}.

A tool case's line may hold `tool_calls`: one list of calls ({name, arguments: JSON text or object, id?}) per
turn, the k-th asked of the case answered with the k-th (`output` may then be left out: no text).

For re-gating outputs produced elsewhere. It measures nothing, so latency metrics have no samples.

Outputs are data: an output that is not valid Unicode (a lone surrogate such as "\\udc80", or bytes that are not
UTF-8 in the file) is recorded with U+FFFD in its place and flagged (`CaseRecord.output_repaired`), never a reason to
refuse the file or to lose the other outputs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..border.files import read_capped
from ..border.structured import TooDeep, json_loads
from ..errors import ErrorKind, InputError
from ..inputs.backend_facts import BackendSpec, Capabilities
from ..inputs.files import read_text
from ..record.records import Tokens
from ._base import Backend, Generation, Request
from ._registry import BackendEntry, register
from .tool_parsers import message_calls

if TYPE_CHECKING:
    from ..inputs.target import TargetConfig


class ReplayBackend(Backend):
    batch_size = 64
    measures_latency = False

    def __init__(self, target: TargetConfig, generation: dict[str, Any] | None = None) -> None:
        assert target.responses is not None  # the replay backend's required field (inputs.target)
        self.path = target.responses
        self.outputs: dict[str, str] = {}
        self.calls: dict[str, list[list[dict[str, Any]]]] = {}
        self.asked: dict[str, int] = {}

    def load(self) -> None:
        # JSON Lines end at '\n' only: str.splitlines() would also break inside an output at U+2028, U+0085...
        for number, line in enumerate(_read(self.path).split("\n"), start=1):
            if not line.strip():
                continue
            try:
                row = json_loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"not valid JSON: {exc.msg}", file=self.path, line=number) from None
            except TooDeep:
                raise InputError("nested too deeply to be a response", file=self.path, line=number) from None
            if isinstance(row, dict) and "tool_calls" in row:
                self.calls[str(row.get("id"))] = replayed_calls(row["tool_calls"], self.path, number)
                row.setdefault("output", "")
            if not isinstance(row, dict) or not isinstance(row.get("id"), str) or not isinstance(row.get("output"), str):
                raise InputError('each line needs {"id": str, "output": str}', file=self.path, line=number)
            self.outputs[row["id"]] = row["output"]

    def generate(self, requests: list[Request], *, max_new_tokens: int) -> list[Generation]:
        out = []
        for req in requests:
            text = self.outputs.get(req.case_id)
            if text is None:
                out.append(Generation(None, error=ErrorKind.MISSING_RESPONSE, error_message=f"no output for {req.case_id}"))
            else:
                out.append(Generation(text, tokens=Tokens(source="none"), tool_calls=self._turn(req)))
        return out

    def _turn(self, req: Request) -> list[list[dict[str, Any]]] | None:
        """A request with tools: the calls of the turn it is (the case's first request the first turn)."""
        if not req.tools:
            return None
        turns = self.calls.get(req.case_id) or []
        k = self.asked[req.case_id] = self.asked.get(req.case_id, -1) + 1
        return [turns[k] if k < len(turns) else []]


def replayed_calls(value: object, path: Path, number: int) -> list[list[dict[str, Any]]]:
    """A line's `tool_calls` (one list of calls per turn), each call made {id, name, arguments: text}."""
    turns = value if isinstance(value, list) else None
    if turns is None or not all(isinstance(t, list) for t in turns) or len(turns) > 32:
        raise InputError("tool_calls must be a list of turns, each a list of calls (at most 32 turns)",
                         file=path, line=number, field="tool_calls", hint='e.g. [[{"name": "f", "arguments": "{}"}]]')
    out: list[list[dict[str, Any]]] = []
    for turn in turns:
        calls = message_calls({"tool_calls": [{"id": c.get("id"), "function": c} if isinstance(c, dict) else c
                                              for c in turn]})
        if len(calls) != len(turn) or not all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in turn):
            raise InputError("each call needs a name (a string) and arguments", file=path, line=number,
                             field="tool_calls")
        out.append(calls)
    return out


def _read(path: Path) -> str:
    """The responses file as text; bytes that are not UTF-8 (a model's output written raw) become lone surrogates
    ('surrogateescape'), which the record then replaces with U+FFFD and flags."""
    try:
        return read_text(path, what="responses file")
    except InputError as exc:
        if not exc.message.startswith("not UTF-8"):
            raise
    return read_capped(path, what="responses file").decode("utf-8", "surrogateescape").removeprefix("\ufeff")


register(BackendEntry(BackendSpec(
    "replay", summary="outputs read from a JSONL file (measures no latency)",
    fields=("responses",), required=("responses",), describe=(("replay of {responses}", ()),),
    capabilities=Capabilities(measures_latency=False, data_files=(("responses", "responses"),)),
), "releasegate.backends.replay:ReplayBackend"))
