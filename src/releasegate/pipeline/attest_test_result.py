"""The in-toto test-result predicate (https://in-toto.io/attestation/test-result/v0.1) of an attested run, so that a
generic in-toto verifier reads pass or fail without knowing releasegate's predicate.

`attest` writes it as a second attestation beside the first, `<run-id>.test-result.intoto.json` (`sibling`): a
DSSE envelope signed by the same key around a Statement v1 with the same subjects, whose predicate is built with
in-toto's own model (`TestResult`): `result` PASSED (FAILED for any other verdict: only a PASS is attested, and
an unknown is never a pass), `passedTests` / `warnedTests` / `failedTests` the criteria by name (a criterion
with too little evidence is warned), and `configuration` the releasegate statement it stands for (the sha256 of
that signed payload) and the effective rubric. `verify-attestation` checks that it agrees with releasegate's
predicate (`disagreement`). Both statements are checked against in-toto's Statement model
(`in_toto_problem`). The releasegate statement itself is written as JSON rather than through that model: its
protobuf Struct would turn every integer of the predicate (a count, n) into a float."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from in_toto_attestation.predicates.test_result.v0.test_result_pb2 import TestResult
from in_toto_attestation.v1.resource_descriptor import ResourceDescriptor
from in_toto_attestation.v1.statement import Statement
from in_toto_attestation.v1.statement_pb2 import Statement as StatementMessage
from pydantic import ConfigDict

from ..model_base import Model
from ..record.signed_statement import (
    SignedCriterion,
    SignedRubric,
    SignedRun,
    StatementHead,
    TestResultPredicate,
    criteria_of,
)

__all__ = ["TEST_RESULT_TYPE", "sibling", "make_test_result", "disagreement", "in_toto_problem"]

TEST_RESULT_TYPE = "https://in-toto.io/attestation/test-result/v0.1"
STATEMENT_MEDIA_TYPE = "application/vnd.in-toto+json"
_SHA256 = re.compile(r"[0-9a-f]{64}")


def sibling(attestation: Path) -> Path:
    """Where the test-result attestation of `attestation` goes: `X.intoto.json` -> `X.test-result.intoto.json`
    (any other name: the name + `.test-result.intoto.json`)."""
    name = Path(attestation).name
    stem = name[: -len(".intoto.json")] if name.endswith(".intoto.json") else name
    return Path(attestation).with_name(f"{stem}.test-result.intoto.json")


def make_test_result(statement: dict[str, Any], payload: bytes) -> dict[str, Any]:
    """The test-result statement standing for the releasegate `statement`, signed as `payload`."""
    head = StatementHead.model_validate(statement)
    return {"_type": head.type, "subject": head.subject, "predicateType": TEST_RESULT_TYPE,
            "predicate": _predicate(head, payload)}


def _predicate(statement: StatementHead, payload: bytes) -> dict[str, Any]:
    predicate = _Gate.model_validate(statement.predicate) if isinstance(statement.predicate, dict) else _Gate()
    passed: list[str] = []
    warned: list[str] = []
    failed: list[str] = []
    lists = {"pass": passed, "insufficient": warned}  # where a criterion's verdict puts its name; else failed
    for c in criteria_of(predicate.criteria):
        c = c if c is not None else SignedCriterion()
        verdict = c.verdict if isinstance(c.verdict, str) else ""
        lists.get(verdict, failed).append(str(c.name or c.metric)[:200])
    run_id = _run_of(predicate.run).run_id
    annotations = {"predicateType": str(statement.predicate_type),
                   **({"run_id": run_id[:200]} if isinstance(run_id, str) else {})}
    configuration = [ResourceDescriptor(name="releasegate gate verdict", media_type=STATEMENT_MEDIA_TYPE,
                                        digest={"sha256": hashlib.sha256(payload).hexdigest()}, annotations=annotations).pb]
    effective = _rubric_of(predicate.rubric).effective_sha256
    if isinstance(effective, str) and _SHA256.fullmatch(effective):
        configuration.append(ResourceDescriptor(name="effective rubric", digest={"sha256": effective}).pb)
    result = TestResult(result="PASSED" if predicate.verdict == "PASS" else "FAILED",
                        configuration=configuration, passed_tests=passed,
                        warned_tests=warned, failed_tests=failed)
    made: dict[str, Any] = json_format.MessageToDict(result)
    return made


class _Gate(Model):
    """The parts of the gate verdict's predicate the test result is made of, each of any type."""

    model_config = ConfigDict(extra="allow")
    verdict: object = None
    criteria: object = None
    run: object = None
    rubric: object = None


def _run_of(raw: object) -> SignedRun:
    return SignedRun.model_validate(raw) if isinstance(raw, dict) else SignedRun()


def _rubric_of(raw: object) -> SignedRubric:
    return SignedRubric.model_validate(raw) if isinstance(raw, dict) else SignedRubric()


def disagreement(test_result: dict[str, Any], statement: dict[str, Any], payload: bytes) -> str | None:
    """Why the signed test-result statement does not agree with the releasegate `statement` signed as `payload`
    (None: it agrees): another predicate type, other subjects, or a result, test list or configuration other
    than the one that statement gives."""
    head, gate = StatementHead.model_validate(test_result), StatementHead.model_validate(statement)
    if head.type != gate.type or head.predicate_type != TEST_RESULT_TYPE:
        return f"not an in-toto Statement v1 of predicate type {TEST_RESULT_TYPE}"
    problem = in_toto_problem(test_result)
    if problem:
        return problem
    if _subjects(head.subject) != _subjects(gate.subject):
        return "its subjects are not the releasegate statement's"
    made = _predicate(gate, payload)
    if not isinstance(head.predicate, dict):
        return "its predicate is not a test result"
    signed, expected = TestResultPredicate.model_validate(head.predicate), TestResultPredicate.model_validate(made)
    if signed.result != expected.result:
        return (f"result {str(signed.result)[:40]} where releasegate's verdict gives {expected.result}")
    for key, mine, theirs in (("passedTests", signed.passed_tests, expected.passed_tests),
                              ("warnedTests", signed.warned_tests, expected.warned_tests),
                              ("failedTests", signed.failed_tests, expected.failed_tests),
                              ("configuration", signed.configuration, expected.configuration)):
        if mine != theirs:
            what = "the releasegate statement it names" if key == "configuration" else "the attested criteria"
            return f"its {key} is not what {what} gives: it stands for another run or statement"
    unknown = sorted(set(head.predicate) - set(made) - {"url"})
    return f"it carries {unknown[0][:40]}, which releasegate does not write" if unknown else None


class _Named(Model):
    """A subject as the two statements are compared by: its name and its digest, of any type."""

    model_config = ConfigDict(extra="allow")
    name: object = None
    digest: object = None


class _Digest(Model):
    model_config = ConfigDict(extra="allow")
    sha256: object = None


def _subjects(subjects: object) -> list[tuple[str, str]]:
    if not isinstance(subjects, list):
        return []
    named = [_Named.model_validate(s) for s in subjects if isinstance(s, dict)]
    return sorted((str(s.name), str(_Digest.model_validate(s.digest or {}).sha256)) for s in named)


def in_toto_problem(statement: dict[str, object]) -> str | None:
    """Why `statement` is not an in-toto Statement v1 as in-toto's own model reads and validates it (None: it
    is one)."""
    try:
        message = json_format.ParseDict(statement, StatementMessage())
        Statement.copy_from_pb(message).validate()
    except (json_format.ParseError, ValueError, TypeError, RecursionError, OverflowError) as exc:
        return f"in-toto's Statement model refuses it ({str(exc)[:120]})"
    return None
