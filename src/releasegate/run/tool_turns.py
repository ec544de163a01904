"""A scripted conversation's later turns, asked by replay: no tool is run and no user is simulated.

A case with `turns` is asked its first turn with the rest of its batch. While a turn's calls pass its checks
(`scorers.tool_calls.score_turn`), the next turn is asked: the conversation so far, the model's own calls as an
assistant message, and the turn's scripted `tool_results` as `role: tool` messages, each answering the call
that matched its expected call (the optimal assignment). A turn that diverges from the script ends the
conversation: no later turn is asked, and the case is scored up to it (it fails). Each turn's calls are kept in
`Generation.tool_calls`, one list per turn asked; the answer's text is the last turn's; output tokens add up;
the timing is the first turn's. A later turn's request that fails makes the case's record that failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..backends import Generation, Request
from ..inputs.suites import Case
from ..scorers.tool_calls import match_calls, score_turn, turn_passed
from .tool_script import MadeCall, TurnScript, script_of

__all__ = ["continue_turns", "next_messages"]


def continue_turns(backend: Any, cases: Sequence[Case], gens: list[Generation], max_new_tokens: int) -> None:
    """Ask the later turns of `cases`' conversations (their first turn's answers in `gens`, updated in place)."""
    scripts = {c.id: script for c in cases if (script := script_of(c.tools)) is not None and len(script.turns) > 1}
    talks = {c.id: list(c.messages or ()) for c in cases if c.id in scripts}
    live = [(c, g) for c, g in zip(cases, gens) if c.id in talks]
    turn = 0
    while live:
        asked = []
        for case, gen in live:
            script = scripts[case.id]
            if gen.error is not None or turn + 1 >= len(script.turns):
                continue
            calls = (gen.tool_calls or [[]])[-1]
            spec = script.turns[turn]
            if not turn_passed(score_turn(calls, spec, script.tools)):
                continue  # diverged from the script: the conversation ends at this turn
            talks[case.id] += next_messages(gen.text, calls, spec)
            asked.append((case, gen))
        if not asked:
            return
        requests = [Request(c.id, talks[c.id], tools=scripts[c.id].tools or None,
                            tool_choice=scripts[c.id].tool_choice) for c, _ in asked]
        for (_, gen), reply in zip(asked, backend.generate(requests, max_new_tokens=max_new_tokens)):
            _add_turn(gen, reply)
        live, turn = asked, turn + 1


def next_messages(text: str | None, calls: list[dict[str, Any]], spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages a turn adds: the model's calls, then each expected call's scripted result as the answer to
    the call that matched it, in the order the calls were made."""
    made = [MadeCall.model_validate(c) for c in calls]
    ids = [c.id or f"call_{i}" for i, c in enumerate(made)]
    said = {"role": "assistant", "content": text or None, "tool_calls": [
        {"id": ids[i], "type": "function", "function": {"name": c.name or "", "arguments": c.arguments or ""}}
        for i, c in enumerate(made)]}
    turn = TurnScript.model_validate(spec)
    results = turn.tool_results or []
    answered = sorted(match_calls(calls, turn.calls or []))
    return [said, *({"role": "tool", "tool_call_id": ids[i], "name": made[i].name or "", "content": results[j]}
                    for i, j in answered if j < len(results))]


def _add_turn(gen: Generation, reply: Generation) -> None:
    """A later turn's answer joined to the case's generation."""
    if reply.error is not None:
        gen.error, gen.error_message = reply.error, f"turn {len(gen.tool_calls or []) + 1}: {reply.error_message}"
        gen.text = None
        return
    gen.tool_calls = [*(gen.tool_calls or []), *(reply.tool_calls or [[]])]
    gen.text = reply.text
    if gen.tokens.output is not None and reply.tokens.output is not None:
        gen.tokens = gen.tokens.model_copy(update={"output": gen.tokens.output + reply.tokens.output})
