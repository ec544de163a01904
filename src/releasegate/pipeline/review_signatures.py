"""Who may label: a rubric that names its reviewers (`review.reviewers`, each with an Ed25519 public key) counts a
labels file only when one of them signed it, and never when the signer, or a reviewer named in it, is the author
of the change under review.

A signature is a DSSE envelope of the labels file's bytes (`releasegate review sign FILE --key KEY` writes
`FILE.sig`), signed over DSSE's pre-authentication encoding with its own payload type, so a labels signature can
never be read as a release attestation or the reverse. `review import` checks it, stamps each label with the
signer and the file's sha256, and keeps the envelope in the run (`review_signatures/<sha256>.json`); every gate
checks it again (`counted_labels`), so a label written into reviews.jsonl by hand, or stamped with a signer it
does not have, never counts. The author of the change is what CI says it is: `RELEASEGATE_CHANGE_AUTHOR` (the
shipped workflows set it from the pull request's author)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..border.dsse import key_id, load_private_key, public_key_from_pem, sign_envelope, verified_by
from ..border.env import env_text
from ..border.files import read_capped, replace_file
from ..border.structured import json_loads
from ..data_classes import dataclass
from ..errors import InputError
from ..inputs.review_policy import ReviewPolicy
from ..inputs.rubric import load_rubric
from ..record.records import RunDir
from ..record.review_labels import LabelEdit, parse_forbidden, parse_label, reviewer_key
from ..review.sampler import review_id
from ..spreadsheet import unneutralise

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

__all__ = ["LABELS_TYPE", "AUTHOR_ENV", "SIGNATURES_DIR", "sign_labels", "signed_vetting", "import_vetting",
           "counted_labels", "change_author"]

LABELS_TYPE = "application/vnd.releasegate.review-labels+csv"
AUTHOR_ENV = "RELEASEGATE_CHANGE_AUTHOR"
SIGNATURES_DIR = "review_signatures"
MAX_LABELS_BYTES = 64 * 1024 * 1024
MAX_ENVELOPE_BYTES = 96 * 1024 * 1024  # the labels file, base64


@dataclass(frozen=True)
class Signer:
    name: str
    key: Ed25519PublicKey


def change_author() -> str | None:
    """The author of the change under review, as CI says (`RELEASEGATE_CHANGE_AUTHOR`); None outside CI."""
    return env_text(AUTHOR_ENV)  # a control character in it is refused in one line


def sign_labels(file: Path, key: Path, output: Path | None = None) -> Path:
    """Write the DSSE envelope of the labels file `file` signed with the private key `key` (default FILE.sig)."""
    private = load_private_key(key)
    payload = read_capped(file, what="labels file", max_bytes=MAX_LABELS_BYTES)
    envelope = sign_envelope(payload, private, LABELS_TYPE)
    target = output if output is not None else Path(f"{file}.sig")
    replace_file(target, json.dumps(envelope).encode("utf-8"), what="labels signature")
    return target


def _reviewers(policy: ReviewPolicy, where: str) -> list[Signer]:
    out = []
    for i, (name, pem) in enumerate(policy.reviewers):
        key = public_key_from_pem(pem)
        if key is None:
            raise InputError(f"review.reviewers[{i}].key ({name}) is not an Ed25519 public key in PEM",
                             file=Path(where), hint="releasegate attest --generate-key FILE writes one: FILE.pub")
        out.append(Signer(name, key))
    return out


def _signer(envelope: object, reviewers: list[Signer]) -> tuple[Signer | None, bytes | None, str]:
    """The named reviewer whose signature over the envelope's payload verifies (`dsse.verified_by`, under the
    labels' own payload type), the payload, and why not."""
    if not reviewers:
        return None, None, "signed by no reviewer the rubric names (review.reviewers)"
    problem, payload, verified = verified_by(envelope, [r.key for r in reviewers], LABELS_TYPE, "signed labels")
    if problem is not None:
        return None, None, f"signed by no reviewer the rubric names (review.reviewers): {problem}"
    return next(r for r in reviewers if key_id(r.key) == verified), payload, ""


def _read_envelope(path: Path) -> object:
    try:
        return json_loads(read_capped(path, what="labels signature", max_bytes=MAX_ENVELOPE_BYTES), unique_keys=True)
    except (ValueError, RecursionError):
        return None


def signed_vetting(run_dir: Path, file: Path, signature: Path | None, policy: ReviewPolicy, where: str
                   ) -> Callable[[list[LabelEdit]], list[LabelEdit]] | None:
    """For `review import` under a rubric naming its reviewers: check the file's signature now (InputError, exit
    2, and nothing stored, when it is missing, another file's, or no named reviewer's, or the signer is the
    author of the change) and return what stamps the imported labels and keeps the envelope; None: no reviewers
    named, any labels file counts."""
    if not policy.reviewers:
        return None
    sig = signature if signature is not None else Path(f"{file}.sig")
    how = f"sign it: releasegate review sign {file} --key YOUR_KEY (a reviewer the rubric names)"
    if not sig.is_file():
        raise InputError(f"the rubric names its reviewers (review.reviewers): {file.name} is not signed (no {sig})",
                         file=file, hint=how)
    envelope = _read_envelope(sig)
    signer, payload, why = _signer(envelope, _reviewers(policy, where))
    data = read_capped(file, what="labels file", max_bytes=MAX_LABELS_BYTES)
    if signer is None or payload != data:
        raise InputError(why or "the signature is over other bytes than this labels file", file=sig, hint=how)
    _refuse_author(signer.name, [], sig)
    digest = hashlib.sha256(data).hexdigest()

    def vet(edits: list[LabelEdit]) -> list[LabelEdit]:
        _refuse_author(signer.name, [e.reviewer for e in edits], file)
        keep = RunDir(run_dir).path / SIGNATURES_DIR / f"{digest}.json"
        keep.parent.mkdir(exist_ok=True)
        replace_file(keep, json.dumps(envelope).encode("utf-8"), what="labels signature")
        return [e.model_copy(update={"signed_by": signer.name, "labels_sha256": digest}) for e in edits]
    return vet


