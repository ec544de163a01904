"""field_accuracy: mean share of JSON fields answered correctly (an `evaluate` metric module).

Predictions and references are texts; each reference is a JSON object. A prediction earns, per case,
the share of the reference's fields it reproduces exactly; unparseable predictions earn 0.
Unlike all-fields-exact accuracy, this gives partial credit, so it shows which way a regression leans.
"""

import json

import datasets
import evaluate

_DESCRIPTION = __doc__
_KWARGS = """
Args:
    predictions: list of model outputs (text, expected to hold a JSON object).
    references: list of reference JSON objects as text.
Returns:
    field_accuracy: mean over cases of the share of reference fields matched, in [0, 1].
"""


def _first_object(text):
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # a prediction nested past the parser's depth is no JSON
        start = text.find("{")
        if start == -1:
            return None
        try:
            value, _ = json.JSONDecoder().raw_decode(text[start:])
        except (ValueError, RecursionError):
            return None
    return value if isinstance(value, dict) else None


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS)
class FieldAccuracy(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS,
            features=datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
        )

    def _compute(self, predictions, references):
        if not references:
            return {"field_accuracy": None}
        total = 0.0
        for pred, ref in zip(predictions, references):
            want = json.loads(ref)
            got = _first_object(pred) or {}
            total += sum(got.get(k) == v for k, v in want.items()) / max(len(want), 1)
        return {"field_accuracy": total / len(references)}
