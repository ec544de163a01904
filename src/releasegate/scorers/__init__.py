"""Scorers: one registry, one module per family.

    answer     accuracy: exact, normalized, label, json_fields, regex, numeric
    reference  accuracy by threshold on a reference metric: rouge, bleu, chrf
    judged     accuracy by the LLM judge's verdict (read from the run's judgments.jsonl)
    format     format compliance: json, json_schema, regex, max_length
    forbidden  forbidden responses: regex and phrase rules grouped by category

A scorer is a function registered with `@scorer(family, type)`; it returns `Score`.
Corpus-level metrics from the `evaluate` library live in `releasegate.scorers.evaluate_metric`. Scores are stored
with what they were computed from and reused while it is unchanged (`releasegate.scorers.stored`).
"""

from __future__ import annotations

from . import accuracy, forbidden, format, judged, reference  # noqa: F401,E402  (registration by import)
from ._registry import SCORERS, Score, get_scorer, scorer
from .score import score_record, score_records, stored_scores
from .stored import CorpusScores

__all__ = ["SCORERS", "Score", "scorer", "get_scorer", "score_record", "score_records", "stored_scores", "CorpusScores"]
