"""Human review: the sample people label, the CSV they label it in, the labels, and what the gate makes of them.

    policy    the rubric's `review:` section: required slices, labels needed, minimum approval, the sampler
    sampler   seeded, stratified draw of the cases to review (review_sample.json)
    csv_io    the review CSV: export for spreadsheets, validated import
    labels    the append-only label store (reviews.jsonl), the disagreement rule
    summary   per-slice approval, coverage and Cohen's kappa for the report and the gate
"""

from .csv_io import (
    COLUMNS,
    ImportResult,
    ReviewImportError,
    export_review_csv,
    neutralise,
    read_review_csv,
    unneutralise,
)
from .labels import (
    APPROVE,
    LABEL_WORDS,
    REJECT,
    REVIEWS_FILE,
    CaseLabel,
    LabelEdit,
    append_labels,
    case_labels,
    read_labels,
)
from .policy import DEFAULT_REQUIRED_DOMAINS, Quota, ReviewPolicy, SamplePolicy, parse_policy
from .sampler import SAMPLE_FILE, ReviewItem, ReviewSample, choose_sample, read_sample, review_id, write_sample
from .summary import ReviewSummary, cohen_kappa, review_headline, summarize_review

__all__ = [
    "COLUMNS", "ImportResult", "ReviewImportError", "export_review_csv", "neutralise", "read_review_csv", "unneutralise",
    "APPROVE", "LABEL_WORDS", "REJECT", "REVIEWS_FILE", "CaseLabel", "LabelEdit", "append_labels", "case_labels",
    "read_labels", "DEFAULT_REQUIRED_DOMAINS", "Quota", "ReviewPolicy", "SamplePolicy", "parse_policy",
    "SAMPLE_FILE", "ReviewItem", "ReviewSample", "choose_sample", "read_sample", "review_id", "write_sample",
    "ReviewSummary", "cohen_kappa", "review_headline", "summarize_review",
]
