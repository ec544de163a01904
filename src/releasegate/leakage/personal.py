"""Personal data by hashed lookup: the values declared personal in the training file and the spans the
detectors find there (emails, phone numbers, card and id numbers: regular expressions, no model) become salted
sha256 digests of their normal form; an answer is searched by hashing its own candidate spans (every detector
match, every run of up to `MAX_WORDS` words) and looking them up. The run keeps the digests, never a value.

Normal forms: an email lower-cased; a number its digits only (so '+1 (555) 010-2233' and '15550102233' match);
any other value its words lower-cased, punctuation dropped. A value shorter than `MIN_CHARS` in normal form is
not searched: it would hit ordinary words (a first name of three letters)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

__all__ = ["DETECTED", "DETECTORS", "detect", "normal", "digest", "PersonalIndex", "MIN_CHARS", "MAX_WORDS"]

DETECTORS: dict[str, re.Pattern[str]] = {
    "email": re.compile(r"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){1,8}"),
    "card": re.compile(r"\b(?:\d[ -]?){12,18}\d\b"),
    "phone": re.compile(r"(?<![\w+])\+?\d{1,3}?[ .-]?\(?\d{2,4}\)?[ .-]?\d{3,4}[ .-]?\d{3,4}\b"),
    "id": re.compile(r"\b[A-Z]{1,3}-?\d{5,12}\b"),
}
"""The detectors run over every training record: what they find is personal whether or not a field says so."""
DETECTED = "detected:"
"""What a detected span's field is named with (`detected:email`), apart from the fields the user declared."""
MIN_CHARS = 5
MAX_WORDS = 8
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_MAX_ANSWER_CHARS = 20_000  # a huge answer is searched in its first part only (hashing every n-gram is linear)


def detect(text: str) -> list[tuple[str, str]]:
    """(kind, span) of every detector match in `text`."""
    found = []
    for kind, pattern in DETECTORS.items():
        found += [(kind, m.group(0)) for m in pattern.finditer(text[:_MAX_ANSWER_CHARS])]
    return found


def normal(value: str) -> str:
    """A value's normal form (see the module docstring)."""
    value = value.strip()
    if "@" in value and DETECTORS["email"].fullmatch(value):
        return value.lower()
    digits = re.sub(r"\D", "", value)
    if len(digits) >= 7 and len(digits) >= 0.6 * len(re.sub(r"\s", "", value)):
        return digits
    return " ".join(w.lower() for w in _WORD.findall(value))


def digest(normal_form: str, salt: str) -> str:
    return hashlib.sha256(f"{salt}\x00{normal_form}".encode()).hexdigest()


class PersonalIndex:
    """The digests of personal values and how to look an answer up in them."""

    def __init__(self, digests: Iterable[str], salt: str, max_words: int = MAX_WORDS) -> None:
        self.digests = frozenset(digests)
        self.salt = salt
        self.max_words = max(1, min(int(max_words), MAX_WORDS))

    @classmethod
    def of_values(cls, values: Iterable[str], salt: str) -> PersonalIndex:
        forms = {normal(v) for v in values}
        forms = {f for f in forms if len(f) >= MIN_CHARS}
        longest = max((len(f.split()) for f in forms), default=1)
        return cls((digest(f, salt) for f in forms), salt, longest)

    def hits(self, text: str) -> set[str]:
        """The digests of the personal values `text` contains."""
        if not self.digests:
            return set()
        return {d for d in (digest(c, self.salt) for c in self._candidates(text)) if d in self.digests}

    def _candidates(self, text: str) -> set[str]:
        text = text[:_MAX_ANSWER_CHARS]
        found = {normal(span) for _, span in detect(text)}
        words = [w.lower() for w in _WORD.findall(text)]
        for size in range(1, self.max_words + 1):
            found.update(" ".join(words[i:i + size]) for i in range(len(words) - size + 1))
        return {f for f in found if len(f) >= MIN_CHARS}
