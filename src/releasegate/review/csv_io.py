"""The review CSV: the reviewers' interface, out (export) and back in (import).

Export writes UTF-8 with a BOM (so Excel detects the encoding), RFC 4180 quoting (every cell quoted, CRLF between
rows, newlines inside cells kept) and no truncation: an output of any length round-trips (import lifts the csv
module's 131,072-character field limit). Model outputs are untrusted: an apostrophe goes before = + - @ tab CR or
an apostrophe wherever a cell could begin under any common separator (`spreadsheet.neutralise`: the file may be
opened with ';'), so no spreadsheet reads a formula; control, bidi and surrogate characters are shown as visible
stand-ins (`inert`: ESC as '␛', U+202E as '⟨U+202E⟩'), so neither a terminal printing the file nor a reviewer's
spreadsheet acts on them. Import undoes both before it compares the output with the run's (by hash). Instructions
go into a sidecar text file, so the CSV itself stays a plain table for pandas and the csv module.

Import validates every row before anything is written and reports every problem of every row in one pass, with its
line (the physical line where the row starts, the header being line 1) and spreadsheet row: unknown or duplicated
review ids, rows from another run or export, outputs edited since export (by hash), invalid labels, labels without
a reviewer, forbidden categories the rubric does not name (`import_problems`: the first ten named, the rest counted).
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

from ..border.outputs import check_output_path, write_output_file
from ..clock import now as stamp
from ..data_classes import dataclass
from ..errors import InputError
from ..gate.case_detail import failing_cases
from ..inputs.csv_dialect import REOPEN, misread_utf8
from ..inputs.files import MAX_FILE_BYTES, read_capped
from ..record.records import CaseRecord
from ..record.review_labels import LABEL_WORDS, LabelEdit, current_labels, parse_label, reviewer_key, reviewer_rounds
from ..record.review_outcome import check_verdicts, output_hash
from ..spreadsheet import SAVE_AS_UTF8, csv_text, neutralise, unneutralise
from ..text import inert, reveal
from . import ADJUDICATION_FILE, QUEUE_FILE
from .import_problems import Problems, ReviewImportError, adjudicator_problem, forbidden_problems
from .label_row import LabelRow
from .sampler import ReviewSample

__all__ = [
    "COLUMNS", "REQUIRED_COLUMNS", "neutralise", "unneutralise", "export_review_csv", "read_review_csv",
    "ImportResult", "ReviewImportError", "instructions_path", "render_input", "check_export_target", "filled_labels",
]

COLUMNS = (
    "review_id", "case_id", "slice", "sampled_as", "input", "expected", "output",
    "auto_verdict", "auto_answer", "auto_format", "auto_forbidden", "auto_why", "output_hash",
    "label", "reason", "reviewer", "forbidden",
)
AUTO_COLUMNS = ("auto_verdict", "auto_answer", "auto_format", "auto_forbidden", "auto_why")
"""The automatic verdict and its reasons: in the CSV only with `review.show_auto: true` (blind review otherwise)."""
MAX_REVIEWER_CHARS, MAX_REASON_CHARS = 200, 2000  # longer is refused at import (a reason as `bless --reason`)
REQUIRED_COLUMNS = ("review_id", "output", "output_hash", "label", "reason", "reviewer")
READ_BACK = frozenset({*REQUIRED_COLUMNS, "round", "forbidden"})
"""Columns import reads: neutralised so that it gets their text back exactly. The others are only shown."""
ROUND = "round"
"""The adjudication CSV's column saying its rows are an adjudicator's labels ('adjudication' in every row)."""
ADJUDICATION = "adjudication"
_DELIMITERS = (",", ";", "\t")  # Excel in many locales saves CSV with semicolons
_CONVERTED = re.compile(r"[-+]?[\d.,/: %$€£¥]*\d[\d.,/: %$€£¥E+-]*|true|false|wahr|falsch|vrai|faux", re.I)
"""What a spreadsheet makes of a text cell it took for a number, a date or a truth value ('0001' -> 1)."""
SPREADSHEET_CELL_LIMIT = 32_767  # Excel's characters per cell: a longer output is cut when a spreadsheet saves it


def instructions_path(csv_path: Path) -> Path:
    """The sidecar next to the CSV: review_queue.csv -> review_queue.instructions.txt."""
    return csv_path.with_name(csv_path.stem + ".instructions.txt")


def check_export_target(path: Path, *, default: bool, force: bool) -> int:
    """Whether the review CSV may be written at `path`; the number of labels the file there holds (0 when none),
    which the export replaces. Refused (InputError): a run's own file other than the queue, an existing `-o` file
    without `force`, and a filled-in review CSV without `force`, the default one included (import it first)."""
    own = frozenset(name for queue in export_names() for name in (queue, instructions_path(Path(queue)).name))
    check_output_path(path, force=force or default, own=own)
    check_output_path(instructions_path(path), force=True, own=own)
    labels = filled_labels(path)
    if labels and not force:
        raise InputError(f"is a filled-in review CSV ({labels} labelled rows)", file=path,
                         hint=f"import it first (releasegate review import RUN_DIR {path}), or add --force to replace it")
    return labels


def export_names(base: str = QUEUE_FILE) -> list[str]:
    """The review CSVs export writes in a run (from `base`): the queue, each reviewer's copy, the adjudication
    round's."""
    stem, suffix = Path(base).stem, Path(base).suffix
    return [base, *(f"{stem}.{n}{suffix}" for n in (1, 2)), ADJUDICATION_FILE]


