"""bleu: corpus BLEU with `sacrebleu` (an `evaluate` metric module that loads offline).

`sacrebleu.corpus_bleu(predictions, [references])` with its defaults (13a tokenizer, exponential smoothing,
case-sensitive): one reference per prediction, a score in [0, 100]. Corpus BLEU pools n-gram counts over all
cases; it is not the mean of sentence BLEU.
"""

from collections.abc import Sequence

import datasets
import evaluate

from releasegate.scorers.shipped_metrics import bleu

_DESCRIPTION = __doc__
_KWARGS = """
Args:
    predictions: list of model outputs (text).
    references: list of reference texts, one per prediction.
    tokenize: sacrebleu tokenizer (default '13a'; e.g. 'intl', 'char', 'zh').
    lowercase: compare in lower case (default False).
Returns:
    bleu: corpus BLEU in [0, 100].
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS)
class Bleu(evaluate.Metric):  # type: ignore[misc,unused-ignore]  # evaluate has no types (strict only)
    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS,
            features=datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
        )

    def _compute(self, predictions: Sequence[str], references: Sequence[str], tokenize: str = "13a",
                 lowercase: bool = False) -> dict[str, float | None]:
        return bleu(predictions, references, tokenize, lowercase)
