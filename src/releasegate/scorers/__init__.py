"""Scorers: one registry, one module per family.

    answer     accuracy: exact, normalized, label, json_fields, regex, numeric
    reference  accuracy by threshold on a reference metric: rouge, bleu, chrf
    judged     accuracy by the LLM judge's verdict (read from the run's judgments.jsonl)
    format     format compliance: json, json_schema, regex, max_length
    forbidden  forbidden responses: regex and phrase rules grouped by category

A scorer is a function registered with `@scorer(family, type)`; it returns `Score`.
Corpus-level metrics from the `evaluate` library live in `releasegate.scorers.evaluate_metric`. Scores are stored
with what they were computed from and reused while it is unchanged (`releasegate.scorers.stored`).

A new scorer type in an existing family (answer, format) touches:
    src/releasegate/scorers/FAMILY.py        the function and its `@scorer(family, type)` (or a new module,
                                             imported below)
    src/releasegate/schemas/case.schema.json its type in the enum, written by `python scripts/build_schemas.py`
                                             (its own settings, if any, in `$defs/answer` by hand)
    tests/test_scorers.py                    its test
A new family is a new per-case score and a new gate metric; today it touches:
    src/releasegate/scorers/FAMILY.py, scorers/__init__.py (import, this list), scorers/score.py (the score kept
    per record); schemas/case.schema.json (its spec, by hand) and config.schema.json (the suite key);
    record/metrics.py (its rate); decision/criterion.py, gate/paired_comparison.py, gate/baseline.py, inputs/rubric.py,
    schemas/rubric.schema.json (the metric name); pipeline/gate.py, pipeline/servers.py, pipeline/matrix.py
    (the metric lists); report/html.py, report/servers.py (its column); review/csv_io.py; tests.
"""

from __future__ import annotations

from . import accuracy, forbidden, format, judged, reference  # noqa: F401,E402  (registration by import)
from ._registry import SCORERS, Score, get_scorer, scorer
from ._text import normalize
from .score import ScoredRun, run_ledger, score_record, score_records, scored_run, stored_scores
from .stored import CorpusScores

__all__ = ["SCORERS", "Score", "scorer", "get_scorer", "score_record", "score_records", "stored_scores", "ScoredRun", "scored_run", "run_ledger", "CorpusScores",
           "normalize"]
