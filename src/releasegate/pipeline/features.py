"""The built-in gate features, in the order the gate runs their rules: the order of this list is the order in
which a criterion is measured (the first feature serving a metric measures it) and adjusted (a baseline's rows
and human approval are added before a judge's or a guard's calibration rules over every criterion).

Each is registered by module name, so registering imports none of their code (`gate.feature.register`)."""

from __future__ import annotations

from ..gate.feature import register

__all__ = ["BUILT_IN"]

BUILT_IN = (
    ("stopping", "releasegate.gate.stopping_feature"),  # a run stopped when decided: its e-processes, first
    ("stability", "releasegate.gate.stability_feature"),  # repeats and answers under load: per-draw rates first
    ("capacity", "releasegate.gate.capacity_feature"),
    ("cache", "releasegate.gate.cache_feature"),
    ("forbidden", "releasegate.gate.forbidden_feature"),
    ("tools", "releasegate.gate.tools_feature"),  # tool calls: trigger, arguments, match, order
    ("quality", "releasegate.gate.quality_feature"),  # error rates, evaluate metrics, the summary, the default guard
    ("latency", "releasegate.gate.latency_feature"),
    ("leakage", "releasegate.leakage.feature"),  # what the fine-tune memorised, against its base
    ("baseline", "releasegate.gate.baseline_feature"),
    ("review", "releasegate.review.feature"),
    ("judge", "releasegate.llm_judge.judge_feature"),
    ("guard", "releasegate.llm_judge.guard_feature"),
)

for _name, _module in BUILT_IN:
    register(_module, name=_name)