def copy_path(path: Path, copy: int) -> Path:
    """The CSV of reviewer `copy` (1, 2) of a double-labelled review: review_queue.csv -> review_queue.1.csv."""
    return path.with_name(f"{path.stem}.{copy}{path.suffix}")


def review_columns(show_auto: bool) -> tuple[str, ...]:
    """The review CSV's columns: the auto_* ones only when reviewers may see the automatic verdict."""
    return COLUMNS if show_auto else tuple(c for c in COLUMNS if c not in AUTO_COLUMNS)


def filled_labels(path: Path) -> int:
    """Labelled rows in the review CSV at `path`; 0 when there is none or it is not a readable review CSV."""
    try:
        text = _decode(path)
        delimiter = _delimiter(path, text)
        rows = list(csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter))
    except (InputError, csv.Error, OSError):
        return 0
    return sum(1 for row in rows if str(row.get("label") or "").strip())


HIDDEN = "hidden"
"""What the CSV shows in place of the LLM judge's verdict (auto_verdict and auto_answer of judge-scored cases)."""


def export_review_csv(path: Path, sample: ReviewSample, records: list[CaseRecord], scores: dict[str, dict[str, Any]], *,
                      show_auto: bool = False, copy: tuple[int, int] | None = None) -> list[Path]:
    """Write the review CSV of a sample and its instructions sidecar; return both paths. The automatic verdict
    and reasons are left out unless `show_auto`; `copy` (k, n) is reviewer k's own copy of n."""
    columns = review_columns(show_auto)
    rows = [[cells[c] for c in columns] for cells in case_cells(sample, records, scores)]
    write_csv(path, columns, rows)
    sidecar = instructions_path(path)
    _write_atomic(sidecar, _instructions(path, sample, show_auto=show_auto, copy=copy).encode("utf-8"))
    return [path, sidecar]


def case_cells(sample: ReviewSample, records: list[CaseRecord], scores: dict[str, dict[str, Any]]) -> list[dict[str, str]]:
    """Per sampled case, every COLUMNS cell as the CSV shows it (label, reason and reviewer empty)."""
    by_id = {r.case_id: r for r in records}
    why = {f["case_id"]: f["why"] for f in failing_cases(records, scores, limit=len(records))}
    out = []
    for item in sample.items:
        record = by_id[item.case_id]
        checks = check_verdicts(scores[item.case_id])
        outcome, reasons = item.outcome, why.get(item.case_id, [])
        if "judge" in scores[item.case_id].get("answer", {}):
            # the LLM judge's verdict stays out of the reviewer's sight: their labels are what calibrates it
            outcome, checks["answer"] = HIDDEN, HIDDEN
            reasons = [w for w in reasons if not w.startswith("answer: ")]
        cells = [
            item.review_id, item.case_id, item.stratum, item.sampled_as, render_input(record.input),
            _text(record.expected), record.output or "", outcome,
            checks["answer"], checks["format"], checks["forbidden"], "; ".join(reasons),
            item.output_hash, "", "", "", "",
        ]
        out.append(dict(zip(COLUMNS, (inert(c) for c in cells))))
    return out


