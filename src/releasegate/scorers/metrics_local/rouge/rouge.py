"""rouge: ROUGE F-measure with Google's `rouge_score` package (an `evaluate` metric module that loads offline).

For each variant (rouge1, rouge2, rougeL, rougeLsum) the result is the mean over cases of the F-measure
`rouge_score.rouge_scorer.RougeScorer([variant]).score(reference, prediction)` gives, in [0, 1]. The mean is
plain (the hub's `rouge` reports a bootstrap median by default; this one is deterministic). rougeLsum is the
summary-level LCS over sentences split at newlines. rouge_score's default tokenizer keeps only ASCII letters and
digits: text in other scripts scores 0, so use `releasegate:chrf` for it.
"""

from collections.abc import Sequence

import datasets
import evaluate

from releasegate.scorers.shipped_metrics import ROUGE_TYPES, rouge

_DESCRIPTION = __doc__
_KWARGS = """
Args:
    predictions: list of model outputs (text).
    references: list of reference texts, one per prediction.
    rouge_types: which of rouge1, rouge2, rougeL, rougeLsum (default: all four).
    use_stemmer: apply the Porter stemmer before matching (default False).
Returns:
    one key per rouge type: the mean F-measure over cases, in [0, 1].
"""



@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS)
class Rouge(evaluate.Metric):  # type: ignore[misc,unused-ignore]  # evaluate has no types (strict only)
    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS,
            features=datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
        )

    def _compute(self, predictions: Sequence[str], references: Sequence[str],
                 rouge_types: Sequence[str] = ROUGE_TYPES, use_stemmer: bool = False) -> dict[str, float | None]:
        return rouge(predictions, references, rouge_types, use_stemmer)
