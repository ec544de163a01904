"""The LLM judge: open-ended answers graded by a model, and how far reviewers agree with it. ("Judge" in
releasegate means this and nothing else; the pass/fail decision is the gate, `releasegate.gate`.)

    stage         the judge stage of `check` and `gate`: asks the judge model, caches, journals its verdicts
    calibration   judge verdicts against reviewers' labels: agreement, Cohen's kappa, confusion tables
    correction    reviewer-corrected accuracy and agreement, post-stratified by how the review sample was drawn
    gating        what the judge means for the verdict: undecided criteria, corrected accuracy

Its inputs are `inputs.judge_settings` (the config's `judge:` section, the rubric's calibration policy) and
`inputs.judge_prompt` (the judge's messages and the verdict's schema); what it said is part of the run record
(`record.judge_journal`: judgments.jsonl, `record.judge_verdicts`: the verdict each case's score uses), so
`gate` and `report` decide a run again without asking the judge again.

A case is judge-scored when its answer spec is `{type: judge, ...}`. The judge is any target backend (an
OpenAI-compatible endpoint, a local hf model, or a replay file of scripted verdicts).
"""
