"""Executing a run: the cases generated and the declared load sent, each result journaled into the run record.

    generation      the quality cases: batches, the response cache, scoring each batch as it is journaled
    load_phase      the load phase of `check`; sweep (capacity steps), prefix_cache (the probe),
                    server_scrape (the server's Prometheus /metrics)
    interruption    SIGINT/SIGTERM: a stopped run is 'interrupted' and resumable
    progress        the rich progress bars (plain lines in a CI log)
    manifest        what a run was made of, hashed (manifest_inputs: the files behind each input)
"""