def write_csv(path: Path, columns: tuple[str, ...], rows: list[list[str]]) -> None:
    """A review CSV: UTF-8 with a BOM, every cell quoted; the columns import reads neutralised reversibly, the
    ones only shown so that an apostrophe of their text stays single."""
    shown = {i for i, name in enumerate(columns) if name not in READ_BACK}
    _write_atomic(path, csv_text([list(columns), *rows], quote_all=True, shown_only=shown).encode("utf-8-sig"))


def render_input(data: dict[str, Any]) -> str:
    """The case input as a reviewer reads it: 'role: content' per message, blank lines between; or the prompt."""
    if "messages" in data:
        return "\n\n".join(f"{m.get('role', '?')}: {m.get('content', '')}" for m in data["messages"])
    if "prompt" in data:
        return str(data["prompt"])
    return _text(data)


@dataclass(frozen=True)
class ImportResult:
    """What an import would add (nothing is written by reading)."""

    edits: list[LabelEdit]
    """New or changed labels, to append to reviews.jsonl."""
    unchanged: int
    """Labelled rows identical to the reviewer's current label (not appended again)."""
    unlabelled: int
    """Rows left without a label."""
    rows: int
    """Data rows read."""


def read_review_csv(
    path: Path, sample: ReviewSample, existing: list[LabelEdit], *, reviewer: str | None = None,
    now: str | None = None, categories: tuple[str, ...] | None = None,
) -> ImportResult:
    """Parse and validate a filled-in review CSV against the run's sample; raise ReviewImportError listing every
    problem of every row, in one pass (`import_problems`: the first ten named, the rest counted). `reviewer` fills
    empty reviewer cells; `existing` is the run's label history; `categories`: the rubric's forbidden categories,
    which a forbidden cell must name (None: not checked)."""
    text = _decode(path)
    delimiter = _delimiter(path, text)
    if csv.field_size_limit() < MAX_FILE_BYTES:  # the default, 131,072 characters, is shorter than some outputs
        csv.field_size_limit(MAX_FILE_BYTES)  # (the file itself is at most MAX_FILE_BYTES)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = [h.strip().lstrip("\ufeff") for h in next(reader)]
    except csv.Error as exc:  # e.g. a stray quote in the header row
        raise ReviewImportError(path, [(1, f"malformed CSV: {exc}")]) from None
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise ReviewImportError(path, [(1, f"missing column(s): {', '.join(missing)} (expected the columns "
                                            f"`releasegate review export` writes)")])
    col = {name: header.index(name) for name in header}  # a repeated column: the first one counts
    items, current = sample.by_id(), {**current_labels(existing), **_adjudications(existing)}
    exported = {item.output_hash for item in sample.items}
    rounds = reviewer_rounds([e for e in existing if e.output_hash in exported])  # the reviewers an adjudicator follows
    now = now or stamp()
    seen: dict[str, int] = {}
    problems, record = Problems(), 1  # record: the spreadsheet row just read (the header is row 1)
    edits, unchanged, unlabelled, rows = [], 0, 0, 0
    while True:
        start, record = reader.line_num + 1, record + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            problems.add(start, f"malformed CSV: {exc}", record)
            break
        if not any(cell.strip() for cell in row):
            continue
        rows += 1
        cell = LabelRow.of(col, row)
        found, edit = _check_row(cell, items, seen, start, reviewer, now, path.name)
        if edit is not None:
            found += forbidden_problems(edit, categories)
            if edit.adjudication and (problem := adjudicator_problem(edit, rounds.get(edit.case_id, []))):
                found.append(problem)
        for problem in found:
            problems.add(start, problem, record)
        if found:
            continue
        if edit is None:
            unlabelled += 1
        elif (old := current.get(_key(edit))) and (old.label, old.reason, old.forbidden) == (edit.label, edit.reason, edit.forbidden):
            unchanged += 1
        else:
            edits.append(edit)
    if problems:
        raise ReviewImportError(path, problems)
    return ImportResult(edits=edits, unchanged=unchanged, unlabelled=unlabelled, rows=rows)


def _key(edit: LabelEdit) -> tuple[str, str]:
    """Whose label an edit replaces: a reviewer's own on the case, or the case's adjudication."""
    return (edit.case_id, ADJUDICATION if edit.adjudication else reviewer_key(edit.reviewer))


