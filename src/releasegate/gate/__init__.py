"""The gate's rules: what a run's figures must show to pass, and what makes the figures count.

    criteria          one verdict per criterion, the overall verdict and its exit code
    health            whether a run is whole enough to decide, and whether its target could be run at all
    capacity          a capacity sweep decided step by step (capacity_pace: whether a step's sender kept up)
    comparability     what makes two runs runs of the same thing: per-case hashes, settings keys, coverage
    paired_comparison two runs' shared cases compared: paired bounds, McNemar, flipped cases
    baseline          the rubric's `baseline:` criteria, decided on a paired comparison
    case_detail       what a reader needs to see one case, and the failing cases with why
    latency_source    which phase and load a latency figure was measured under

`pipeline.gate.judge_run` applies them to a run record: scores, metrics, criteria, review and the LLM judge's
verdicts -> the gate report (report.json).
"""
