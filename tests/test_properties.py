"""Property-based tests of every input loader: whatever bytes a user hands releasegate, no traceback escapes,
the exit code is 0 or 2, and a rejection is one line that names the file it is about.

Documents are drawn three ways: arbitrary bytes and text, arbitrary JSON/YAML values with the loader's own keys,
and a valid document with one part replaced by an arbitrary value (which reaches the deeper checks).
500 examples per loader when CI is set (CI=true), 100 locally.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from releasegate.cli import main
from releasegate.errors import InputError

EXAMPLES = 500 if os.environ.get("CI", "").lower() in ("1", "true", "yes") else 100
PROPERTY = settings(
    max_examples=EXAMPLES, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

CONFIG_KEYS = [
    "target", "backend", "base", "adapter", "merge", "dtype", "responses", "base_url", "model", "api_key_env",
    "tokenizer", "extra_body", "draft", "quantize", "suites", "path", "name", "limit", "answer", "format", "type",
    "pattern", "schema", "fields", "rubric", "cost", "mode", "hourly_usd", "price_table", "price_model", "load",
    "concurrency", "rate", "replay", "requests", "output", "dir", "run_id", "seed", "generation", "max_new_tokens",
    "cache", "ttl_s",
]
CASE_KEYS = ["id", "messages", "role", "content", "prompt", "expected", "tags", "answer", "format", "type", "pattern",
             "schema", "fields", "labels", "tolerance", "max_chars", "max_tokens"]
RUBRIC_KEYS = ["name", "criteria", "metric", "op", "threshold", "slice", "min_samples", "confidence", "forbidden",
               "category", "regex", "phrases", "rules", "evaluate", "module", "key", "latency_from", "baseline", "run",
               "margins", "review", "allow_insufficient", "accuracy", "ttft_ms_p95", "suite"]
# strings a loader treats specially: files that exist, do not exist, directories, regexes, ids, enums
WORDS = ["suite.jsonl", "rubric.yaml", "responses.jsonl", "schema.json", "forbidden.yaml", "missing.yaml", ".", "sub",
         "..", "replay", "openai", "hf", "x" * 300, "a/b", "(", "a{99999999999}", "(?i)x", "billing", "accuracy",
         ">=", "json_schema", "regex", "json", "exact", "self_hosted", "api", "http://127.0.0.1:1/v1", "c1", "user",
         "releasegate:field_accuracy", "2021-13-45", "1" * 5000, "\u2028", "\ud800"]


def text_values(keys: list[str]) -> st.SearchStrategy:
    """Arbitrary JSON/YAML-able values whose mapping keys are mostly the loader's own."""
    scalars = (st.none() | st.booleans() | st.integers() | st.floats() | st.sampled_from(WORDS)
               | st.text(max_size=20).filter(lambda s: not s.startswith("/")))
    key = st.sampled_from(keys) | st.text(max_size=6)
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(key, inner, max_size=5),
                        max_leaves=25)


def mutated(valid: dict, keys: list[str]) -> st.SearchStrategy:
    """`valid` with one value somewhere replaced by an arbitrary value (or one key dropped)."""

    @st.composite
    def build(draw):
        doc = json.loads(json.dumps(valid))
        node = doc
        while True:
            children = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
            name, child = draw(st.sampled_from(children))
            if isinstance(child, (dict, list)) and child and draw(st.booleans()):
                node = child
                continue
            if isinstance(node, dict) and draw(st.integers(0, 5)) == 0:
                del node[name]
            else:
                node[name] = draw(st.sampled_from(WORDS) | text_values(keys))
            return doc

    return build()


def documents(valid: dict, keys: list[str], *, lines: bool = False) -> st.SearchStrategy:
    """Bytes for a file: raw bytes, raw text, or a (mutated) document as YAML, JSON, or JSON lines."""
    def dump(v, style: str) -> bytes:
        if lines:
            rows = v if isinstance(v, list) and style == "lines" else [v]
            return "".join(json.dumps(r, ensure_ascii=style == "ascii") + "\n" for r in rows).encode("utf-8", "surrogatepass")
        if style == "yaml":
            return yaml.safe_dump(v, allow_unicode=True).encode("utf-8", "surrogatepass")
        return json.dumps(v, ensure_ascii=style == "ascii").encode("utf-8", "surrogatepass")

    styles = st.sampled_from(["yaml", "json", "ascii", "lines"])
    near_valid = st.builds(dump, mutated(valid, keys), styles)
    anything = st.builds(dump, text_values(keys), styles)
    raw = st.binary(max_size=200) | st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass"))
    return st.one_of(near_valid, near_valid, near_valid, anything, raw)  # mostly near-valid: the deeper checks


