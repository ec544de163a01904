"""A saved run judged again (`releasegate gate`): after a rubric change, new human labels or judge verdicts. The
outputs are never regenerated: their scores are read from the run record where what they were computed from is
unchanged (`scorers.stored`), computed again where it changed.

The run's own reports (report.json, .md, .html, .junit.xml, .csv) are its record: the verdict under the run's
rubric (its sealed snapshot, rubric.yaml). Only that judgment rewrites and re-seals them. Judging by another
rubric (`--rubric FILE` whose policy differs from the snapshot) is a what-if: its reports go beside the record,
into RUN/whatif/<rubric stem>-<first 12 hex of its sha256>/, or into `-o DIR`, and the run's files are left byte
for byte as they were. Every report carries `judged_by` (the rubric file and sha256 that judged it, the
snapshot's sha256, and whether it was a what-if), so no report can pass for another rubric's verdict.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ConfigDict

from ..border.files import sha256_file
from ..border.outputs import check_output_path, write_output_file
from ..data_classes import dataclass
from ..decision.whatif import decide_whatif
from ..errors import InputError
from ..gate.context import GateInputs
from ..gate.health import planned_phases
from ..inputs.judging_keys import snapshot_form
from ..inputs.rubric import Rubric, load_rubric
from ..model_base import Model
from ..record.decision_evidence import WhatIfEvidence
from ..record.gate_report import GateReport, JudgedBy
from ..record.judge_verdicts import run_verdicts
from ..record.records import RunDir
from ..record.review_labels import read_labels
from ..record.seal import edited_evidence, seal, sealed_snapshot
from ..record.stored_manifest import SealOnly, read_manifest_file
from ..redaction import redact
from ..report import append_step_summary, render_markdown, rendered_reports, write_reports
from ..review.sampler import drawn_rows
from ..run.manifest import compare_manifest, read_manifest
from ..scorers import CorpusScores, ScoredRun, scored_run
from ..text import valid_text
from .gate import judge_run
from .kept_labels import reused_labels
from .review_signatures import counted_labels
from .rubric_binding import RubricBinding, run_binding
from .verify import Change

__all__ = ["regate", "Regated", "judged_by_snapshot", "judged_again", "rubric_source", "WHATIF_DIR"]

WHATIF_DIR = "whatif"
"""Where, inside a run directory, `gate --rubric FILE` writes the reports of a what-if judgment by default."""
SNAPSHOT = "rubric.yaml"


@dataclass(frozen=True)
class Regated:
    """The outcome of `gate`: the run, the new report, and where its reports were written."""

    run: RunDir
    report: GateReport
    written_to: Path
    """The run directory (the official judgment) or the what-if directory (`judged_by.whatif`, or `-o`)."""

    @property
    def official(self) -> bool:
        """Whether the run's own reports were rewritten (and sealed)."""
        return self.written_to == self.run.path


def regate(run_dir: Path, rubric: Path | None = None, *, allow_pending: bool = False,
            output: Path | None = None, force: bool = False) -> Regated:
    """Judge a saved run by `rubric` (default: the run's snapshot). The run's reports are rewritten only for
    the run's own rubric and no `output`; otherwise the reports go to `output` or the run's what-if directory."""
    run = RunDir(run_dir)
    info = run.read_info()
    info.phases = planned_phases(run.path, info)  # judge_run reads the health of the phases planned
    policy, judged_by = _policy(run.path, rubric)
    verdicts = run_verdicts(run, info)
    scored = scored_run(run, policy.forbidden, verdicts)  # read and scored once: the gate and the reports share it
    recorded = _own_verdict(run, info, verdicts, allow_pending) if judged_by.whatif else None
    if judged_by.whatif and info.response_cache_probe:  # the probe's flags re-derived under the what-if's rules
        # imported here: the probe's stage reaches the embedding backends, which a plain `gate` never needs
        from ..run.cache_probe_stage import rederived_probe

        info.response_cache_probe = rederived_probe(run, info, policy, scored.records)
    labels = counted_labels(run, policy.review, read_labels(run))
    report = judge_run(GateInputs(
        info, scored.records, policy, info.cost, scored.load_records, labels, allow_pending, verdicts,
        edited_evidence(run.path), CorpusScores.of(run), scored.scores,  # read only: no journal grows
        judged_by.file, _inputs_changed(run.path, judged_by.whatif), scored.draws, drawn_rows(run), scored.ledger,
        reused_labels=reused_labels(run, info, policy.review, scored.records, labels)))
    decided: dict[str, Any] = {}
    judged_by = judged_by.model_copy(update=scored.journals())
    if judged_by.whatif:
        decided = decide_whatif(WhatIfEvidence(report.verdict, recorded, ()), report.verdict_reason).as_dict()
        judged_by = judged_by.model_copy(update={"whatif_verdict": report.verdict, "recorded_verdict": recorded})
    report = with_judged_by(report, judged_by, decided)
    if output is None and not judged_by.whatif:
        write_reports(run, report, scored)
        seal(run.path, "gate")
        return Regated(run, report, run.path)
    where = output if output is not None else run.path / WHATIF_DIR / _whatif_name(judged_by)
    _write_beside(run, report, Path(where), scored, force=force or output is None)
    return Regated(run, report, Path(where))


