"""Producing the run record: a run directory every later stage reads. Entry points: `runner.run_check`,
`runner.resume_check`, `rejudge.rejudge` (`gate`), `verify.verify_run`, `matrix.run_matrix`.

    record          the run record's types and files (CaseRecord, RunInfo, RunDir: records.jsonl, run.json)
    runner          a run's lifecycle: start, resume, stages, run.json status; generation runs the cases
    interruption    SIGINT/SIGTERM: a stopped run is 'interrupted' and resumable
    traffic         the declared load (concurrency, rate, replayed traffic) as requests
    load_phase      the load phase of `check`; sweep (capacity steps), prefix_cache (the probe),
                    server_scrape (the server's Prometheus /metrics)
    response_cache  outputs kept across runs
    manifest        what a run was made of, hashed (manifest_inputs: the files behind each input)
    seal            the run's own files hashed at the end of every stage that writes them (`verify` checks them)
    matrix          deployment variants (variants) of one model, run and compared
"""
