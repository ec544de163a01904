"""`releasegate init`: a starting config, suite and rubric that validate as written."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from ..border.files import replace_file
from ..border.http import url_problem
from ..errors import InputError

__all__ = ["scaffold", "endpoint_config", "FILES"]

CONFIG = """\
# releasegate config: every key is documented in docs/reference/config.md.
target:
  backend: hf                       # hf (transformers + peft), openai (an endpoint: `releasegate init --endpoint URL`)
                                    # or replay (outputs from a JSONL file)
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

ENDPOINT_TARGET = """\
# releasegate config: every key is documented in docs/reference/config.md.
# A base config: `extends: releasegate.yaml` in another file reuses it, and `--set KEY=VALUE` overrides one value.
target:
  backend: openai                   # an OpenAI-compatible server (vLLM, TGI, llama.cpp, a hosted API)
  base_url: {base_url}
{model_line}# the model name the server serves (GET {base_url}/models lists them)
  api_key_env: OPENAI_API_KEY       # NAME of the variable holding the key, never the key; drop it if the server needs none
  mode: chat                        # chat: /chat/completions; completion: /completions (prompt cases only)
  concurrency: 8                    # requests in flight during the quality pass
  timeout_s: 60
"""

ENDPOINT_REST = """\
# load:                             # a load phase after the quality pass: latency under a declared load
#   warmup: 4                       # requests sent first, left out of every figure
#   concurrency: 16                 # closed loop: this many requests always in flight
#   requests: 200                   # measured requests (a P95 needs at least 59)
"""


def endpoint_config(base_url: str, model: str | None = None) -> str:
    """The starter config for an OpenAI-compatible endpoint: its target, the generation, suite, rubric, cost
    and output sections of the hf starter, and a load phase commented out."""
    url = _endpoint_url(base_url)
    rest = CONFIG.split("generation:", 1)[1]
    model_line = f"  model: {_plain(model or 'your-served-model', '--model')} ".ljust(36)
    rest = rest.replace("cost:\n", "cost:                               # a hosted API: mode: api with "
                        "input_usd_per_1m and output_usd_per_1m\n", 1)
    return ENDPOINT_TARGET.format(base_url=url, model_line=model_line) + "generation:" + rest + ENDPOINT_REST


def _endpoint_url(url: str) -> str:
    """An http(s) URL written as is; credentials in it are refused: they belong in the environment."""
    url = _plain(url.strip(), "--endpoint")
    if (problem := url_problem(url)) is not None:
        raise InputError(f"{url!r} is {problem}", field="--endpoint", hint="e.g. http://127.0.0.1:8000/v1")
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None or parts.query:
        raise InputError("the URL carries credentials or a query", field="--endpoint",
                         hint="give the key in an environment variable named by target.api_key_env")
    return url


def _plain(value: str, option: str) -> str:
    """A value written into YAML unquoted: one line of printable characters that YAML reads back as this string."""
    import yaml

    if not value or not value.isprintable() or " #" in value or yaml.safe_load(value) != value:
        raise InputError(f"{value!r} cannot be written into the config as is", field=option)
    return value


FILES = {
    "releasegate.yaml": CONFIG,
    "suites/example.jsonl": SUITE,
    "rubrics/example.yaml": RUBRIC,
    "rubrics/forbidden.yaml": FORBIDDEN,
}


def scaffold(directory: Path, *, force: bool = False, endpoint: str | None = None, model: str | None = None) -> list[Path]:
    """Write the starter files; refuse to overwrite any unless `force`. `endpoint`: the config's target is that
    OpenAI-compatible server (`model`: the name it serves) instead of a local hf model."""
    files = dict(FILES)
    if endpoint is not None:
        files["releasegate.yaml"] = endpoint_config(endpoint, model)
    elif model is not None:
        raise InputError("--model names the model an endpoint serves: give --endpoint URL too")
    targets = [directory / name for name in files]
    existing = [p for p in targets if p.exists()]
    if existing and not force:
        raise InputError("already exists", file=existing[0], hint="use --force to overwrite")
    for path, text in zip(targets, files.values()):
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, text.encode("utf-8"), what=path.name)
    return targets