def _inputs_changed(run_path: Path, whatif: bool) -> list[str]:
    """The suites, schemas (and, judging by the run's own rubric, the rubric file) whose content differs now from
    the run's manifest: a verdict on them would be on other inputs. None for a run without a manifest."""
    try:
        manifest = read_manifest(run_path)
    except InputError:
        return []
    roles = ("suite", "schema") if whatif else ("suite", "schema", "rubric")
    changes = [Change.model_validate(row) for row in compare_manifest(manifest, roles=roles, packages=False)]
    return [f"{c.role} {c.path} {c.change}" for c in changes]


def _own_verdict(run: RunDir, info: Any, verdicts: Any, allow_pending: bool) -> str | None:
    """The run's verdict under its own rubric, judged again from its records (as `servers` judges every run):
    never report.json's word, which a hand edit could make PASS. None when its rubric snapshot is missing or
    edited since it was sealed."""
    own = _snapshot_policy(run.path)
    if own is None:
        return None
    scored = scored_run(run, own.forbidden, verdicts)
    labels = counted_labels(run, own.review, read_labels(run))
    return judge_run(GateInputs(
        info, scored.records, own, info.cost, scored.load_records, labels, allow_pending, verdicts,
        edited_evidence(run.path), CorpusScores.of(run), scored.scores, "", _inputs_changed(run.path, False),
        scored.draws, drawn_rows(run), scored.ledger,
        reused_labels=reused_labels(run, info, own.review, scored.records, labels))).verdict


def judged_again(run_dir: Path) -> str | None:
    """The run's verdict under its own rubric, judged again from its records, pending review holding it (what
    `bless`, `attest` and `promote` hold report.json's word against); None when its snapshot is unusable."""
    run = RunDir(run_dir)
    info = run.read_info()
    return _own_verdict(run, info, run_verdicts(run, info), allow_pending=False)


def judged_by_snapshot(report: GateReport, run_path: Path, journals: dict[str, str]) -> GateReport:
    """`report` with `judged_by` naming the run's own rubric snapshot (what `check` judges by) and the journals
    it judged (`ScoredRun.journals`)."""
    own = _own_judged_by(Path(run_path)).model_copy(update=journals)
    return with_judged_by(report, own)


def with_judged_by(report: GateReport, judged_by: JudgedBy | dict[str, Any],
                   decided: dict[str, Any] | None = None) -> GateReport:
    """`report` naming the rubric that judged it (`decided`: a what-if's own verdict over the report's). The
    report is not validated again: only `judged_by` is new, and it is validated here."""
    by = judged_by if isinstance(judged_by, JudgedBy) else JudgedBy.model_validate(judged_by)
    return report.model_copy(update={**(decided or {}), "judged_by": by})


def rubric_source(run_path: Path) -> dict[str, Any]:
    """{'source', 'named_by'}: the rubric file the run's snapshot was taken from and the config layer whose
    `rubric:` named it (`JudgedBy`), from the run's manifest; empty when the manifest does not say."""
    try:
        manifest = read_manifest_file(run_path, whole=False) or {}
    except InputError:
        return {}
    inputs = SealOnly.model_validate(manifest).inputs or []  # its seal checked: any entries beside it
    row = next((e for e in (_RubricEntry.model_validate(r) for r in inputs if isinstance(r, dict))
                if e.role == "rubric"), None)
    if row is None or not isinstance(row.path, str):
        return {}
    return {"source": row.path, "named_by": row.named_by if isinstance(row.named_by, str) else None}


