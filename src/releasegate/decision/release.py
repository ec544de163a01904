"""What may leave the gate: which saved runs may be blessed as a baseline, attested or promoted, whether a signed
attestation lets a deploy through, and what a stale blessed baseline does to the gate. Each from its typed evidence
(`record.decision_evidence`)."""

from __future__ import annotations

from ..data_classes import dataclass
from ..record.decision_evidence import AttestationEvidence, BaselineAgeEvidence, BlessedRunEvidence, ReleaseEvidence
from .verdicts import PASS

__all__ = ["Release", "StaleBaseline", "decide_release", "decide_attestation", "decide_baseline_age",
           "decide_blessed_run", "unallowed_overrides", "override_allowed"]


@dataclass(frozen=True)
class Release:
    """Whether the thing may go on, and the one line that says why (the refusal's reason)."""

    allowed: bool
    reason: str


@dataclass(frozen=True)
class StaleBaseline:
    """Why a blessed baseline is stale (empty: it is not), and whether that makes its criteria undecided."""

    reasons: tuple[str, ...]
    inconclusive: bool


def decide_release(e: ReleaseEvidence) -> Release:
    """Only a run sealed whole, with nothing changed since (every input re-hashed, the same package versions,
    its own files as sealed), judged by its own rubric, whose verdict is PASS both in its report and judged
    again from its records (a forged seal over an edited report.json still fails the second)."""
    if not e.sealed:
        return Release(False, f"{e.run} has no seal: no stage of releasegate sealed its files, so nothing shows "
                              "they are what was measured")
    if not e.complete:
        return Release(False, f"{e.run} was not complete when it was sealed: finish it with check --resume")
    if e.verify_outcome == "changed":
        return Release(False, f"{e.run} changed since it was measured: " + "; ".join(e.changes[:3])
                              + (f" (and {len(e.changes) - 3} more)" if len(e.changes) > 3 else ""))
    if e.verify_outcome != "unchanged":
        unseen = f": {e.not_checked[0]} cannot be checked" if e.not_checked else ""
        return Release(False, f"{e.run} cannot be verified whole{unseen}, so nothing binds what was measured to what "
                              f"would ship (releasegate verify {e.run} says more)")
    if not e.judged_by_own_rubric:
        return Release(False, f"{e.run}'s report was judged by another rubric (a what-if): judge it by its own "
                              "with releasegate gate")
    unallowed = unallowed_overrides(e.overrides, e.allow_overrides)
    if unallowed:
        more = f" (and {len(unallowed) - 1} more)" if len(unallowed) > 1 else ""
        return Release(False, f"{e.run} was judged with {unallowed[0]}{more}, which overrides a judging key of its "
                              "official config: run it again without the override, or let the rubric allow it by "
                              "name (release: {allow_overrides: [KEY]})")
    if e.recorded_verdict != PASS:
        return Release(False, f"{e.run}'s verdict is {e.recorded_verdict or 'unknown (no readable report)'}, "
                              "not PASS")
    if e.judged_again != PASS:
        return Release(False, f"{e.run}'s report says PASS, but judged again from its records by its own rubric "
                              f"the run is {e.judged_again or 'not judgeable (its rubric snapshot is unusable)'}"
                              " (a PASS that needed --allow-pending is no release: import the review labels)")
    return Release(True, f"{e.run}: sealed, verified unchanged, PASS (judged again from its records)")


def override_allowed(key: str, allowed: tuple[str, ...]) -> bool:
    """Whether the rubric's `allow_overrides` names the key: a pattern equal to it, `*` matching any text."""
    return any(_glob(pattern, key) for pattern in allowed)


def _glob(pattern: str, text: str) -> bool:
    """`pattern` matches all of `text`, `*` any run of characters: the pieces between stars found in order, each at
    its first place, in time linear in the text per piece (never a regex, which backtracks exponentially on a
    pattern of many stars: `*a*a*a*a*a*a*a*a*a*a*a*a*b`)."""
    pieces = pattern.split("*")
    if len(pieces) == 1:
        return pattern == text
    head, *middle, tail = pieces
    if len(head) + len(tail) > len(text) or not text.startswith(head) or not text.endswith(tail):
        return False
    pos, end = len(head), len(text) - len(tail)
    for piece in middle:
        found = text.find(piece, pos, end)
        if found < 0:
            return False
        pos = found + len(piece)
    return True


def unallowed_overrides(overrides: tuple[tuple[str, str, bool], ...], allowed: tuple[str, ...]) -> list[str]:
    """The overrides that keep a run from release, one line each: those that judge (change what is measured
    against the criteria) and that the rubric does not allow by name. A what-if is never allowed."""
    return [f"--set {key}" if by == "--set" else f"{key} (set by {by})" for key, by, judging in overrides
            if judging and (by.startswith("what-if") or not override_allowed(key, allowed))]


