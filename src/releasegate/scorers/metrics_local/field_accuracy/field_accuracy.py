"""field_accuracy: mean share of JSON fields answered correctly (an `evaluate` metric module).

Predictions and references are texts; each reference is a JSON object. A prediction earns, per case,
the share of the reference's fields it reproduces exactly; unparseable predictions earn 0.
Unlike all-fields-exact accuracy, this gives partial credit, so it shows which way a regression leans.
"""

from collections.abc import Sequence

import datasets
import evaluate

from releasegate.scorers.shipped_metrics import field_accuracy

_DESCRIPTION = __doc__
_KWARGS = """
Args:
    predictions: list of model outputs (text, expected to hold a JSON object).
    references: list of reference JSON objects as text.
Returns:
    field_accuracy: mean over cases of the share of reference fields matched, in [0, 1].
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS)
class FieldAccuracy(evaluate.Metric):  # type: ignore[misc,unused-ignore]  # evaluate has no types (strict only)
    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS,
            features=datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
        )

    def _compute(self, predictions: Sequence[str], references: Sequence[str]) -> dict[str, float | None]:
        return field_accuracy(predictions, references)
