"""A signed attestation of a PASS (`releasegate attest`), and its check at deploy (`releasegate
verify-attestation`).

The attestation is an in-toto Statement v1 in a DSSE envelope signed with Ed25519 (`dsse`). Its subjects are the
sha256 digests of every file that ships, as the run's manifest hashed them (base or merged model, adapter, GGUF,
draft, tokenizer and chat template files); its predicate (`PREDICATE_TYPE`) is the verdict, the rubric's hash, every
criterion with its value and bound, the review's provenance and the run's seal. Only a run that may be released
(`release_check`: sealed, verified unchanged, PASS) is attested. The check at deploy accepts only a good signature
by the given key, a PASS, and artifacts that are subjects byte for byte (`decision.release.decide_attestation`).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..border.dsse import MAX_KEYS, load_private_key, load_public_key, sign_envelope, verified_by
from ..border.files import hash_once, is_dir, is_file, read_capped, sha256_file
from ..border.model_digest import model_files, root_digest
from ..border.outputs import check_output_path, write_output_file
from ..border.structured import json_loads
from ..clock import now
from ..decision.release import decide_attestation
from ..errors import InputError, ReleaseRefused
from ..record.decision_evidence import AttestationEvidence
from ..record.gate_report import GateReport, as_report
from ..record.records import RunDir
from ..record.signed_statement import (
    Predicate,
    SignedOverride,
    SignedRubric,
    SignedRun,
    Statement,
    StatementHead,
    criteria_of,
    subjects_of,
    weights_of,
)
from ..record.stored_manifest import InputEntry, ManifestFiles, Seal, typed_inputs, typed_parts
from .attest_test_result import disagreement, in_toto_problem, make_test_result, sibling
from .release_check import releasable_run
from .rubric_binding import RubricBinding, binding_of

__all__ = ["STATEMENT_TYPE", "PREDICATE_TYPE", "SHIPPED_ROLES", "statement_for", "attest_run", "verify_attestation",
           "signed_statements"]

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://releasegate.invalid/attestation/gate-verdict/v1"
SHIPPED_ROLES = ("model", "adapter", "merged", "gguf", "draft", "tokenizer", "served")
"""Manifest roles (before ':') whose files ship with the model, and so are the statement's subjects."""
EMBEDDED_TEMPLATE = "#chat_template"
"""The manifest path suffix of a chat template kept inside tokenizer_config.json (hashed on its own, no file)."""
MAX_ATTESTATION_BYTES = 16 * 1024 * 1024
MAX_SUBJECTS = 100_000
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _subjects(manifest: ManifestFiles) -> list[dict[str, Any]]:
    return [{"name": e.shown_name, "digest": {"sha256": e.sha256}} for e in manifest.inputs
            if e.owner in SHIPPED_ROLES and e.sha256 is not None and not e.path.endswith(EMBEDDED_TEMPLATE)]
    # a chat template kept inside tokenizer_config.json is covered by that file's digest


def _carries_weights(entry: InputEntry) -> bool:
    """A manifest input that is model weights which ship (a tokenizer or a config alone binds no model)."""
    return entry.owner in SHIPPED_ROLES and (entry.role.endswith(":weights") or entry.role == "gguf") and \
        entry.sha256 is not None


def _weights(manifest: ManifestFiles) -> list[dict[str, Any]]:
    """Every weights file the run loaded (base, adapter or merged, GGUF, draft), as a subject is named: a deploy
    must give each of them (`verify_attestation`)."""
    return [{"name": e.shown_name, "sha256": e.sha256} for e in manifest.inputs if _carries_weights(e)]


def _served(manifest: ManifestFiles) -> dict[str, Any] | None:
    """How the files a server loaded were known: 'observed' (releasegate's launcher handed them to the server it
    started and hashed them) or 'declared' (`target.served_files`, a server started elsewhere), with their
    subject names; None when the run names none."""
    entries = [e for e in manifest.inputs if e.owner == "served" and e.sha256 is not None]
    if not entries:
        return None
    how = sorted({e.served or "declared" for e in entries})
    return {"as": how[0] if len(how) == 1 else "mixed", "files": [e.shown_name for e in entries]}


