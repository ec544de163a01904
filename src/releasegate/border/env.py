"""Environment variables releasegate reads, each with its type and range: a value outside them is an InputError
(exit 2) naming the variable, never a default taken in silence or a crash halfway through a run.

`check_environment` reads every releasegate variable once, before anything is generated, so a bad value ends a
command at its start. Credentials named by a config (`api_key_env`, header variables) are read where they are
sent; they are strings with no range of their own.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from ..data_classes import dataclass
from ..errors import InputError

__all__ = [
    "EnvNumber", "EnvChoice", "env_number", "env_choice", "env_flag", "env_path", "env_text", "env_secret", "check_environment",
    "PROGRESS_INTERVAL", "TEST_JUDGE_DELAY", "TEST_HOLD_AFTER_VERDICT", "EVENT_LOOP", "VLLM_PYTHON", "STEP_SUMMARY",
    "TRACEBACK", "MAX_ENV_CHARS",
]

MAX_ENV_CHARS = 4096  # a path or a number: PATH_MAX on Linux; longer is not a value releasegate reads


@dataclass(frozen=True)
class EnvNumber:
    """A number of seconds (or any finite float) in [low, high]; unset or empty: `default`."""

    name: str
    default: float
    low: float
    high: float
    low_inclusive: bool = True
    meaning: str = "seconds"


@dataclass(frozen=True)
class EnvChoice:
    """One of `choices` (case and surrounding blanks ignored); unset or empty: `default`."""

    name: str
    choices: tuple[str, ...]
    default: str
    noun: str = "a value it takes"


PROGRESS_INTERVAL = EnvNumber("RELEASEGATE_PROGRESS_INTERVAL_S", 10.0, 0.0, 86_400.0, low_inclusive=False)
"""Seconds between two progress lines of a running step in a CI log: above 0, at most a day."""
TEST_JUDGE_DELAY = EnvNumber("RELEASEGATE_TEST_JUDGE_DELAY_S", 0.0, 0.0, 3_600.0)
"""Test hook (tests/test_signals.py): seconds added to judging."""
TEST_HOLD_AFTER_VERDICT = EnvNumber("RELEASEGATE_TEST_HOLD_AFTER_VERDICT_S", 0.0, 0.0, 3_600.0)
"""Test hook (tests/test_check_overhead.py): seconds `check` waits after its verdict."""
EVENT_LOOP = EnvChoice("RELEASEGATE_EVENT_LOOP", ("auto", "uvloop", "asyncio"), "auto", "an event loop")
"""The client's event loop (see `releasegate.backends._dispatch`)."""
VLLM_PYTHON = "RELEASEGATE_VLLM_PYTHON"
"""The Python interpreter of a vLLM install, for vLLM variants (see `releasegate.export.vllm`)."""
STEP_SUMMARY = "GITHUB_STEP_SUMMARY"
"""The file GitHub Actions gives for the job summary: the Markdown report is appended there."""
TRACEBACK = "RELEASEGATE_TRACEBACK"
"""Set (to anything but empty, 0, false, no): an internal error prints its traceback."""

NUMBERS = (PROGRESS_INTERVAL, TEST_JUDGE_DELAY, TEST_HOLD_AFTER_VERDICT)


def env_text(name: str) -> str | None:
    """The variable's value, blanks stripped; None when unset or empty. Longer than MAX_ENV_CHARS, or holding a
    control character: InputError naming it."""
    value = os.environ.get(name)
    if value is None or not value.strip():
        return None
    value = value.strip()
    if len(value) > MAX_ENV_CHARS:
        raise InputError(f"{name} is longer than {MAX_ENV_CHARS} characters")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise InputError(f"{name} holds a control character")
    return value


def env_secret(name: str, *, field: str) -> str:
    """A credential a config names by its variable (an API key, a header's value): set, one line, and text an
    HTTP header can carry. Anything else is InputError at `field`, saying what to do: a line break in a key
    would add a header of its own to every request."""
    value = os.environ.get(name)
    if not value:
        raise InputError(f"environment variable {name} is not set", field=field, hint=f"export {name}=...")
    if any(c in value for c in "\r\n\0"):
        raise InputError(f"environment variable {name} holds a line break: not a header value", field=field)
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        raise InputError(f"environment variable {name} has a character HTTP headers cannot carry", field=field,
                         hint="header values are Latin-1 text") from None
    return value


def env_number(spec: EnvNumber) -> float:
    """The variable as a finite number in its range; unset: its default; anything else (inf, nan, a negative
    where none is allowed, a word): InputError naming the variable and the range."""
    text = env_text(spec.name)
    if text is None:
        return spec.default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    low_ok = value > spec.low or (spec.low_inclusive and value == spec.low)
    if not (math.isfinite(value) and low_ok and value <= spec.high):
        bracket = "[" if spec.low_inclusive else "("
        raise InputError(f"{spec.name}={text!r} is not a number of {spec.meaning} in {bracket}{spec.low:g}, "
                         f"{spec.high:g}]", hint=f"unset it for the default, {spec.default:g}")
    return value


def env_choice(spec: EnvChoice) -> str:
    """The variable as one of its choices (lower case); unset or empty: the default."""
    text = env_text(spec.name)
    if text is None:
        return spec.default
    value = text.lower()
    if value not in spec.choices:
        raise InputError(f"{spec.name}={text!r} is not {spec.noun}",
                         hint="use " + ", ".join(spec.choices))
    return value


def env_flag(name: str) -> bool:
    """Set to anything but empty, 0, false or no. Never raises: the traceback switch is read while an error is
    being reported."""
    value = (os.environ.get(name) or "").strip().lower()
    return value not in ("", "0", "false", "no")


def env_path(name: str) -> Path | None:
    """The variable as a path (not checked for existence: its reader does that); unset: None."""
    text = env_text(name)
    return Path(text) if text is not None else None


def check_environment() -> None:
    """Every releasegate variable read once, before a command starts its work: a bad value is exit 2 now."""
    for spec in NUMBERS:
        env_number(spec)
    env_choice(EVENT_LOOP)
    env_path(VLLM_PYTHON)  # GITHUB_STEP_SUMMARY is a courtesy: a bad one is a warning where it is written