def _adjudications(edits: list[LabelEdit]) -> dict[tuple[str, str], LabelEdit]:
    """(case id, 'adjudication') -> the case's latest adjudicator's label."""
    return {_key(e): e for e in edits if e.adjudication}


def _check_row(cell: LabelRow, items: dict[str, Any], seen: dict[str, Any], line: int, default_reviewer: str | None, now: str,
               source: str) -> tuple[list[str], LabelEdit | None]:
    """(every problem of the row, None) | ([], None) for an unlabelled row | ([], LabelEdit)."""
    rid = unneutralise(cell.review_id.strip())
    if not rid:
        return ["review_id is empty"], None
    if rid in seen:
        return [f"review id {rid} is duplicated (first on line {seen[rid]})"], None
    seen[rid], item = line, items.get(rid)
    if item is None:
        return [f"unknown review id {rid!r}: not in this run's review sample"], None
    problems = _output_problems(rid, cell, item.output_hash)
    round_ = unneutralise(cell.round.strip()).casefold()
    if round_ not in ("", ADJUDICATION):
        problems.append(f"{rid}: round {round_!r} is not {ADJUDICATION!r} (leave the round column as exported)")
    word, reason = unneutralise(cell.label.strip()), unneutralise(cell.reason.strip())
    if not word:  # a reason or forbidden categories given without a label would be lost without a word
        said = [what for what, v in (("a reason", reason), ("forbidden categories", cell.forbidden.strip())) if v]
        return problems + [f"{rid}: {said[0]} but no label"] if said else problems, None
    label = parse_label(word)
    if label is None:
        problems.append(f"{rid}: invalid label {word!r} (use approve or reject; accepted: {', '.join(LABEL_WORDS)})")
    if len(reason) > MAX_REASON_CHARS:  # a megabyte reason would be kept in every journal read
        problems.append(f"{rid}: the reason is longer than {MAX_REASON_CHARS} characters (write a few words)")
    name = " ".join(unneutralise(cell.reviewer).split()) or (default_reviewer or "")
    if not reviewer_key(name):  # nothing but invisible characters, or no name
        problems.append(f"{rid}: label {word!r} without a reviewer (fill the reviewer column or pass --reviewer)")
    elif len(name) > MAX_REVIEWER_CHARS:
        problems.append(f"{rid}: the reviewer name is longer than {MAX_REVIEWER_CHARS} characters")
    if problems or label is None:
        return problems, None
    return [], LabelEdit(
        review_id=rid, case_id=item.case_id, reviewer=name, label=label, reason=reason, time=now,
        output_hash=item.output_hash, source=source, source_line=line, adjudication=round_ == ADJUDICATION,
        forbidden=unneutralise(cell.forbidden),  # type: ignore[arg-type]  # parsed by LabelEdit
    )


def _output_problems(rid: str, cell: LabelRow, expected_hash: str) -> list[str]:
    """Why the row's output is not the run's output it was exported with, or []."""
    if cell.output_hash.strip() != expected_hash:
        return [f"{rid}: output_hash is not this run's (a row from another run or export?)"]
    shown = cell.output
    if _shows_output(shown, expected_hash):
        return []
    if len(unneutralise(shown)) == SPREADSHEET_CELL_LIMIT:
        return [f"{rid}: output has {SPREADSHEET_CELL_LIMIT:,} characters, a spreadsheet's cell limit: the "
                "spreadsheet cut it, so it is not the run's output (label this row in LibreOffice Calc or a text "
                "editor)"]
    converted = (" (a spreadsheet read it as a number, date or truth value: open the CSV with quoted fields "
                 "as text; LibreOffice: 'Format quoted field as text' on, 'Detect special numbers' off)"
                 if _CONVERTED.fullmatch(shown.strip()) else "")
    return [f"{rid}: output was edited since export (its hash no longer matches output_hash){converted}"]


def _shows_output(shown: str, expected_hash: str) -> bool:
    """Whether an output cell is the exported output: as written, or with the export's apostrophe and visible
    stand-ins undone. (An output holding stand-in glyphs of its own compares as written; one holding both such
    glyphs and the characters they stand for matches neither reading and is refused, never matched wrongly.)"""
    for text in (shown, unneutralise(shown)):
        if output_hash(text) == expected_hash or output_hash(reveal(text)) == expected_hash:
            return True
    return False


