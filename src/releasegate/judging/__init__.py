"""From a run record to the gate's verdict. Entry point: `judge_run.judge_run` (the run record and a rubric ->
the report that report.json holds). The LLM judge, which grades outputs, is `releasegate.llm_judge`.

    judge_run     scores, metrics, criteria, review and run health -> the report
    metrics       every metric over all cases or a slice, the latency phase, cost (definitions in README.md)
    stats         intervals and tests: Wilson, bootstrap, percentile bounds, McNemar, paired score bounds
    cluster_bounds  bounds for percentiles of clustered samples (inter-token gaps by request)
    criteria      one verdict per criterion, the overall verdict and its exit code
    gate_report   the typed report (GateReport) and reading a saved one
    health        whether a run is whole enough to judge, and whether its target could be run
    capacity      a capacity sweep judged step by step
    comparability what makes two runs runs of the same thing: per-case hashes, settings hashes, baseline rules
    compare       two runs' shared cases compared (compare_runs: two saved runs); servers: serving stacks
                  (server_ranking: which to choose)
"""
