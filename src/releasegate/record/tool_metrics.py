"""The tool-call metrics (`gate.tools_feature` measures them; `scorers.tool_calls` scores each case): named here,
below the rubric, so a rubric may gate on them before any feature is imported. Each is a share of cases with
one-sided Wilson bounds."""

from __future__ import annotations

__all__ = ["TOOL_METRICS"]

TOOL_METRICS: dict[str, tuple[str, str]] = {
    "tool_call_accuracy": ("higher", "share of tool cases passing every check of every scripted turn (failed requests "
                                     "and conversations cut at a diverging turn count as wrong)"),
    "tool_trigger_rate": ("higher", "share of answered tool cases that called a tool where one is required and none "
                                    "where calls are forbidden"),
    "tool_miss_rate": ("lower", "share of answered cases requiring a call that made none"),
    "tool_unwanted_rate": ("lower", "share of answered cases forbidding calls that made one"),
    "tool_args_json_rate": ("higher", "share of answered cases with calls whose every call's arguments are a JSON object"),
    "tool_args_schema_rate": ("higher", "share of answered cases with calls whose every call names a tool of the case and "
                                        "satisfies its parameters' JSON Schema"),
    "tool_match_rate": ("higher", "share of cases with expected calls whose calls match them (name and acceptable "
                                  "arguments, optimal assignment; failed requests count as wrong)"),
    "tool_forbidden_call_rate": ("lower", "share of answered cases naming forbidden_tools that called one of them"),
    "tool_sequence_rate": ("higher", "share of cases with order exact or sequence whose calls come in that order "
                                     "(failed requests count as wrong)"),
}
