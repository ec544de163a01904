"""rouge: ROUGE F-measure with Google's `rouge_score` package (an `evaluate` metric module that loads offline).

For each variant (rouge1, rouge2, rougeL, rougeLsum) the result is the mean over cases of the F-measure
`rouge_score.rouge_scorer.RougeScorer([variant]).score(reference, prediction)` gives, in [0, 1]. The mean is
plain (the hub's `rouge` reports a bootstrap median by default; this one is deterministic). rougeLsum is the
summary-level LCS over sentences split at newlines. rouge_score's default tokenizer keeps only ASCII letters and
digits: text in other scripts scores 0, so use `releasegate:chrf` for it.
"""

import datasets
import evaluate

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

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS)
class Rouge(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS,
            features=datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
        )

    def _compute(self, predictions, references, rouge_types=ROUGE_TYPES, use_stemmer=False):
        from rouge_score import rouge_scorer

        rouge_types = list(rouge_types)
        if not references:
            return {t: None for t in rouge_types}
        scorer = rouge_scorer.RougeScorer(rouge_types, use_stemmer=use_stemmer)
        totals = dict.fromkeys(rouge_types, 0.0)
        for pred, ref in zip(predictions, references):
            scores = scorer.score(ref, pred)
            for t in rouge_types:
                totals[t] += scores[t].fmeasure
        return {t: totals[t] / len(references) for t in rouge_types}
