"""A rubric's `baseline: {blessed: NAME}`: whether the blessed run still is what was blessed, and whether it is
stale for this run (too old, other package versions, a suite changed since); what staleness does is decided by
`decision.release.decide_baseline_age`, as the rubric's `on_stale` says."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict

from ..border.files import is_file, sha256_file
from ..border.structured import stored_json
from ..data_classes import dataclass
from ..decision.release import decide_baseline_age, decide_blessed_run
from ..errors import ReleasegateError
from ..model_base import Model
from ..record.blessings import Blessing, blessings, evidence_digest, signer_of
from ..record.decision_evidence import BaselineAgeEvidence, BlessedRunEvidence
from ..record.records import RunDir, RunInfo
from ..record.sealed import seal_of
from ..record.stored_manifest import read_manifest_file
from .baseline_spec import baseline_spec

__all__ = ["BlessedStanding", "blessed_standing", "suite_key", "repository_root"]

_CLOCK_SKEW_DAYS = 1 / 24
"""How far the baseline run may seem to come after this run (clocks of two machines) before its age is unknown."""


class _StoredVerdict(Model):
    """The verdict a blessed run's report.json says (None: it says none a gate writes)."""

    model_config = ConfigDict(extra="allow")

    verdict: Annotated[str | None, BeforeValidator(lambda v: v if isinstance(v, str) else None)] = None


@dataclass(frozen=True)
class BlessedStanding:
    problems: tuple[str, ...]
    """Why the blessed baseline proves nothing (its criteria undecided)."""
    warnings: tuple[str, ...]
    """Why it is stale, when the rubric only warns."""
    blessing: dict[str, Any] | None = None
    """Which blessing the comparison is with, for every report to name: {name, run, by, blessed_at, reason}."""


def blessed_standing(spec: dict[str, Any], info: RunInfo | None) -> BlessedStanding:
    given = baseline_spec(spec)
    assert given.blessed is not None, "blessed_standing is for a blessed baseline"
    name, run, reports = given.blessed, Path(given.run), Path(given.reports)
    try:
        found = [b for b in blessings(reports) if b.name == name and b.run == run.name]
        manifest = read_manifest_file(run, whole=False) or {}
    except ReleasegateError as exc:
        return BlessedStanding((f"baseline {name}: {exc}",), ())
    if not found:
        return BlessedStanding((f"{run.name} was never blessed as {name} in {given.reports}",), ())
    signers = given.signers()
    signed = [(b, who) for b in found if signers and (who := signer_of(b, signers)) is not None]
    blessing, signer = signed[-1] if signed else (found[-1], None)
    named = {"name": name, "run": blessing.run, "by": blessing.by, "blessed_at": blessing.blessed_at,
             "reason": blessing.reason[:2000],  # as `bless --reason` bounds it: a hand-edited line may be longer
             **({"signer": signer} if signer is not None else {})}
    verdict = _sealed_verdict(run)
    problem = decide_blessed_run(BlessedRunEvidence(
        name=name, run=run.name, evidence_matches=evidence_digest(manifest) == blessing.evidence_sha256,
        run_verdict=verdict, signed_by=tuple(who for who, _ in signers), signer=signer))
    if problem:
        return BlessedStanding((problem,), (), named)
    stale = decide_baseline_age(BaselineAgeEvidence(
        name=name, age_days=_age_days(blessing, run, info), max_age_days=given.max_age_days,
        packages_changed=_packages_changed(blessing, run, info), suites_changed=_suites_changed(blessing, reports),
        on_stale=given.on_stale))
    if stale.inconclusive:
        return BlessedStanding(stale.reasons, (), named)
    return BlessedStanding((), stale.reasons, named)


def _sealed_verdict(run: Path) -> str | None:
    """The verdict of the run's report.json when its seal vouches for it; None otherwise (`bless` takes only a
    sealed run, so a report.json edited since, say to PASS, is no blessed run's verdict)."""
    try:
        if seal_of(run, "report.json", sha256_file(run / "report.json", what="report.json")) != "matches":
            return None
        report = stored_json(run / "report.json", what="report.json")
    except ReleasegateError:
        return None
    return _StoredVerdict.model_validate(report).verdict if isinstance(report, dict) else None


def _age_days(blessing: Blessing, run: Path, info: RunInfo | None) -> float | None:
    """Days from the baseline run to this run (or now): from the earlier of the blessing's record of when the run
    was made and the run's own sealed run.json, so neither, edited alone, makes an old baseline look fresh. None
    (unknown, so stale under `max_age_days`) when unreadable, or when the baseline would come after this run."""
    try:
        made = [datetime.fromisoformat(blessing.run_created_at)]
        made += [datetime.fromisoformat(RunDir(run).read_info().created_at)]
        then = min(made)
        at = datetime.fromisoformat(info.created_at) if info is not None else datetime.now(then.tzinfo)
        age = (at - then).total_seconds() / 86400
    except (ValueError, TypeError, ReleasegateError):
        return None
    return age if age >= -_CLOCK_SKEW_DAYS else None


def _packages_changed(blessing: Blessing, run: Path, info: RunInfo | None) -> tuple[str, ...]:
    """Packages whose version differs from this run's, as the blessing recorded them or as the baseline run's own
    sealed run.json does: a blessing line edited to today's versions does not hide a change."""
    now = (info.versions if info is not None else None) or {}
    try:
        own = RunDir(run).read_info().versions
    except ReleasegateError:
        own = {}
    changed = {f"{k} {then[k]} -> {now[k]}" for then in (blessing.packages, own)
               for k in set(then) & set(now) if str(now[k]) != str(then[k])}
    return tuple(sorted(changed))


def _suites_changed(blessing: Blessing, reports: Path) -> tuple[str, ...]:
    """Suites whose content differs from the blessing's: a repository-relative key is found under this
    checkout's repository (that of the reports folder, else of the working directory, else the reports folder's
    parent); an absolute one (a blessing from before) at its path."""
    changed = []
    for key, sha in sorted(blessing.suites.items()):
        paths = [Path(key)] if Path(key).is_absolute() else [root / key for root in _roots(reports)]
        now = next((h for p in paths if (h := _hash(p)) is not None), None)
        if now != sha:
            changed.append(f"{Path(key).name} ({'gone' if now is None else 'changed'})")
    return tuple(changed)


def _hash(path: Path) -> str | None:
    try:
        return sha256_file(path, what="suite") if is_file(path) else None
    except ReleasegateError:
        return None


def repository_root(path: Path) -> Path | None:
    """The nearest folder at or above `path` holding `.git` (a checkout, a worktree or a submodule)."""
    for folder in [path, *path.parents]:
        if (folder / ".git").exists():
            return folder
    return None


def _roots(reports: Path) -> list[Path]:
    here = reports.resolve()
    found = [repository_root(here), repository_root(Path.cwd().resolve()), here.parent]
    return list(dict.fromkeys(r for r in found if r is not None))


def suite_key(path: str, reports: Path) -> str:
    """How a blessing names a suite file: its path relative to its repository (else to the reports folder's
    parent), so a checkout elsewhere finds it; a path outside both, or not a file path (a hub dataset), as is."""
    file = Path(path)
    if not file.is_absolute():
        return path
    for root in (repository_root(file.parent), reports.resolve().parent):
        if root is not None and file.is_relative_to(root):
            return file.relative_to(root).as_posix()
    return path
