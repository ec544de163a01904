"""chrf: corpus chrF with `sacrebleu` (an `evaluate` metric module that loads offline).

`sacrebleu.corpus_chrf(predictions, [references])` with its defaults (character 6-grams, beta 2, no word
n-grams): one reference per prediction, a score in [0, 100]. Character n-grams work for any script.
"""

from collections.abc import Sequence

import datasets
import evaluate

from releasegate.scorers.shipped_metrics import chrf

_DESCRIPTION = __doc__
_KWARGS = """
Args:
    predictions: list of model outputs (text).
    references: list of reference texts, one per prediction.
    word_order: word n-gram order (default 0; 2 gives chrF++).
Returns:
    chrf: corpus chrF in [0, 100].
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS)
class Chrf(evaluate.Metric):  # type: ignore[misc,unused-ignore]  # evaluate has no types (strict only)
    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS,
            features=datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
        )

    def _compute(self, predictions: Sequence[str], references: Sequence[str],
                 word_order: int = 0) -> dict[str, float | None]:
        return chrf(predictions, references, word_order)
