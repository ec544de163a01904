"""What a fine-tune memorised, measured against its base: the leakage suite built from the training and held-out
files (`build`), the probes run in-process or on an endpoint (`probe`), personal data found by hashed lookup
(`personal`), and the gate feature deciding `extraction_rate_delta`, `membership_auc`, `membership_tpr_at_1fpr`
and `pii_regurgitation_rate` through `decision/` (`feature`). No text of a training record reaches an artifact:
only its id, its hash and 8 characters each side."""