def _decode(path: Path) -> str:
    raw = read_capped(path, what="review CSV")  # a regular file, at most MAX_FILE_BYTES
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ReviewImportError(path, [(1, f"the file is UTF-16 (Excel 'Unicode Text'); save it as CSV UTF-8 ({SAVE_AS_UTF8})")])
    # the header first: a byte-order mark misread (LibreOffice's default Windows-1252) is the cause of what follows
    misread = misread_utf8(raw.split(b"\n", 1)[0].decode("utf-8-sig", "replace"))  # 'ï»¿review_id' is no review_id
    if misread is not None:
        raise ReviewImportError(path, [(1, f"{misread}; {REOPEN}")])
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ReviewImportError(path, [(line, f"not UTF-8 text (byte {exc.start}); save it as CSV UTF-8 "
                                              f"({SAVE_AS_UTF8})")]) from None
    if not text.strip():
        raise ReviewImportError(path, [(1, "the file is empty")])
    return text


def _delimiter(path: Path, text: str) -> str:
    first = text.splitlines()[0]
    for delimiter in _DELIMITERS:
        if "review_id" in (c.strip().lstrip("\ufeff") for c in next(csv.reader([first], delimiter=delimiter))):
            return delimiter
    raise ReviewImportError(path, [(1, "no review_id column in the header: not a review CSV from `releasegate review export`")])


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _write_atomic(path: Path, data: bytes) -> None:
    write_output_file(path, data)


def _instructions(path: Path, sample: ReviewSample, *, show_auto: bool, copy: tuple[int, int] | None) -> str:
    policy, required = sample.policy, sample.required
    auto = ("the auto_* columns say what the automatic checks found" if show_auto else
            "judge each output on its own:\n   the automatic checks' verdict is left out on purpose")
    own = "" if copy is None else (f"This is copy {copy[0]} of {copy[1]}: each case is labelled by {copy[1]} reviewers, "
                                   "independently.\nLabel your copy alone, without seeing another copy's labels.\n\n")

    def words(label: str) -> str:
        return ", ".join(w for w, v in LABEL_WORDS.items() if v == label)

    return f"""\
Human review of releasegate run {sample.run_id}: {len(sample.items)} of {sample.cases} cases sampled.

{own}1. Open {path.name} in Excel, LibreOffice Calc or Google Sheets (UTF-8, comma-separated, one row per case;
   LibreOffice: Character set 'Unicode (UTF-8)', 'Format quoted field as text' on, 'Detect special numbers' off).
2. Read input, expected and output; {auto}.
3. Fill in, on the rows you review:
     label     approve  (the output is fine to release)    accepted: {words("approve")}
               reject   (it is not)                         accepted: {words("reject")}
     reason    a few words on why (most useful for rejections)
     reviewer  your name; every labelled row needs one
     forbidden the forbidden categories the output falls under, comma-separated, or none (measures a guard model)
   Leave label empty on rows you did not review.
4. Do not edit the other columns. review_id identifies the row; output_hash proves the output is the one exported,
   and a row whose output was changed is refused. An apostrophe (') was added before = + - @ at the start of a
   cell and after , ; | or a tab inside one, so that the spreadsheet shows text instead of running a formula
   whatever separator it splits on: leave it. Control and bidi characters
   in a model's output are shown as symbols (␛ for ESC, ⟨U+202E⟩ for a right-to-left override): leave them too.
5. Save as CSV UTF-8 (Excel: "CSV UTF-8 (Comma delimited)"; LibreOffice: 'Keep current format', 'Edit filter
   settings', Character set 'Unicode (UTF-8)', 'Quote all text cells' on) and import it:
     releasegate review import <run dir> {path.name}
   Every row is checked first; on any problem nothing is imported and each problem is listed with its line.
   Importing again replaces your earlier labels on the rows you label; other reviewers' labels are kept.
   {"Several reviewers may label the same case: it counts as approved only if every one of them approved it." if copy is None
    else "A case is labelled once its reviewers agree; a disagreement goes to an adjudicator, whose label decides."}

Review is required for {", ".join(required) or "no slice"}: at least {policy['min_reviewed']} labelled cases per
slice (all of them if it has fewer), and as many as it takes to show an approval of at least
{policy['min_approval']:.0%} at {policy.get('confidence', 0.95):g} confidence (the gate says how many are still needed).
"""