VALID_CONFIG = {
    "target": {"backend": "replay", "responses": "responses.jsonl"},
    "generation": {"max_new_tokens": 8},
    "suites": [{"path": "suite.jsonl", "answer": {"type": "json_fields", "fields": ["intent"]},
                "format": [{"type": "json_schema", "schema": "schema.json"}]}],
    "rubric": "rubric.yaml",
    "cost": {"mode": "self_hosted", "hourly_usd": 1.0},
    "load": None,
    "output": {"dir": "reports"},
    "cache": {"path": "cache.sqlite", "ttl_s": 60},
    "seed": 1,
}
del VALID_CONFIG["load"]
VALID_CASE = {"id": "c1", "messages": [{"role": "user", "content": "hi"}], "expected": {"intent": "billing"},
              "tags": {"domain": "support", "risk": "high"}, "answer": {"type": "regex", "pattern": "(b)illing"},
              "format": [{"type": "json"}, {"type": "max_length", "max_chars": 100}]}
VALID_RUBRIC = {
    "name": "gate", "latency_from": "auto",
    "criteria": [{"metric": "accuracy", "op": ">=", "threshold": 0.9, "slice": {"domain": "support"}, "min_samples": 1},
                 {"metric": "ttft_ms_p95", "op": "<=", "threshold": 100}],
    "forbidden": [{"category": "pii", "regex": ["\\d{16}"], "phrases": ["we promise"]}],
}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("properties")
    (root / "sub").mkdir()
    (root / "responses.jsonl").write_text('{"id": "c1", "output": "x"}\n')
    (root / "schema.json").write_text('{"type": "object"}')
    (root / "forbidden.yaml").write_text("rules: [{category: x, phrases: [y]}]\n")
    (root / "suite.jsonl").write_text(json.dumps(VALID_CASE) + "\n")
    (root / "rubric.yaml").write_text(yaml.safe_dump(VALID_RUBRIC))
    (root / "releasegate.yaml").write_text(yaml.safe_dump(VALID_CONFIG))
    assert validate(root / "releasegate.yaml")[0] == 0  # the valid documents really are valid
    return root