def statement_for(run_path: Path, report: GateReport | dict[str, Any], manifest: dict[str, Any],
                  binding: RubricBinding | None = None) -> dict[str, Any]:
    """The in-toto statement of a run: its shipped files as subjects, its gate as the predicate, with the rubric
    that judged it (`rubric_binding`: its effective hash, the rubric file's, every override)."""
    info = RunDir(run_path).read_info()
    binding = binding if binding is not None else binding_of(Path(run_path), manifest)
    typed = as_report(report, source=run_path / "report.json")
    stored = typed_parts(manifest, run_path / "manifest.json")
    review = {name: {k: row.model_dump(mode="json").get(k) for k in ("required", "status", "reviewed", "approved",
                                                                     "rejected", "approval")}
              for name, row in typed.review_rows.items()}
    criteria = [c.model_dump(mode="json", exclude_unset=True) for c in typed.criteria]
    obligations = typed.obligations.model_dump(mode="json", exclude_unset=True) if typed.obligations else None
    directories = _directory_subjects(stored)
    predicate = {
        "verdict": typed.verdict, "verdict_reason": typed.verdict_reason,
        "run": {"run_id": info.run_id, "created_at": info.created_at, "finished_at": info.finished_at,
                "target": info.target, "backend": info.backend, "target_fingerprint": stored.target.fingerprint if stored.target else None},
        "rubric": {"name": typed.rubric, "sha256": typed.judged_by.snapshot_sha256 if typed.judged_by else None,
                   **binding.as_record()},
        "weights": _weights(stored),
        "served_files": _served(stored),
        "criteria": [{k: c[k] for k in ("name", "metric", "op", "threshold", "value", "bounds", "confidence", "n",
                                        "verdict", "origin") if k in c} for c in criteria],
        "review": {"obligations": obligations, "slices": review, "labels_sha256": _labels_sha256(stored.sealed)},
        "seal": _seal_facts(stored.sealed),
        "packages": stored.packages, "attested_at": now(),
        "directories": [{"name": name, "sha256": digest} for name, digest in directories],
    }
    subjects = _subjects(stored) + [{"name": name, "digest": {"sha256": digest}} for name, digest in directories]
    return {"_type": STATEMENT_TYPE, "subject": subjects, "predicateType": PREDICATE_TYPE,
            "predicate": predicate}


def _labels_sha256(sealed: Seal | None) -> str | None:
    """The sha256 the seal gives the review labels (reviews.jsonl), if it names them."""
    labels = sealed.files.get("reviews.jsonl") if sealed is not None else None
    return labels.sha256 if labels is not None else None


def _seal_facts(sealed: Seal | None) -> dict[str, Any]:
    """The run's seal as the statement carries it: its files as the manifest holds them, when and by whom."""
    if sealed is None:
        return {"files": None, "at": None, "by": None, "complete": None}
    return {"files": {name: f.model_dump(mode="json", exclude_unset=True) for name, f in sealed.files.items()},
            "at": sealed.at, "by": sealed.by, "complete": sealed.complete}


def _directory_subjects(manifest: ManifestFiles) -> list[tuple[str, str]]:
    """Each shipped model directory (base, adapter, merged, draft) as one more subject, `<role>/`, whose digest is
    the one OpenSSF model-signing computes for it (`border.model_digest`), so `model_signing verify` at deploy
    and `verify-attestation` agree on the bytes. Its files are hashed now: one the run hashed that differs (or
    is gone), or a directory whose digest is not the one the run recorded (a file added since), is refused, as a
    model changed since the run."""
    out = []
    for entry in manifest.directories:
        owner = entry.role
        if owner not in SHIPPED_ROLES or not is_dir(Path(entry.path)):
            continue
        files = model_files(Path(entry.path), allow_symlinks=True)  # a hub snapshot links to its blobs
        for e in manifest.inputs:
            name = e.name or ""
            if name.startswith(f"{owner}/") and not name.endswith(EMBEDDED_TEMPLATE) and e.sha256 is not None \
                    and files.get(name[len(owner) + 1:]) != e.sha256:
                raise ReleaseRefused(f"{name} changed since the run hashed it: attest a run of the model as it is")
        digest = root_digest(files)
        if entry.signing_sha256 is not None and entry.signing_sha256 != digest:
            raise ReleaseRefused(f"{owner}/ ({entry.path}) holds other files than when the run read it (a file "
                                 "added, a hidden one included): attest a run of the model as it is")
        out.append((f"{owner}/", digest))
    return out


