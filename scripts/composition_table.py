"""The composition table: every pair of registered gate features, its fixture's truth and the verdict the gate gives,
from the data tests/test_composition.py runs (`releasegate.testing.composition`).

Each feature's fixture part says how it is switched on and what it does all good and set to fail; each pair runs
all good (truth PASS) and with one part set to fail (truth FAIL), unless `releasegate validate` refuses it
(`REFUSED`). A pair known to give another verdict is listed in `WRONG`, and the table shows the verdict it gives.

    python scripts/composition_table.py            # rewrite docs/composition.md
    python scripts/composition_table.py --check    # exit 1 when docs/composition.md differs from a fresh rendering
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "composition.md"

INTRO = """\
# Feature composition

Every gate feature (see [Architecture](architecture.md#the-gate-a-loop-over-features)) is tested with every other
one: `tests/test_composition.py` builds each pair from the feature registry, so a newly registered feature joins
the matrix and fails it until it has a fixture part in `releasegate.testing.composition`. A part is the config,
rubric and suite fragments that switch its feature on, how the stub OpenAI-compatible server (the target, the
guard and the judge) answers for it, and its known effect all good and set to fail. Each pair runs twice against
the stub: all good, where the truth is PASS, and with one of its two parts set to fail, where the truth is FAIL;
or `releasegate validate` refuses the pair in one line naming both keys (exit 2). Where reviewers' labels are
needed (review, the judge's and the guard's calibration) they are exported and imported, labelled by what each
reply says; under `review.labels_per_case: 2` by two reviewers.

This page is generated: `python scripts/composition_table.py` (the test suite runs its `--check`).
"""


def render() -> str:
    from releasegate.gate.feature import registered
    from releasegate.pipeline import features as _built_in  # noqa: F401  # registers the built-in features
    from releasegate.testing import composition as mx

    names = [f.name for f in registered()]
    out = [INTRO, "## Fixture parts", "", "| feature | switched on by | all good | set to fail |", "|---|---|---|---|"]
    for name in names:
        part = mx.PARTS.get(name)
        if part is None:
            out.append(f"| {name} | **no fixture part** | | |")
            continue
        out.append(f"| {name} | {_cell(part.switch)} | {_cell(part.good)} | {_cell(part.bad)} |")
    out += ["", "## Pairs", "", "| pair | fixture truth | verdict |", "|---|---|---|"]
    for a, b in mx.pairs(names):
        key = frozenset({a, b})
        if key in mx.REFUSED:
            keys, why = mx.REFUSED[key]
            out.append(f"| {a} x {b} | refused: {_cell(why)} | REFUSED by validate (exit 2) |")
            continue
        for mode in ("good", "bad"):
            truth = mx.truth(a, b, mode)
            said = f"all good: {truth}" if mode == "good" else f"{mx.bad_part(a, b, names)} set to fail: {truth}"
            out.append(f"| {a} x {b} | {said} | {_verdict(mx, key, mode, truth)} |")
    return "\n".join(out + _meetings(mx)) + "\n"


MEETINGS_INTRO = """\
## Meetings of three

A run that stops when decided, against a baseline, met with a guard, with double-labelled human review and with
served variants (`variants:`, each variant a run of `releasegate matrix`; the verdict is every variant's):
`tests/test_composition_meetings.py`, from `releasegate.testing.composition_meetings`. Its rubric lets the run
decide early on the fixture's 40 cases: `error_rate <= 0.3` for the default error guard, the baseline compared on
accuracy with a margin of 0.2, the baseline run whole; the baseline part set to fail answers half its cases
wrong. All good, the run stops before its last case (with a guard it asks every case: the guard's verdicts come
after the cases, and the gate decides each row on its e-process).
"""


def _meetings(mx) -> list[str]:
    from releasegate.testing.composition_meetings import MEETINGS

    served = mx.PARTS[mx.SERVED]
    out = ["", MEETINGS_INTRO, f"The served-variants part: {_cell(served.switch)}; {_cell(served.good)}.", "",
           "| meeting | fixture truth | verdict |", "|---|---|---|"]
    for meeting in MEETINGS:
        key, name = frozenset(meeting.features), " x ".join(meeting.features)
        if key in mx.REFUSED:
            out.append(f"| {name} | refused: {_cell(mx.REFUSED[key][1])} | REFUSED by validate (exit 2) |")
            continue
        for bad in meeting.bad:
            truth, mode = ("PASS", "good") if bad is None else ("FAIL", bad)
            said = f"all good: {truth}" if bad is None else f"{bad} set to fail: {truth}"
            out.append(f"| {name} | {said} | {_verdict(mx, key, mode, truth)} |")
    return out


def _verdict(mx, key: frozenset[str], mode: str, truth: str) -> str:
    wrong = mx.WRONG.get((key, mode))
    return truth if wrong is None else f"**{wrong[0]}** (wrong: {_cell(wrong[1])})"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/composition.md is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not DOCS.exists() or DOCS.read_text(encoding="utf-8") != text:
            print(f"{DOCS.relative_to(ROOT)} is stale: run python scripts/composition_table.py", file=sys.stderr)
            return 1
        return 0
    DOCS.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
