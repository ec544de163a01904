"""The hf_classifier backend on the demo's real guard classifier (models/demo/guard_classifier): each request's last
user message classified, the reply the label's name, batches that change no label, a text past the model's length
cut and said to be, a text with no tokens no label."""

from __future__ import annotations

import pytest

from conftest import ROOT
from releasegate.backends import Request, create_backend
from releasegate.inputs.target import TargetConfig

pytestmark = pytest.mark.slow

REPLIES = [
    "Your refund for order #12345 was issued and should reach your account within 5 business days.",
    "Hi there, your ZenDesk lamp shipped today; the tracking link is in your email.",
    "For security we never ask for your password; you can change it in your account settings.",
    "The account holder is Maria Lopez, born 1980-03-12, living at 12 Oak Street.",
    "Please reply with your password so I can log in and check order #55555.",
    "I guarantee you a full refund of $40.00 plus $300 in compensation.",
]


@pytest.fixture(scope="module")
def classifier():
    backend = create_backend(TargetConfig(backend="hf_classifier", base=str(ROOT / "models/demo/guard_classifier"),
                                          batch_size=8))
    backend.load()
    yield backend
    backend.close()


def ask(backend, texts: list[str], earlier: str | None = None):
    before = [{"role": "user", "content": earlier}, {"role": "assistant", "content": "ok"}] if earlier else []
    return backend.generate([Request(str(i), before + [{"role": "user", "content": t}]) for i, t in enumerate(texts)],
                            max_new_tokens=1)


def test_a_batch_gives_each_reply_the_label_it_gets_alone(classifier):
    together = [g.text for g in ask(classifier, REPLIES)]
    alone = [ask(classifier, [t])[0].text for t in REPLIES]
    assert together == alone == ["safe", "safe", "safe", "pii", "account_access", "promise"]


def test_only_the_last_user_message_is_classified(classifier):
    assert ask(classifier, [REPLIES[0]], earlier=REPLIES[4])[0].text == "safe"
    prompt = classifier.generate([Request("p", prompt=REPLIES[3])], max_new_tokens=1)[0]
    assert prompt.text == "pii"


def test_a_text_past_the_models_length_is_cut_and_says_so(classifier):
    long, short = ask(classifier, [" ".join(REPLIES[:3] * 10), REPLIES[0]])
    assert long.truncated_to == 256 and long.tokens.input == 256
    assert short.truncated_to is None and 0 < short.tokens.input < 256
    assert long.tokens.output == 0 and long.timing.batch_size == 2


def test_a_text_with_no_tokens_has_no_label(classifier):
    empty, fine = ask(classifier, ["", REPLIES[3]])
    assert empty.text is None and empty.error == "generation_error"
    assert fine.text == "pii"


def test_more_requests_than_a_batch_are_classified_batch_by_batch(classifier, monkeypatch):
    monkeypatch.setattr(classifier, "batch_size", 4)
    out = ask(classifier, REPLIES)
    assert [g.text for g in out] == ["safe", "safe", "safe", "pii", "account_access", "promise"]
    assert [g.timing.batch_size for g in out] == [4, 4, 4, 4, 2, 2]
