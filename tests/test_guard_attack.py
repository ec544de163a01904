"""Hostile guard servers, review files and probe files: each attack once, each must end in no verdict, a refusal
or a failure, never a clean PASS the evidence does not support."""

from __future__ import annotations

import json

import pytest

from releasegate.errors import InputError
from releasegate.inputs.guard_settings import Unparseable, parse_guard_reply
from releasegate.testing import StubBehaviour, StubServer
from test_guard import SAFE, check, forbidden_criterion, project
from test_probes import project as probe_project


@pytest.mark.parametrize("text", ["safe\nunsafe\nS1", "safe\n\nunsafe", "SAFE\nS7"])
def test_safe_then_unsafe_reply_is_no_verdict(text):
    """Llama Guard says 'safe' alone; a reply that goes on after it (a second verdict, codes) says two things."""
    with pytest.raises(Unparseable):
        parse_guard_reply(text, "llama_guard")


@pytest.mark.parametrize("text", ["No (p=0.51)\nYes (p=0.49)", "No. Yes, it violates the policy.",
                                  '{"No": 0.51, "Yes": 0.49}'])
def test_shieldgemma_no_with_a_yes_in_it_is_no_verdict(text):
    with pytest.raises(Unparseable):
        parse_guard_reply(text, "shieldgemma", "harassment")
