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

__all__ = ["TEST_RESULT_TYPE", "sibling", "make_test_result", "disagreement", "in_toto_problem"]

TEST_RESULT_TYPE = "https://in-toto.io/attestation/test-result/v0.1"
STATEMENT_MEDIA_TYPE = "application/vnd.in-toto+json"
_SHA256 = re.compile(r"[0-9a-f]{64}")
_LISTS = {"pass": "passedTests", "insufficient": "warnedTests"}
"""Where a criterion's verdict puts its name; any other verdict is a failed test."""


def sibling(attestation: Path) -> Path:
    """Where the test-result attestation of `attestation` goes: `X.intoto.json` -> `X.test-result.intoto.json`
    (any other name: the name + `.test-result.intoto.json`)."""
    name = Path(attestation).name
    stem = name[: -len(".intoto.json")] if name.endswith(".intoto.json") else name
    return Path(attestation).with_name(f"{stem}.test-result.intoto.json")


def make_test_result(statement: dict[str, Any], payload: bytes) -> dict[str, Any]:
    """The test-result statement standing for the releasegate `statement`, signed as `payload`."""
    return {"_type": statement["_type"], "subject": statement["subject"], "predicateType": TEST_RESULT_TYPE,
            "predicate": _predicate(statement, payload)}


def _predicate(statement: dict[str, Any], payload: bytes) -> dict[str, Any]:
    predicate = statement.get("predicate") or {}
    tests: dict[str, list[str]] = {"passedTests": [], "warnedTests": [], "failedTests": []}
    for c in predicate.get("criteria") or []:
        c = c if isinstance(c, dict) else {}
        verdict = c.get("verdict") if isinstance(c.get("verdict"), str) else None
        tests[_LISTS.get(verdict or "", "failedTests")].append(str(c.get("name") or c.get("metric"))[:200])
    run: dict[str, object] = predicate["run"] if isinstance(predicate.get("run"), dict) else {}
    annotations = {"predicateType": str(statement.get("predicateType"))}
    run_id = run.get("run_id")
    if isinstance(run_id, str):
        annotations["run_id"] = run_id[:200]
    configuration = [ResourceDescriptor(name="releasegate gate verdict", media_type=STATEMENT_MEDIA_TYPE,
                                        digest={"sha256": hashlib.sha256(payload).hexdigest()}, annotations=annotations).pb]
    rubric: dict[str, object] = predicate["rubric"] if isinstance(predicate.get("rubric"), dict) else {}
    effective = rubric.get("effective_sha256")
    if isinstance(effective, str) and _SHA256.fullmatch(effective):
        configuration.append(ResourceDescriptor(name="effective rubric", digest={"sha256": effective}).pb)
    result = TestResult(result="PASSED" if predicate.get("verdict") == "PASS" else "FAILED",
                        configuration=configuration, passed_tests=tests["passedTests"],
                        warned_tests=tests["warnedTests"], failed_tests=tests["failedTests"])
    made: dict[str, Any] = json_format.MessageToDict(result)
    return made


def disagreement(test_result: dict[str, Any], statement: dict[str, Any], payload: bytes) -> str | None:
    """Why the signed test-result statement does not agree with the releasegate `statement` signed as `payload`
    (None: it agrees): another predicate type, other subjects, or a result, test list or configuration other
    than the one that statement gives."""
    if test_result.get("_type") != statement.get("_type") or test_result.get("predicateType") != TEST_RESULT_TYPE:
        return f"not an in-toto Statement v1 of predicate type {TEST_RESULT_TYPE}"
    problem = in_toto_problem(test_result)
    if problem:
        return problem
    if _subjects(test_result) != _subjects(statement):
        return "its subjects are not the releasegate statement's"
    signed, expected = test_result.get("predicate"), _predicate(statement, payload)
    if not isinstance(signed, dict):
        return "its predicate is not a test result"
    if signed.get("result") != expected["result"]:
        return (f"result {str(signed.get('result'))[:40]} where releasegate's verdict gives {expected['result']}")
    for key in ("passedTests", "warnedTests", "failedTests", "configuration"):
        if signed.get(key, []) != expected.get(key, []):
            what = "the releasegate statement it names" if key == "configuration" else "the attested criteria"
            return f"its {key} is not what {what} gives: it stands for another run or statement"
    unknown = sorted(set(signed) - set(expected) - {"url"})
    return f"it carries {unknown[0][:40]}, which releasegate does not write" if unknown else None


def _subjects(statement: dict[str, object]) -> list[tuple[str, str]]:
    subjects = statement.get("subject")
    return sorted((str(s.get("name")), str((s.get("digest") or {}).get("sha256"))) for s in subjects
                  if isinstance(s, dict)) if isinstance(subjects, list) else []


def in_toto_problem(statement: dict[str, object]) -> str | None:
    """Why `statement` is not an in-toto Statement v1 as in-toto's own model reads and validates it (None: it
    is one)."""
    try:
        message = json_format.ParseDict(statement, StatementMessage())
        Statement.copy_from_pb(message).validate()
    except (json_format.ParseError, ValueError, TypeError, RecursionError, OverflowError) as exc:
        return f"in-toto's Statement model refuses it ({str(exc)[:120]})"
    return None
