"""The run record: everything a run directory holds, typed, with the rules for reading it. Every later stage is a
function of it; this package imports nothing above the ground modules and `stats`.

    records         CaseRecord, RunInfo, RunDir: records.jsonl, load.jsonl, run.json
    record_parts    the parts of a case record (Timing, Tokens, Stratum)
    evidence        what counts as an answer and as an attempt
    metrics         the metric catalogue and every metric's value over cases or a slice
    stream_reading  when stream timings are the reader's, not the server's
    gate_report     the typed gate report (GateReport) and reading a saved one
    judge_journal   judgments.jsonl: the LLM judge's verdicts as they came back
    judge_verdicts  the verdict each judge-scored case's score uses
    review_labels   reviewers' labels (labels.jsonl) and their edits
    review_outcome  what the automatic scorers said about a case, in review's terms
    seal, sealed    the run's files hashed at the end of every stage; whether a file is still as sealed
    stage_timing    where one `check`'s wall time went
"""