def attest_run(run_dir: Path, key: Path, output: Path | None, *, force: bool) -> tuple[Path, dict[str, Any]]:
    """Attest a run that may be released; the envelope's path and the statement. ReleaseRefused otherwise."""
    private_key = load_private_key(key)
    with hash_once():  # each model file read once: verified unchanged, then its directory's digest
        run = releasable_run(run_dir)
        statement = statement_for(run.path, run.report, run.manifest, run.binding)
    if not any(_carries_weights(e) for e in typed_inputs(run.manifest, run.path / "manifest.json")):
        raise ReleaseRefused(f"{run.path} hashed no model weights (an endpoint's model is not visible to "
                             "releasegate): an attestation would not bind the model that answered; list the "
                             "files its server loads in target.served_files and run check again")
    path = output if output is not None else Path(f"{run.path.name}.intoto.json")
    for target in (path, sibling(path)):
        check_output_path(target, force=force)
    for target, envelope in zip((path, sibling(path)), signed_statements(statement, private_key), strict=True):
        write_output_file(target, (json.dumps(envelope, indent=2) + "\n").encode("utf-8"))
    return path, statement


def signed_statements(statement: dict[str, Any], private_key: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The releasegate statement and the in-toto test-result statement standing for it, each in a DSSE envelope
    signed with `private_key`: what `attest` writes as two files and `promote --webhook` sends."""
    payload = json.dumps(statement, sort_keys=True).encode("utf-8")
    test_result = json.dumps(make_test_result(statement, payload), sort_keys=True).encode("utf-8")
    return sign_envelope(payload, private_key), sign_envelope(test_result, private_key)


def verify_attestation(file: Path, public_keys: Path | list[Path], artifacts: list[Path],
                       rubric_sha256: tuple[str, ...] = (), test_result: Path | None = None) -> dict[str, Any]:
    """The attestation checked for a deploy: a signature by one of the keys (several while a key is rotated),
    the statement, a PASS, the test-result attestation beside it (`test_result`, or `attest_test_result.sibling`
    when that file exists) agreeing with it, each artifact a subject, every weights file the run loaded among
    the artifacts, and (`rubric_sha256` given) the effective rubric one of those, with no judging override.
    ReleaseRefused (exit 1) with the one line why, else what was checked and which key verified."""
    required = tuple(_required_rubric(h) for h in rubric_sha256)
    keys = _public_keys(public_keys)
    envelope, unreadable = _envelope(file)
    if unreadable:
        raise ReleaseRefused(f"{file}: not an attestation ({unreadable})")
    signature, payload, keyid = verified_by(envelope, keys)
    signed, statement_problem = _statement(payload) if payload is not None else (None, None)
    agreed, test_result = _test_result(test_result, file, keys, signed, payload)
    statement = Statement.model_validate(signed) if signed is not None else None
    subjects = {(s.name, s.digest.sha256) for s in statement.subject} if statement is not None else set()
    looked = [(str(a), *_artifact_problem(a, subjects)) for a in artifacts] if statement is not None else []
    checked = tuple((path, problem) for path, problem, _ in looked)
    predicate = statement.predicate if statement is not None else Predicate(run=SignedRun(), rubric=SignedRubric())
    verdict, effective = predicate.verdict, predicate.rubric.effective_sha256
    decided = decide_attestation(AttestationEvidence(
        signature, statement_problem, verdict if isinstance(verdict, str) else None, checked,
        tuple(c.verdict if c is not None and isinstance(c.verdict, str) else "?"
              for c in criteria_of(predicate.criteria)),
        weights_not_given=_weights_not_given(predicate.weights,
                                             {d for _, p, found in looked if p is None for d in found}),
        required_rubrics=required, rubric_sha256=effective if isinstance(effective, str) else None,
        judging_overrides=_judging_overrides(predicate.rubric.overrides), test_result_problem=agreed))
    if not decided.allowed:
        raise ReleaseRefused(f"{file}: {decided.reason}")
    assert statement is not None  # a good signature over a statement
    # what a signed statement says of its run is shown as it is: a key missing is shown as null, never a crash
    return {"attestation": str(file), "reason": decided.reason, "run_id": predicate.run.run_id,
            "key_id": keyid, "test_result": None if test_result is None else str(test_result),
            "rubric_sha256": predicate.rubric.sha256,
            "effective_rubric_sha256": predicate.rubric.effective_sha256, "verdict": verdict,
            "artifacts": [{"path": p, "sha256_matches": True} for p, _ in checked],
            "served_files": predicate.served_files,
            "subjects": len(statement.subject)}


def _public_keys(paths: Path | list[Path]) -> list[Any]:
    """The public keys a deploy trusts (each file read, an InputError naming one that cannot be)."""
    paths = [paths] if isinstance(paths, Path) else list(paths)
    if not paths or len(paths) > MAX_KEYS:
        raise InputError(f"give 1 to {MAX_KEYS} public keys", field="--key")
    return [load_public_key(p) for p in paths]


def _envelope(file: Path) -> tuple[object, str | None]:
    """The envelope in `file` (read within MAX_ATTESTATION_BYTES), or why it is not JSON."""
    try:
        return json_loads(read_capped(file, what="attestation", max_bytes=MAX_ATTESTATION_BYTES),
                          unique_keys=True), None
    except (ValueError, RecursionError) as exc:
        return None, str(exc)[:120]


def _test_result(given: Path | None, file: Path, keys: list[Any], statement: dict[str, Any] | None,
                 payload: bytes | None) -> tuple[str | None, Path | None]:
    """Why the test-result attestation does not agree with the releasegate statement (None: it agrees, or there
    is none to check), and the file checked. It is `given`, or the sibling of `file` when that exists."""
    path = given if given is not None else sibling(file)
    if statement is None or payload is None or (given is None and not is_file(path)):
        return None, None
    envelope, unreadable = _envelope(path)
    if unreadable:
        return f"{path.name} is not an attestation ({unreadable})", path
    signature, signed, _ = verified_by(envelope, keys)
    if signature or signed is None:
        return f"{path.name}: signature: {signature}", path
    try:
        test_result = json_loads(signed, unique_keys=True)
    except (ValueError, RecursionError) as exc:
        return f"{path.name}: the payload is not JSON ({str(exc)[:80]})", path
    problem = disagreement(test_result, statement, payload) if isinstance(test_result, dict) else \
        "not a statement"
    return (f"{path.name}: {problem}" if problem else None), path


def _statement(payload: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """The signed statement, or why the payload is not a releasegate statement."""
    try:
        statement = json_loads(payload, unique_keys=True)
    except (ValueError, RecursionError) as exc:
        return None, f"the payload is not JSON ({str(exc)[:80]})"
    head = StatementHead.model_validate(statement) if isinstance(statement, dict) else None
    if head is None or head.type != STATEMENT_TYPE:
        return None, f"not an in-toto Statement v1 ({STATEMENT_TYPE})"
    if head.predicate_type != PREDICATE_TYPE:
        return None, f"predicateType is not {PREDICATE_TYPE}"
    subjects = subjects_of(head.subject)
    if subjects is None or not 0 < len(subjects) <= MAX_SUBJECTS:
        return None, "its subjects are not files with sha256 digests"
    try:
        Predicate.model_validate(head.predicate)
    except ValidationError:
        return None, "its predicate is not a releasegate gate verdict"
    problem = in_toto_problem(statement)
    return (None, problem) if problem else (statement, None)


def _required_rubric(text: str) -> str:
    """A `--rubric-sha256` value: 64 hex digits (an InputError, exit 2, otherwise)."""
    value = text.strip().lower()
    if not _SHA256.fullmatch(value):
        raise InputError(f"{text[:80]!r} is not a sha256 (64 hex digits)", field="--rubric-sha256",
                         hint="the effective rubric sha256 that releasegate validate prints for the official config")
    return value


def _weights_not_given(weights: object, given: set[str | None]) -> tuple[str, ...] | None:
    """The attested weights files (`statement_for`'s `weights`) whose bytes no good artifact carries; None when
    the statement does not list them as releasegate writes them."""
    listed = weights_of(weights)
    if not listed:
        return None
    return tuple(w.name for w in listed if w.sha256 not in given)


def _judging_overrides(overrides: object) -> tuple[str, ...]:
    """The attested overrides that judge, one line each; one the statement does not write as releasegate does
    counts as judging."""
    if overrides is None:
        return ()
    if not isinstance(overrides, list):
        return ("overrides it does not list",)
    read = [SignedOverride.model_validate(o) if isinstance(o, dict) else None for o in overrides]
    return tuple(f"{o.key} (set by {o.by})"[:200] if o is not None else "an unreadable override"
                 for o in read if o is None or o.judges is not False)


def _artifact_problem(path: Path, subjects: set[tuple[str, str]]) -> tuple[str | None, frozenset[str]]:
    """Why the artifact is not a file that passed: not a regular file, bytes that are no subject's, or bytes of
    one subject under the file name of another (a tokenizer's bytes shipped as the adapter). A file renamed for
    the deploy, whose name no subject has, is judged by its bytes alone; a model directory, by the digest
    model-signing gives it (`_directory_problem`). With the problem, the sha256 of every file it carries (none:
    not read)."""
    if os.path.islink(path):
        return "is a symbolic link: give the file the deploy ships itself", frozenset()
    if is_dir(path):
        return _directory_problem(path, subjects)
    if not is_file(path):
        return "not a regular file", frozenset()
    try:
        digest = sha256_file(path, what="artifact")
    except InputError as exc:
        return exc.message, frozenset()
    # a file matches file subjects only: a file of a directory's concatenated file digests has its digest
    if digest not in {sha for name, sha in subjects if not name.endswith("/")}:
        return (f"sha256 {digest[:16]}… is no subject of the attestation: not the file that passed the gate",
                frozenset({digest}))
    named = _closest_names(path, subjects)
    if named and digest not in named.values():
        carried = sorted(name for name, sha in subjects if sha == digest)
        return (f"named as subject {sorted(named)[0]} but its bytes are those of {carried[0]}: not the file that "
                "passed the gate under this name"), frozenset({digest})
    return None, frozenset({digest})


def _directory_problem(path: Path, subjects: set[tuple[str, str]]) -> tuple[str | None, frozenset[str]]:
    """A model directory given whole: its model-signing digest must be a directory subject's (`<role>/`), and
    then it carries every file in it."""
    try:
        files = model_files(path, allow_symlinks=True)
    except InputError as exc:
        return exc.message, frozenset()
    digest = root_digest(files)
    if digest not in {sha for name, sha in subjects if name.endswith("/")}:
        return (f"a directory whose model-signing digest {digest[:16]}… is no subject of the attestation: not the "
                "model directory that passed the gate"), frozenset()
    return None, frozenset(files.values())


def _closest_names(path: Path, subjects: set[tuple[str, str]]) -> dict[str, str]:
    """The subjects whose names end the artifact's path most closely (most trailing folder and file names in
    common; at least the file name), each with its digest: `/srv/draft/model.safetensors` is the draft's
    `draft/model.safetensors` rather than the base model's `model/model.safetensors`."""
    parts = Path(os.path.abspath(path)).parts

    def common(name: str) -> int:
        tail = name.replace("\\", "/").split("/")
        return next((i for i, (a, b) in enumerate(zip(reversed(parts), reversed(tail), strict=False)) if a != b),
                    min(len(parts), len(tail)))

    best = max((common(name) for name, _ in subjects), default=0)
    return {name: sha for name, sha in subjects if best and common(name) == best}