class _RubricEntry(Model):
    """A manifest input entry as far as the rubric's source is read from it (any value: checked where read)."""

    model_config = ConfigDict(extra="allow")

    role: Any = None
    path: Any = None
    named_by: Any = None


def _policy(run_path: Path, rubric: Path | None) -> tuple[Rubric, JudgedBy]:
    """The rubric to judge by and its `judged_by` entry. A `rubric` file whose policy is the snapshot's (the
    rubric the run started from, passed again) judges as the run's own; any difference makes a what-if. A
    snapshot edited since it was sealed is never the run's rubric: without `rubric` that is an InputError."""
    snapshot_sha = _sha256(run_path / SNAPSHOT)
    if rubric is None:
        policy = load_rubric(sealed_snapshot(run_path, SNAPSHOT))
        return policy, _own_judged_by(run_path)
    policy = load_rubric(rubric)
    own = _snapshot_policy(run_path)
    if own is not None and _same_policy(policy, own):
        return own, _own_judged_by(run_path)
    return policy, JudgedBy.model_validate({
        "file": str(rubric), "sha256": _sha256(Path(rubric)), "snapshot_sha256": snapshot_sha, "whatif": True,
        **_bound(run_binding(run_path, Path(rubric), snapshot_form(policy)))})


def _own_judged_by(run_path: Path) -> JudgedBy:
    """`judged_by` naming the run's own rubric snapshot."""
    digest = _sha256(run_path / SNAPSHOT)
    return JudgedBy.model_validate({"file": SNAPSHOT, "sha256": digest, "snapshot_sha256": digest, "whatif": False,
                                    **rubric_source(run_path), **_bound(run_binding(run_path))})


def _bound(binding: RubricBinding) -> dict[str, Any]:
    """What `judged_by` keeps of the rubric binding: the effective rubric's hash and the overrides."""
    return {"effective_sha256": binding.effective_sha256, "overrides": [o.as_record() for o in binding.overrides]}


def _snapshot_policy(run_path: Path) -> Rubric | None:
    """The run's own rubric, or None when its snapshot is missing, unreadable or edited since it was sealed."""
    try:
        return load_rubric(sealed_snapshot(run_path, SNAPSHOT))
    except InputError:
        return None


def _same_policy(a: Rubric, b: Rubric) -> bool:
    """The same policy, name included: what the snapshot would hold for each (`Rubric.as_dict`)."""
    def canonical(r: Rubric) -> str:
        return json.dumps(r.as_dict(), sort_keys=True, default=str)

    return canonical(a) == canonical(b)


def _sha256(path: Path) -> str | None:
    try:
        return sha256_file(path, what="rubric")
    except InputError:
        return None


def _whatif_name(judged_by: JudgedBy) -> str:
    """'<rubric stem>-<12 hex of its sha256>': one directory per rubric content, so a what-if judged again by the
    same file replaces its own reports and never another rubric's."""
    stem = "".join(c if c.isalnum() or c in "._-" else "_" for c in Path(judged_by.file).stem) or "rubric"
    return f"{stem}-{(judged_by.sha256 or '')[:12]}"


def _write_beside(run: RunDir, report: GateReport, where: Path, scored: ScoredRun, *, force: bool) -> None:
    """Every report format into `where` (created), under the `-o` rules (`outputs.check_output_path`: never over a
    run's own files; an existing file only with `force`). The run directory is not written, nor sealed."""
    texts = rendered_reports(run, report, scored)
    if where.resolve() == run.path.resolve() or (where.resolve() / "run.json").is_file():
        raise InputError("is a run directory, whose files are the run's evidence", file=where,
                         hint="write what-if reports to another directory")
    targets = [check_output_path(where / name, force=force) for name in texts]
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the directory: {exc.strerror}", file=where) from None
    for path, text in zip(targets, texts.values()):
        write_output_file(path, valid_text(redact(text)).encode("utf-8"))
    append_step_summary(render_markdown(report), run.path)
