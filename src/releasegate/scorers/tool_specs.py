"""A case's tool settings (`inputs.case_tools`, as its record keeps them in `tools`) and the calls a model made,
read into typed models for the tool-call checks (`tool_calls`). A call's `arguments`, the JSON Schema of a
tool's `parameters` and the acceptable argument values are the user's and the model's own JSON: free-form, kept
as they are."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import InputError
from ..record.run_parts import problem_line

__all__ = ["MadeCall", "ExpectedCall", "ToolTurn", "ToolFunction", "OfferedTool", "ToolSpec", "TurnScore",
           "made_calls", "tool_spec", "tool_turn", "offered_tools", "expected_calls"]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="allow")  # a newer record read by older code keeps what it does not know


class MadeCall(_Spec):
    """A call as recorded: {id, name, arguments}."""

    id: Any = None
    name: Any = None
    """The tool named, as the model wrote it (a server may send anything: compared only once it is a string)."""
    arguments: Any = None
    """The text the model wrote (JSON, if it is right), or an object a replay file gave."""


class ExpectedCall(_Spec):
    """A call a turn expects: its tool, and each argument's acceptable values."""

    name: str
    arguments: dict[str, list[Any]] | None = None
    """Argument name -> its acceptable values (free-form JSON)."""
    optional: list[str] | None = None
    """Arguments that may be left out."""


class ToolTurn(_Spec):
    """One turn of a case's script: whether a call is wanted, the calls expected and their order."""

    call: str = "required"
    """'required', 'optional' or 'forbidden'."""
    calls: list[ExpectedCall] | None = None
    order: str = "any"
    """'any', 'sequence' or 'exact'."""
    forbidden_tools: list[Any] | None = None


class ToolFunction(_Spec):
    name: str
    parameters: Any = None
    """The JSON Schema of the tool's arguments (the user's, free-form); None: any arguments."""


class OfferedTool(_Spec):
    """A tool offered to the model, OpenAI-style: {type: function, function: {name, parameters, ...}}."""

    function: ToolFunction


class ToolSpec(_Spec):
    """`Case.tools`: the tools offered and the turns scripted."""

    tools: list[OfferedTool] | None = None
    turns: list[ToolTurn] | None = None


@dataclass
class TurnScore:
    """One turn's checks (see `tool_calls`), in the order a record's `scores.tools.turns` keeps them."""

    calls: int
    expected: int
    missed: bool
    unwanted: bool
    trigger: bool | None
    json: bool | None
    schema: bool | None
    matched: int
    match: bool | None
    sequence: bool | None
    forbidden_tool: bool | None
    detail: str = ""

    def checks(self) -> dict[str, bool | None]:
        """Check name (`tool_calls.CHECKS`) -> its result; None where it does not apply."""
        return {"trigger": self.trigger, "json": self.json, "schema": self.schema, "match": self.match,
                "sequence": self.sequence, "forbidden_tool": self.forbidden_tool}

    @property
    def passed(self) -> bool:
        """Every check that applies passed."""
        return all(v is not False for v in self.checks().values())

    def as_dict(self, *, detail: bool = True) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if detail or k != "detail"}


_M = TypeVar("_M", bound=BaseModel)


def _read(model: type[_M], value: Any, what: str) -> _M:
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise InputError(f"{what}: {problem_line(exc)}", hint="check the case's tools, expect and turns") from None


def made_calls(calls: list[dict[str, Any]]) -> list[MadeCall]:
    return [_read(MadeCall, c, "tool call") for c in calls]


def expected_calls(calls: list[dict[str, Any]]) -> list[ExpectedCall]:
    return [_read(ExpectedCall, c, "expected call") for c in calls]


def tool_spec(spec: dict[str, Any]) -> ToolSpec:
    return _read(ToolSpec, spec, "case tools")


def tool_turn(turn: dict[str, Any]) -> ToolTurn:
    return _read(ToolTurn, turn, "tool turn")


def offered_tools(tools: list[dict[str, Any]]) -> list[OfferedTool]:
    return [_read(OfferedTool, t, "tool") for t in tools]