def decide_attestation(e: AttestationEvidence) -> Release:
    """A deploy goes on only under a good signature by the given key, over a releasegate statement whose verdict
    is PASS and whose criteria passed (none failed, at least one passed), with every given artifact one of its
    subjects, byte for byte."""
    if e.signature_problem:
        return Release(False, f"signature: {e.signature_problem}")
    if e.statement_problem:
        return Release(False, f"statement: {e.statement_problem}")
    if e.predicate_verdict != PASS:
        return Release(False, f"the attested verdict is {str(e.predicate_verdict)[:40]}, not PASS")
    # a PASS passed at least one criterion and failed none (`decide_gate`); a statement saying otherwise was not
    # made by the gate, whoever signed it
    unlike = sorted({v for v in e.criteria_verdicts if v not in ("pass", "insufficient")})
    if unlike or "pass" not in e.criteria_verdicts:
        return Release(False, "the attested PASS does not follow from its criteria (" + (
            f"criteria verdicts {', '.join(unlike)[:80]}" if unlike else "no criterion passed") + ")")
    if e.test_result_problem:  # a generic verifier would read another outcome than this check
        return Release(False, f"test result: {e.test_result_problem[:300]}")
    if e.required_rubrics and e.rubric_sha256 not in e.required_rubrics:
        return Release(False, f"the attested effective rubric sha256 {str(e.rubric_sha256)[:64]} is not the one "
                              f"required ({', '.join(r[:16] + '…' for r in e.required_rubrics[:3])})")
    if e.required_rubrics and e.judging_overrides:
        return Release(False, f"the attested run was judged with {e.judging_overrides[0][:200]}, an override of "
                              "the required rubric")
    if not e.artifacts:
        return Release(False, "no artifact given: pass --artifact PATH for each file the deploy ships")
    for path, problem in e.artifacts:
        if problem:
            return Release(False, f"{path}: {problem}")
    if e.weights_not_given is None:
        return Release(False, "the attestation does not say which of its subjects are the weights the run loaded "
                              "(made by an older releasegate): attest the run again")
    if e.weights_not_given:
        more = f" (and {len(e.weights_not_given) - 1} more)" if len(e.weights_not_given) > 1 else ""
        return Release(False, f"the attested run also loaded {e.weights_not_given[0][:200]}{more}, and no --artifact "
                              "carries it: give every weights file the deploy serves (base, adapter, draft)")
    return Release(True, f"signature good, verdict PASS, {len(e.artifacts)} artifact(s) match their subjects, every "
                         "attested weights file among them" + (", the required rubric" if e.required_rubrics else ""))


def decide_baseline_age(e: BaselineAgeEvidence) -> StaleBaseline:
    """A blessed baseline is stale when older than the rubric's `max_age_days`, measured with other package
    versions, or when a suite it ran changed since; the rubric's `on_stale` says whether that only warns or makes
    the baseline criteria undecided (INCONCLUSIVE at best)."""
    reasons = []
    if e.max_age_days is not None and (e.age_days is None or e.age_days > e.max_age_days):
        age = "of unknown age" if e.age_days is None else f"{e.age_days:.3g} days old"
        reasons.append(f"baseline {e.name} is {age}, more than max_age_days {e.max_age_days:g}")
    if e.packages_changed:
        reasons.append(f"baseline {e.name} was measured with other package versions: {', '.join(e.packages_changed)}")
    if e.suites_changed:
        reasons.append(f"a suite of baseline {e.name} changed since it was measured: {', '.join(e.suites_changed)}")
    return StaleBaseline(tuple(reasons), bool(reasons) and e.on_stale == "inconclusive")


def decide_blessed_run(e: BlessedRunEvidence) -> str | None:
    """Why the run a blessed name means proves nothing (None: it stands): not blessed by a key the rubric trusts
    (when it names some), changed since its blessing, or not a PASS (`bless` takes only a PASS, so a line naming
    another run was not written by it)."""
    if e.signed_by and e.signer is None:
        return (f"baseline {e.name}'s run {e.run} has no blessing signed by a key of baseline.signed_by "
                f"({', '.join(e.signed_by)}): a line releasegate bless --key did not write proves nothing")
    if not e.evidence_matches:
        return f"baseline {e.name}'s run {e.run} changed since it was blessed"
    if e.run_verdict != PASS:
        return (f"baseline {e.name}'s run {e.run} is {e.run_verdict or 'without a verdict its seal vouches for'}, "
                "not PASS: releasegate bless never blessed it")
    return None
