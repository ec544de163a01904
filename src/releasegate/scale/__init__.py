"""Past one machine: a run's work spread over Ray workers (`scale: {engine: ray, ...}` in the config).

- hf backend: the fresh cases' batches go to Ray actors that each load the model once; every batch comes back to
  the driver, which journals it as it finishes (resume works as for one process) and keeps the same batches,
  hence the same greedy outputs, as a run in one process (`scale.hf`).
- openai backend: the load phase's schedule is split across Ray workers, each with its own client and event
  loop; their timings are merged into one load record, with each worker's send lag (`scale.load`).

Ray is an optional extra (`pip install 'releasegate[ray]'`), imported only when a run uses it. The config section is
read by `inputs.scale_config`.
"""
