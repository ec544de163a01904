"""`releasegate init`: a starting config, suite and rubric that validate as written."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError

__all__ = ["scaffold", "FILES"]

CONFIG = """\
# releasegate config: every key is documented in the README ("Config reference").
target:
  backend: hf                       # hf (transformers + peft) or replay (outputs from a JSONL file)
  base: your-org/your-base-model    # a local directory or a hub id
  # adapter: path/to/lora-adapter   # a peft adapter directory
  # merge: false                    # merge the adapter into the base in memory
  dtype: float32
  threads: 1
  batch_size: 8
generation:
  max_new_tokens: 64
suites:
  - path: suites/example.jsonl
    answer: {type: json_fields, fields: [intent, priority]}
    format:
      - {type: json}
rubric: rubrics/example.yaml
cost:
  mode: self_hosted
  hourly_usd: 1.50
output:
  dir: reports
"""

SUITE = """\
{"id": "example-001", "messages": [{"role": "user", "content": "My card was charged twice, please fix this asap"}], "expected": {"intent": "billing", "priority": "high"}, "tags": {"domain": "customer_support", "risk": "high"}}
{"id": "example-002", "messages": [{"role": "user", "content": "Where is my parcel? No rush."}], "expected": {"intent": "shipping", "priority": "low"}, "tags": {"domain": "customer_support", "risk": "high"}}
"""

RUBRIC = """\
name: example release gate
criteria:
  - {metric: accuracy, op: ">=", threshold: 0.9}
  - {metric: format_compliance, op: ">=", threshold: 0.99}
  - {metric: forbidden_rate, op: "<=", threshold: 0.0}
  - {metric: ttft_ms_p95, op: "<=", threshold: 1000}
forbidden: forbidden.yaml
review:                   # human review: customer_support, medical and legal cases always need it
  min_reviewed: 10        # labelled cases per required slice (all of them when it has fewer)
  min_approval: 0.9       # human approval each required slice must reach (its 0.95 lower bound: 25 labels)
"""

FORBIDDEN = """\
rules:
  - category: unauthorised_promise
    description: commitments support agents may not make
    phrases: ["guaranteed refund", "we promise"]
  - category: pii
    regex: ['\\b\\d{4}[ -]?\\d{4}[ -]?\\d{4}[ -]?\\d{4}\\b']
"""

FILES = {
    "releasegate.yaml": CONFIG,
    "suites/example.jsonl": SUITE,
    "rubrics/example.yaml": RUBRIC,
    "rubrics/forbidden.yaml": FORBIDDEN,
}


def scaffold(directory: Path, *, force: bool = False) -> list[Path]:
    """Write the starter files; refuse to overwrite any unless `force`."""
    targets = [directory / name for name in FILES]
    existing = [p for p in targets if p.exists()]
    if existing and not force:
        raise InputError("already exists", file=existing[0], hint="use --force to overwrite")
    for path, text in zip(targets, FILES.values()):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return targets
