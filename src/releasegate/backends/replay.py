"""Replay backend: outputs read from a JSONL file of {"id": ..., "output": ...}.

For re-gating outputs produced elsewhere. It measures nothing, so latency metrics have no samples.
"""

from __future__ import annotations

import json

from .._loading import read_text
from ..errors import InputError
from ..record import Tokens
from ._base import Backend, Generation, Request


class ReplayBackend(Backend):
    batch_size = 64
    measures_latency = False

    def __init__(self, target, generation: dict | None = None) -> None:
        self.path = target.responses
        self.outputs: dict[str, str] = {}

    def load(self) -> None:
        for number, line in enumerate(read_text(self.path, what="responses file").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"not valid JSON: {exc.msg}", file=self.path, line=number) from None
            if not isinstance(row, dict) or not isinstance(row.get("id"), str) or not isinstance(row.get("output"), str):
                raise InputError('each line needs {"id": str, "output": str}', file=self.path, line=number)
            self.outputs[row["id"]] = row["output"]

    def generate(self, requests: list[Request], *, max_new_tokens: int) -> list[Generation]:
        out = []
        for req in requests:
            text = self.outputs.get(req.case_id)
            if text is None:
                out.append(Generation(None, error="missing_response", error_message=f"no output for {req.case_id}"))
            else:
                out.append(Generation(text, tokens=Tokens(source="none")))
        return out