def validate(config: Path) -> tuple[int, str]:
    """`releasegate validate -c CONFIG` in-process: (exit code, stderr). Anything else raised fails the test."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["validate", "-c", str(config), "--json"])
    return code, err.getvalue()


def assert_clean_outcome(code: int, err: str, workspace: Path) -> None:
    assert code in (0, 2), err
    if code == 2:
        assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
        # the message names the file at fault: one in the workspace, or a path a generated value points at
        # from it (`rubric: '..'` names the workspace's parent, which exists and is a directory)
        named = Path(err[len("error: "):].split(":", 1)[0])
        assert str(workspace) in err or (named.is_absolute() and named.exists()), f"the message names no file: {err}"
    assert "Traceback" not in err


def config_with(**changes) -> bytes:
    return yaml.safe_dump({**VALID_CONFIG, **changes}).encode()


def rubric_with(**changes) -> bytes:
    return yaml.safe_dump({**VALID_RUBRIC, **changes}).encode()


def case_with(**changes) -> bytes:
    return (json.dumps({**VALID_CASE, **changes}) + "\n").encode()


ALIAS_BOMB = b"a: &a [x, x, x, x, x, x, x, x, x]\n" + b"".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" .encode() + b", ".join([f"*{chr(97 + i)}".encode()] * 9) + b"]\n" for i in range(8))


# inputs that once escaped as tracebacks, kept as fixed examples on top of the generated ones
@PROPERTY
@example(data=ALIAS_BOMB)  # "billion laughs": 9**9 values once aliases are expanded
@example(data=b"a: &a [*a]\n")  # a recursive alias
@example(data=b"[" * 3000 + b"]" * 3000)  # nesting past the YAML composer's recursion
@example(data=config_with(seed="2021-13-45").replace(b"'2021-13-45'", b"2021-13-45"))  # a date that is no date
@example(data=config_with(seed="1" * 5000).replace(b"'" + b"1" * 5000 + b"'", b"1" * 5000))  # past int's digit limit
@example(data=config_with(target={"backend": "hf", "base": "x" * 300, "adapter": "y" * 300}))  # ENAMETOOLONG
@example(data=config_with(rubric="a\x00b"))  # a NUL in a path
@example(data=b"target: {backend: replay, responses: x}\nsuites: [{path: x}]\nrubric: x\n1: 2\n")  # int key
@example(data=config_with(rubric="\u2028"))  # a line separator in a file name: the message stays one line
@given(data=documents(VALID_CONFIG, CONFIG_KEYS))
def test_config_loader_never_crashes(workspace, data):
    path = workspace / "config-under-test.yaml"
    path.write_bytes(data)
    assert_clean_outcome(*validate(path), workspace)


@PROPERTY
@example(data=b'{"id": "a", "prompt": "p", "expected": ' + b"1" * 5000 + b"}\n")
@example(data=b"[" * 100000 + b"]" * 100000 + b"\n")
@example(data=b'{"id": "a", "prompt": "\\ud800", "expected": "x"}\n')  # a lone surrogate
@example(data=case_with(answer={"type": "regex", "pattern": "a{99999999999}"}))
@example(data=case_with(format=[{"type": "regex", "pattern": "(" * 2000 + ")" * 2000}]))
@example(data=case_with(format=[{"type": "json_schema", "schema": "x" * 300}]))
@given(data=documents(VALID_CASE, CASE_KEYS, lines=True))
def test_suite_loader_never_crashes(workspace, data):
    (workspace / "suite-under-test.jsonl").write_bytes(data)
    config = workspace / "suite-config.yaml"
    config.write_text(yaml.safe_dump({**VALID_CONFIG, "suites": [{"path": "suite-under-test.jsonl"}]}))
    assert_clean_outcome(*validate(config), workspace)


@PROPERTY
@example(data=rubric_with(forbidden=[{"category": "x", "regex": ["a{99999999999}"]}]))
@example(data=rubric_with(forbidden=[{"category": "x", "regex": ["(" * 2000 + ")" * 2000]}]))
@example(data=rubric_with(forbidden="x" * 300))
@example(data=rubric_with(evaluate=[{"name": "m", "module": "x" * 300}]))
@example(data=rubric_with(baseline={"run": "a\x00b"}))
@given(data=documents(VALID_RUBRIC, RUBRIC_KEYS))
def test_rubric_loader_never_crashes(workspace, data):
    (workspace / "rubric-under-test.yaml").write_bytes(data)
    config = workspace / "rubric-config.yaml"
    config.write_text(yaml.safe_dump({**VALID_CONFIG, "rubric": "rubric-under-test.yaml"}))
    assert_clean_outcome(*validate(config), workspace)


# -- the review CSV ----------------------------------------------------------------------------------------

def review_sample():
    from releasegate.record.review_outcome import output_hash
    from releasegate.review.sampler import ReviewItem, ReviewSample

    items = [ReviewItem(review_id=f"R-000000000{i}", case_id=f"c{i}", stratum="suite=s", sampled_as="stratum",
                        outcome="pass", output_hash=output_hash(f"out {i}")) for i in range(2)]
    return ReviewSample(run_id="r", created_at="t", policy={}, cases=2, required=[], items=items)


CSV_HEADER = ["review_id", "case_id", "output", "output_hash", "label", "reason", "reviewer"]
CSV_CELLS = st.sampled_from(["R-0000000000", "R-0000000001", "R-9", "out 0", "out 1", "approve", "reject", "ok", "",
                             "alice", "=1+1", "'=x", '"', "sha256:" + "0" * 64]) | st.text(max_size=12)


def csv_documents() -> st.SearchStrategy:
    from releasegate.record.review_outcome import output_hash

    hashes = st.sampled_from([output_hash("out 0"), output_hash("out 1")])
    rows = st.lists(st.lists(CSV_CELLS | hashes, min_size=0, max_size=8), max_size=5)
    header = st.permutations(CSV_HEADER).map(list) | st.lists(st.sampled_from(CSV_HEADER) | st.text(max_size=6), max_size=8)

    def render(head, body, delimiter, newline, bom) -> bytes:
        out = io.StringIO()
        import csv

        writer = csv.writer(out, delimiter=delimiter, lineterminator=newline)
        writer.writerow(head)
        writer.writerows(body)
        return (b"\xef\xbb\xbf" if bom else b"") + out.getvalue().encode("utf-8", "surrogatepass")

    structured = st.builds(render, header, rows, st.sampled_from([",", ";", "\t"]), st.sampled_from(["\r\n", "\n"]),
                           st.booleans())
    return st.binary(max_size=200) | st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")) | structured


def _review_csv_loader():
    try:
        from releasegate.review.csv_io import read_review_csv
    except ImportError:
        return None
    return read_review_csv


@pytest.mark.skipif(_review_csv_loader() is None, reason="releasegate.review has no read_review_csv yet")
@PROPERTY
@given(data=csv_documents())
def test_review_csv_loader_never_crashes(workspace, data):
    path = workspace / "review-under-test.csv"
    path.write_bytes(data)
    try:
        result = _review_csv_loader()(path, review_sample(), [], now="2024-01-01T00:00:00+00:00")
    except InputError as exc:
        message = str(exc)
        assert str(path) in message and "\n" not in message, message
    else:
        assert result.rows >= len(result.edits)
