"""Statistics with no knowledge of runs: intervals and tests (`intervals`: Wilson, bootstrap, percentile
bounds, McNemar, paired score bounds), bounds for clustered samples (`cluster_bounds`), and what a stratified
sample speaks for (`sample_weights`: stratum weights, Kish's effective n, two-phase n)."""