def import_vetting(run_dir: Path, file: Path, signature: Path | None, rubric: Path | None
                   ) -> Callable[[list[LabelEdit]], list[LabelEdit]] | None:
    """`signed_vetting` under the reviewers of the run's own rubric (the one every gate of the run counts labels
    by), else those of `rubric` (`review import --rubric`)."""
    own = RunDir(run_dir).path / "rubric.yaml"
    policy = load_rubric(own).review if own.is_file() else ReviewPolicy()
    where = str(own)
    if not policy.reviewers and rubric is not None:
        policy, where = load_rubric(rubric).review, str(rubric)
    return signed_vetting(run_dir, file, signature, policy, where)


def _refuse_author(signer: str, reviewers: list[str], where: Path) -> None:
    author = change_author()
    if author is None:
        return
    named = [n for n in [signer, *reviewers] if reviewer_key(n) == reviewer_key(author)]
    if named:
        raise InputError(f"{named[0]} is the author of the change ({AUTHOR_ENV}) and cannot approve their own run",
                         file=where, hint="another reviewer the rubric names labels and signs it")


def counted_labels(run: RunDir, policy: ReviewPolicy, edits: list[LabelEdit]) -> list[LabelEdit]:
    """The labels that count under `policy`: all of them without named reviewers; else those whose kept
    envelope verifies now with the key of the reviewer they name, holds their row as stored (label, reviewer,
    forbidden, round, a case of this run), and whose signer and reviewer are not the author of the change; one
    per signer and case."""
    if not policy.reviewers:
        return edits
    reviewers = {r.name: r for r in _reviewers(policy, str(run.path / "rubric.yaml"))}
    author = change_author()
    run_id = run.read_info().run_id
    rows: dict[str, dict[str, _SignedRow] | None] = {}
    out = []
    for e in edits:
        if e.signed_by not in reviewers or not e.labels_sha256 or len(e.labels_sha256) != 64:
            continue
        if author and reviewer_key(author) in (reviewer_key(e.signed_by or ""), reviewer_key(e.reviewer)):
            continue
        if e.labels_sha256 not in rows:
            rows[e.labels_sha256] = _signed_rows(run, e.labels_sha256, reviewers[e.signed_by or ""])
        signed = rows[e.labels_sha256]
        if signed is not None and e.review_id in signed and _as_signed(e, signed[e.review_id], run_id):
            out.append(e)
    return _one_per_signer(out)


def _one_per_signer(edits: list[LabelEdit]) -> list[LabelEdit]:
    """A signer's labels of a case count as one reviewer's, the latest, whatever names the rows give: one key
    signing as two reviewers never makes a double review."""
    latest = {(e.case_id, e.adjudication, reviewer_key(e.signed_by or "")): e for e in edits}
    return [e for e in edits if latest[(e.case_id, e.adjudication, reviewer_key(e.signed_by or ""))] is e]


@dataclass(frozen=True)
class _SignedRow:
    label: str | None
    reviewer: str
    forbidden: list[str] | None
    adjudication: bool


def _as_signed(edit: LabelEdit, row: _SignedRow, run_id: str) -> bool:
    """The stored label says what its signed row says: label, reviewer (a blank cell, filled by `--reviewer` at
    import, is no signed name: only the signer's own), forbidden categories, round, and a case of this run."""
    name = row.reviewer or (edit.signed_by or "")
    return (row.label == edit.label and reviewer_key(name) == reviewer_key(edit.reviewer)
            and row.forbidden == edit.forbidden and row.adjudication == edit.adjudication
            and review_id(run_id, edit.case_id) == edit.review_id)


def _signed_rows(run: RunDir, digest: str, reviewer: Signer) -> dict[str, _SignedRow] | None:
    """review_id -> the labelled row of the signed labels file `digest` kept in the run; None unless its envelope
    verifies with `reviewer`'s key over exactly those bytes."""
    path = run.path / SIGNATURES_DIR / f"{digest}.json"
    if not all(c in "0123456789abcdef" for c in digest) or not path.is_file():
        return None
    signer, payload, _ = _signer(_read_envelope(path), [reviewer])
    if signer is None or payload is None or hashlib.sha256(payload).hexdigest() != digest:
        return None
    text = payload.decode("utf-8-sig", errors="replace")
    dialect = ";" if text.split("\n", 1)[0].count(";") > text.split("\n", 1)[0].count(",") else ","
    out = {}
    for row in csv.DictReader(io.StringIO(text), delimiter=dialect):
        cell = {k: unneutralise((row.get(k) or "").strip()) for k in ("review_id", "label", "reviewer", "forbidden",
                                                                      "round")}
        if cell["review_id"] and cell["label"]:
            out[cell["review_id"]] = _SignedRow(parse_label(cell["label"]), " ".join(cell["reviewer"].split()),
                                                parse_forbidden(cell["forbidden"]),
                                                cell["round"].casefold() == "adjudication")
    return out
