"""Human review: the sample people label, the CSV they label it in, the labels, and what the gate makes of them.

    sampler   seeded, stratified draw of the cases to review (review_sample.json)
    csv_io    the review CSV: export for spreadsheets (blind unless `show_auto`), validated import
    adjudication  the adjudication round's CSV: the cases two reviewers disagree on, with both labels
    agreement Cohen's kappa, raw agreement and counts between two raters (reviewer and reviewer, or scorer)
    summary   per-slice approval, coverage and Cohen's kappa for the report and the gate
    session   the review loop of a saved run: export the queue, import labels, where review stands

The review policy (the rubric's `review:` section) is an input, `inputs.review_policy`; the labels are part of the
run record, `record.review_labels` (reviews.jsonl, the disagreement rule). Both names are importable from here.
"""

from importlib import import_module
from typing import Any

QUEUE_FILE = "review_queue.csv"
"""The review CSV `review export` writes into the run directory unless told another path."""
ADJUDICATION_FILE = "review_adjudication.csv"
"""The adjudication round's CSV (`review export --adjudication`): the cases whose reviewers disagree."""

# Names are loaded on first use (PEP 562): the rubric needs only the policy, and `validate` must not pay for the
# CSV, label and summary machinery (pydantic models) to read a rubric.
_WHERE = {
    **dict.fromkeys(("COLUMNS", "ImportResult", "ReviewImportError", "export_review_csv", "neutralise",
                     "read_review_csv", "unneutralise"), ".csv_io"),
    **dict.fromkeys(("APPROVE", "LABEL_WORDS", "REJECT", "REVIEWS_FILE", "CaseLabel", "LabelEdit", "append_labels",
                     "case_labels", "read_labels"), "..record.review_labels"),
    **dict.fromkeys(("DEFAULT_REQUIRED_DOMAINS", "Quota", "ReviewPolicy", "SamplePolicy", "parse_policy"), "..inputs.review_policy"),
    **dict.fromkeys(("SAMPLE_FILE", "ReviewItem", "ReviewSample", "choose_sample", "read_sample", "review_id",
                     "write_sample"), ".sampler"),
    **dict.fromkeys(("ReviewSummary", "cohen_kappa", "review_headline", "summarize_review"), ".summary"),
    **dict.fromkeys(("OpenReview", "QueueExport", "QueueImport", "export_queue", "import_queue", "open_review",
                     "review_status"), ".session"),
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_WHERE[name], __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "COLUMNS", "ImportResult", "ReviewImportError", "export_review_csv", "neutralise", "read_review_csv", "unneutralise",
    "APPROVE", "LABEL_WORDS", "REJECT", "REVIEWS_FILE", "CaseLabel", "LabelEdit", "append_labels", "case_labels",
    "read_labels", "DEFAULT_REQUIRED_DOMAINS", "Quota", "ReviewPolicy", "SamplePolicy", "parse_policy",
    "SAMPLE_FILE", "ReviewItem", "ReviewSample", "choose_sample", "read_sample", "review_id", "write_sample",
    "ReviewSummary", "cohen_kappa", "review_headline", "summarize_review",
    "OpenReview", "QueueExport", "QueueImport", "export_queue", "import_queue", "open_review", "review_status",
    "QUEUE_FILE", "ADJUDICATION_FILE",
]
