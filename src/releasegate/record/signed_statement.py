"""A signed attestation's statement read back (`verify-attestation`): the releasegate gate verdict and the in-toto
test result that stands for it, as typed views of JSON that whoever holds a key may have written.

Only the shape the checks need is required (`Statement`: its subjects files with sha256 digests, its predicate's
`run` and `rubric` objects); every other part the checks read is of any type (`object`), so a statement releasegate
did not write is refused by the check that reads it, with the reason, never an internal error.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field, Strict, TypeAdapter, ValidationError

from ..model_base import Model

__all__ = ["AttestationCheck", "Statement", "StatementHead", "Subject", "Predicate", "SignedRun", "SignedRubric", "SignedCriterion",
           "SignedOverride", "SignedWeight", "ServedFiles", "TestResultPredicate", "subjects_of", "criteria_of",
           "weights_of"]

Text = Annotated[str, Strict()]
Sha256 = Annotated[str, Strict(), Field(pattern="^[0-9a-f]{64}$")]


class _Loose(Model):
    model_config = ConfigDict(extra="allow")  # read by the names the JSON has, never the Python ones


class StatementHead(_Loose):
    """The envelope of any in-toto Statement v1: what it says it is, its subjects and its predicate, unread."""

    type: object = Field(None, alias="_type")
    predicate_type: object = Field(None, alias="predicateType")
    subject: object = None
    predicate: object = None


class Digest(_Loose):
    sha256: Sha256


class Subject(_Loose):
    name: Text
    digest: Digest


class SignedRun(_Loose):
    run_id: object = None


class SignedRubric(_Loose):
    sha256: object = None
    effective_sha256: object = None
    overrides: object = None


class Predicate(_Loose):
    """The gate verdict's predicate (`pipeline.attest.statement_for`)."""

    run: SignedRun
    rubric: SignedRubric
    verdict: object = None
    criteria: object = None
    weights: object = None
    served_files: object = None


class Statement(_Loose):
    """A releasegate statement whose subjects and predicate have the shape `verify-attestation` reads."""

    subject: list[Subject]
    predicate: Predicate


class SignedCriterion(_Loose):
    name: object = None
    metric: object = None
    verdict: object = None


class SignedOverride(_Loose):
    key: object = None
    by: object = None
    judges: object = None


class SignedWeight(_Loose):
    name: Text
    sha256: Text


class ServedFiles(_Loose):
    """How the served files were known (`as`) and their subject names."""

    known_as: object = Field(None, alias="as")
    files: object = None


class TestResultPredicate(_Loose):
    """The in-toto test-result predicate, as signed."""

    result: object = None
    passed_tests: object = Field([], alias="passedTests")
    warned_tests: object = Field([], alias="warnedTests")
    failed_tests: object = Field([], alias="failedTests")
    configuration: object = []


class AttestationCheck(_Loose):
    """What `verify-attestation` checked (`pipeline.attest.verify_attestation`), as the command shows it."""

    reason: str
    key_id: str
    run_id: object = None
    test_result: str | None = None
    served_files: object = None


_SUBJECTS: TypeAdapter[list[Subject]] = TypeAdapter(list[Subject])
_WEIGHTS: TypeAdapter[list[SignedWeight]] = TypeAdapter(list[SignedWeight])


def subjects_of(raw: object) -> list[Subject] | None:
    """The subjects, each a file name with a sha256 digest; None when they are not all that."""
    try:
        return _SUBJECTS.validate_python(raw)
    except ValidationError:
        return None


def criteria_of(raw: object) -> list[SignedCriterion | None]:
    """The attested criteria: each an object (None: a criterion of another type); none when it is no list."""
    if not isinstance(raw, list):
        return []
    return [SignedCriterion.model_validate(c) if isinstance(c, dict) else None for c in raw]


def weights_of(raw: object) -> list[SignedWeight] | None:
    """The attested weights files, each a name and a sha256; None when they are not all that."""
    try:
        return _WEIGHTS.validate_python(raw)
    except ValidationError:
        return None
