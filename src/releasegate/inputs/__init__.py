"""Everything the user writes, read and checked before anything runs. Entry point: `validation.load_inputs`.

    config          `releasegate.yaml` (Config, load_config); its sections in target, suite_config,
                    load_profile, cost_config, cache_config; credentials kept out of copies in config_secrets
    files           reading user files: size limits, safe YAML with line numbers
    schema_check    JSON Schema validation (schemas/) with file:line and field path in every error
    suites          JSONL suites, read lazily and validated line by line (Case)
    sources         suites from tables (parquet, CSV, JSON, arrow, save_to_disk, xlsx, the hub cache);
                    tables opens them, sampling draws a seeded stratified sample
    rubric          the gate policy (Rubric, Criterion, forbidden rules)
    validation      all of them checked together: slices some case has, chat cases for a chat endpoint
    scaffold        `releasegate init`
"""
