"""`releasegate bless RUN_DIR --as NAME --reason TEXT`: a sealed, verified PASS run named as a baseline, in the
reports folder's baselines.jsonl (`record.blessings`); and a blessed name resolved back to its run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..border.dsse import load_private_key, sign_envelope
from ..border.env import env_text
from ..border.files import is_dir
from ..clock import now
from ..errors import InputError
from ..gate.blessed_baseline import blessed_standing, suite_key
from ..record.blessings import (
    BLESSING_TYPE,
    Blessing,
    append_blessing,
    blessed,
    blessing_payload,
    blessings,
    check_name,
    evidence_digest,
)
from ..record.records import RunDir
from ..record.stored_manifest import ManifestShape
from ..text import UNSAFE, valid_text
from .release_check import releasable_run

__all__ = ["bless_run", "baseline_dir"]

MAX_REASON = 2000


def bless_run(run_dir: Path, name: str, reason: str, by: str | None = None, key: Path | None = None
              ) -> tuple[Blessing, Blessing | None]:
    """Bless the run as `name`; the new blessing and the one it replaces (kept in the file), if any. `key`: the
    Ed25519 private key that signs the blessing (a rubric's `baseline.signed_by` counts only signed ones)."""
    check_name(name)
    private = load_private_key(key) if key is not None else None  # a bad key refused before the run is judged
    reason = _one_line(reason, "--reason", "say why")
    by = _one_line(by, "--by", "say who") if by is not None else None
    run = releasable_run(run_dir)
    info = RunDir(run.path).read_info()
    reports = run.path.resolve().parent
    before = [b for b in blessings(reports) if b.name == name]
    manifest = ManifestShape.model_validate(run.manifest)  # verified: of the shape releasegate writes
    suites = {suite_key(e.path, reports): e.sha256 for e in manifest.inputs
              if e.role == "suite" and isinstance(e.sha256, str)}
    blessing = Blessing(
        name=name, run=run.path.resolve().name, run_id=info.run_id, run_created_at=info.created_at, blessed_at=now(),
        by=by or env_text("USER") or env_text("LOGNAME") or "unknown", reason=reason, verdict=run.report.verdict,
        rubric_sha256=run.report.judged_by.snapshot_sha256 if run.report.judged_by else None,
        evidence_sha256=evidence_digest(run.manifest),
        packages={k: str(v) for k, v in manifest.packages.items()}, suites=suites,
        rubric=run.binding.as_record())
    if private is not None:
        blessing = replace(blessing, signature=sign_envelope(blessing_payload(blessing), private, BLESSING_TYPE))
    append_blessing(reports, blessing)
    return blessing, (before[-1] if before else None)


def _one_line(text: str, option: str, what: str) -> str:
    """`text` as one line of plain text: a control character (an escape sequence that would rewrite a CI log or
    a terminal, a newline) or a bidi control is refused, not kept in baselines.jsonl for others to print."""
    text = valid_text(text).strip()
    if not text or len(text) > MAX_REASON or UNSAFE.search(text):
        raise InputError(f"{what} in one line of at most {MAX_REASON} characters, without control characters",
                         field=option)
    return text


def baseline_dir(given: Path, reports: Path | None) -> tuple[Path, tuple[str, ...]]:
    """`given` when it is a directory; else a blessed name looked up in `reports` (default: ./reports), with why
    the run it means proves nothing now (changed since its blessing: a seal rewritten to match edited records
    still changes the evidence digest the blessing kept)."""
    if is_dir(given) or "/" in str(given):
        return given, ()
    folder = reports if reports is not None else Path("reports")
    run = folder / blessed(folder, str(given)).run
    standing = blessed_standing({"blessed": str(given), "run": str(run), "reports": str(folder)}, None)
    return run, standing.problems
