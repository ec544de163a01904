"""The border's HTTP reader and what reads through it: every non-streaming reply from outside (the embeddings
endpoint, /metrics, loopback GETs) has a deadline however slowly it trickles, a byte bound, a JSON depth bound,
typed fields, and never follows a redirect. Each hostile embeddings mode of the stub, through `check`: the run
completes, the probe's error is recorded and its criteria are insufficient, nothing ends in a traceback or an
internal error, and the endpoint's password is in no file of the run, no line of the output and not in the job
summary."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from releasegate.backends import embeddings
from releasegate.backends.embeddings import EMBEDDINGS_FILE, _vectors, embed, source_fingerprint
from releasegate.border.http import HttpError, Limits, fetch, get_json, post_json
from releasegate.border.json_reader import NotJson, count, finite_float, json_depth, read_json
from releasegate.errors import ErrorKind, TargetError
from releasegate.inputs.cache_config import EmbeddingSource
from releasegate.inputs.config import load_config
from releasegate.inputs.config_secrets import masked_config, register_config_secrets, restore_from
from releasegate.inputs.target import TargetConfig
from releasegate.redaction import redact
from releasegate.run.server_scrape import Scraper
from releasegate.testing import StubBehaviour, StubServer
from releasegate.testing.hostile import EMBEDDINGS_MODES, Catcher
from test_cache_probe_check import make_project

PASSWORD = "pw-s3cret-9f2e71"


def embeddings_url(stub: StubServer, password: str = PASSWORD) -> str:
    return f"http://probe:{password}@127.0.0.1:{stub.port}/v1"


# -- the reader ---------------------------------------------------------------------------------------------------
def test_a_trickled_reply_ends_at_the_deadline_not_at_a_read_timeout():
    """One byte a second never trips a 10 s read timeout; the request's deadline ends it."""
    with StubServer(StubBehaviour(hostile="embeddings-trickle")) as stub:
        started = time.monotonic()
        with pytest.raises(HttpError) as caught:
            post_json(stub.base_url + "/embeddings", {"input": ["a"]}, limits=Limits(deadline_s=1.5))
        elapsed = time.monotonic() - started
    assert caught.value.kind == ErrorKind.TIMEOUT and "no whole reply within 1.5 s" in str(caught.value)
    assert elapsed < 1.5 * 3


@pytest.mark.parametrize("read_timeout_s", [10.0, 0.5])
def test_a_deadline_passed_is_the_deadline_whichever_timer_fires_first(monkeypatch, read_timeout_s):
    """A read timeout at or past the deadline (the socket's timeout is clamped to it) ends the reply at the same
    bound as the deadline's watchdog; with the watchdog late, as a busy machine may run its thread, the reply
    still fails as the deadline, never as a silence of a read timeout that had not run out."""
    import releasegate.border.http as border_http

    on_time = border_http._Watchdog.__init__
    monkeypatch.setattr(border_http._Watchdog, "__init__", lambda self, conn, seconds: on_time(self, conn, seconds + 60))
    with StubServer(StubBehaviour(hostile="metrics-trickle")) as stub, pytest.raises(HttpError) as caught:
        fetch(stub.base_url[:-3] + "/metrics", limits=Limits(deadline_s=0.5, read_timeout_s=read_timeout_s))
    assert caught.value.kind == ErrorKind.TIMEOUT and caught.value.detail == "no whole reply within 0.5 s"


def test_a_silence_before_the_deadline_is_a_stall():
    """A read timeout shorter than the deadline that runs out before it: the silence, not the deadline."""
    with StubServer(StubBehaviour(hostile="metrics-trickle")) as stub, pytest.raises(HttpError) as caught:
        fetch(stub.base_url[:-3] + "/metrics", limits=Limits(deadline_s=30, read_timeout_s=0.3))
    assert caught.value.kind == ErrorKind.STALL_TIMEOUT and caught.value.detail == "nothing received for 0.3 s"


def test_a_reply_without_end_stops_at_the_byte_bound():
    with StubServer(StubBehaviour(hostile="embeddings-huge")) as stub:
        with pytest.raises(HttpError) as caught:
            post_json(stub.base_url + "/embeddings", {"input": ["a"]}, limits=Limits(max_bytes=1 << 20))
    assert caught.value.kind == ErrorKind.RESPONSE_TOO_LARGE and "over 1048576 bytes" in str(caught.value)


def test_json_nested_past_the_depth_bound_is_a_bad_response_not_a_recursion_error():
    with StubServer(StubBehaviour(hostile="embeddings-deep")) as stub:
        with pytest.raises(HttpError) as caught:
            post_json(stub.base_url + "/embeddings", {"input": ["a"]})
    assert caught.value.kind == ErrorKind.BAD_RESPONSE and "nested deeper than 32 levels" in str(caught.value)


def test_json_depth_counts_structure_not_strings():
    assert json_depth(b'{"a": [[1], {"b": "[[[[[{{{"}]}') == 3
    assert json_depth(b"[" * 100_000 + b"]" * 100_000, stop_at=32) > 32 and json_depth(b"[]" * 9) == 1
    assert read_json('{"s": "]]]]"}') == {"s": "]]]]"}
    for bad, why in ((b"[" * 40 + b"]" * 40, "nested deeper"), (b"x" * 11, "over 10 bytes"), (b"{", "not JSON"),
                     (b'"\xff"', "not UTF-8")):
        with pytest.raises(NotJson, match=why):
            read_json(bad, max_bytes=10 if why.startswith("over") else 1000)
    assert [finite_float(v) for v in (True, "1", None, float("nan"), 10**400, 2)] == [None] * 5 + [2.0]
    assert [count(v, at_most=10) for v in (True, -1, 1.5, 11, "3", 3)] == [None] * 5 + [3]


def test_a_redirect_is_never_followed_and_names_the_origin_only():
    with Catcher() as catcher, StubServer(StubBehaviour(hostile="redirect-307", redirect_to=catcher.url)) as stub:
        with pytest.raises(HttpError) as caught:
            post_json(embeddings_url(stub) + "/embeddings", {"input": ["a"]}, headers={"X-Api-Key": "hdr-4a7c9e"})
    message = str(caught.value)
    assert caught.value.kind == ErrorKind.REDIRECT and f"redirect to {catcher.url}: not followed" in message
    assert PASSWORD not in message and "moved-token" not in message and "REDACTED@" in message
    assert catcher.heads == []  # nothing, credentials or not, reached the other origin


def test_userinfo_goes_as_basic_authorization_to_its_own_origin_only():
    with Catcher() as catcher:
        url = catcher.url.replace("http://", f"http://probe:{PASSWORD}@") + "/v1/models?x=1"
        reply = fetch(url, limits=Limits(deadline_s=5))
        deadline = time.monotonic() + 5
        while not catcher.heads and time.monotonic() < deadline:
            time.sleep(0.01)
    head = catcher.heads[0]
    assert reply.status == 404 and head.startswith("GET /v1/models?x=1 HTTP/1.1\r\n")
    assert "Authorization: Basic cHJvYmU6cHctczNjcmV0LTlmMmU3MQ==" in head and PASSWORD not in head


def _first_head(catcher: Catcher) -> str:
    deadline = time.monotonic() + 5
    while not catcher.heads and time.monotonic() < deadline:
        time.sleep(0.01)
    return catcher.heads[0]


def test_the_environments_proxy_is_used_but_never_for_loopback(monkeypatch):
    with Catcher() as proxy, StubServer() as stub:
        monkeypatch.setenv("HTTP_PROXY", f"http://px:proxy-pw-31a9@127.0.0.1:{proxy.port}")
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        assert fetch(stub.base_url + "/models").status == 200 and proxy.heads == []  # loopback: straight there
        with pytest.raises(HttpError) as in_clear:  # a credential never goes through a plain-http proxy
            fetch(f"http://probe:{PASSWORD}@models.example/v1/models")
        assert proxy.heads == [] and "NO_PROXY" in str(in_clear.value)
        reply = fetch("http://models.example/v1/models")
        head = _first_head(proxy)
        assert reply.status == 404 and head.startswith("GET http://models.example/v1/models HTTP/1.1\r\n")
        assert "Proxy-Authorization: Basic cHg6cHJveHktcHctMzFhOQ==" in head
        proxy.heads.clear()
        with pytest.raises(HttpError) as tunnel:
            fetch("https://models.example/v1/models", headers={"Authorization": "Bearer key-not-for-proxy"})
        head = _first_head(proxy)
    assert head.startswith("CONNECT models.example:443") and "key-not-for-proxy" not in head
    assert tunnel.value.kind == ErrorKind.CONNECTION_ERROR


def test_an_unreachable_or_malformed_url_is_one_error_kind():
    with pytest.raises(HttpError) as refused:
        get_json("http://127.0.0.1:9/x", limits=Limits(deadline_s=2))
    assert refused.value.kind == ErrorKind.CONNECTION_ERROR
    with pytest.raises(HttpError, match="not an http"):
        fetch("ftp://h/x")


def test_the_serving_commands_loopback_gets_read_through_the_border():
    from releasegate.export._serve import health_ok, http_get, http_get_json

    with StubServer() as stub, Catcher() as catcher:
        root = f"http://127.0.0.1:{stub.port}"
        assert health_ok(root) and http_get_json(root + "/health") == (200, {"status": "ok"})
        assert not health_ok(catcher.url) and http_get_json(catcher.url + "/slots") == (404, None)
    with pytest.raises(ConnectionError, match="127.0.0.1:9"):
        http_get("http://127.0.0.1:9/health", timeout=2)


def test_a_metrics_page_without_end_is_the_scrapes_error():
    with StubServer(StubBehaviour(hostile="metrics-huge")) as stub:
        scraper = Scraper(stub.base_url)
        scraper.scrape("before")
    assert scraper.samples == [] and "/metrics over 4194304 bytes" in scraper.error


# -- typed embeddings replies ---------------------------------------------------------------------------------------
def _data(*vectors, indexes=None):
    indexes = range(len(vectors)) if indexes is None else indexes
    return {"data": [{"index": i, "embedding": v} for i, v in zip(indexes, vectors)]}


@pytest.mark.parametrize(("body", "why"), [
    (_data(["0.1", "0.2"], ["0.3", "0.1"]), "not an embeddings list"),
    (_data([True, False], [False, True]), "not an embeddings list"),
    (_data([1.0, None], [1.0, 2.0]), "not an embeddings list"),
    (_data([1.0, 2.0], [1.0, 2.0, 3.0]), "differing dimensions"),
    (_data([1.0, 2.0], [2.0, 1.0], indexes=[0, 0]), "not each of 0..1 once"),
    (_data([1.0, 2.0], [2.0, 1.0], indexes=[0, 2]), "not each of 0..1 once"),
    (_data([1.0, 2.0], [2.0, 1.0], indexes=[0, True]), "not each of 0..1 once"),
    (_data([1.0, 2.0], [2.0, 1.0], indexes=[0, None]), "not each of 0..1 once"),
    (_data([0.0, 0.0], [1.0, 2.0]), "zero vector"),
    (_data([1.0, 2.0]), "returned 1 vectors for 2 texts"),
])
def test_an_embeddings_reply_of_another_type_is_the_probes_error(body, why):
    with pytest.raises(TargetError, match=why):
        _vectors(body, 2, "http://e/v1/embeddings")


def test_one_vector_for_different_texts_is_a_constant_not_an_embedding():
    same = _data([0.5, 0.5], [0.5, 0.5], [0.5, 0.5])
    with pytest.raises(TargetError, match="one vector for 3 different texts"):
        _vectors(same, 3, "u", distinct=3)
    assert len(_vectors(same, 3, "u", distinct=2)) == 3  # "Refund" and "refund": an uncased model's one vector


def test_a_well_typed_reply_is_read_in_index_order():
    body = {"data": [{"index": 1, "embedding": [0, 1]}, {"index": 0, "embedding": [1, 0.5]}]}
    assert _vectors(body, 2, "u") == [[1.0, 0.5], [0.0, 1.0]]
    assert _vectors({"data": [{"embedding": [1, 2]}, {"embedding": [2, 1]}]}, 2, "u") == [[1.0, 2.0], [2.0, 1.0]]


def test_usage_that_is_no_plausible_count_is_not_reported(tmp_path):
    with StubServer(StubBehaviour(hostile="embeddings-usage-lies")) as stub:
        lied = embed(["a refund", "a bill"], EmbeddingSource(base_url=stub.base_url, model="e"), None)
    with StubServer() as stub:
        honest = embed(["a refund", "a bill"], EmbeddingSource(base_url=stub.base_url, model="e"), None)
    assert lied.vectors == honest.vectors and lied.computed == 2
    assert lied.tokens is None and honest.tokens == 4  # 10^12 tokens for two texts: not reported


def test_malformed_cache_rows_are_embedded_again(tmp_path, monkeypatch):
    cache = tmp_path / EMBEDDINGS_FILE
    with StubServer() as stub:
        source = EmbeddingSource(base_url=stub.base_url, model="e")
        first = embed(["a", "b", "c", "d", "e", "f"], source, cache)
        key = lambda t: embeddings._key(source_fingerprint(source), t)  # noqa: E731
        bad = [{"key": key("a"), "vector": ["0.1"] * 8}, {"key": key("b"), "vector": [True] * 8},
               {"key": key("c"), "vector": [0.0] * 8}, {"key": key("d"), "vector": [1.0, 2.0]},
               {"key": 5, "vector": [1.0] * 8}]
        monkeypatch.setattr(embeddings, "CACHE_LINE_MAX", 50_000)
        cache.write_text("".join(json.dumps(r) + "\n" for r in bad) + "[" * 100_000 + "\n" + "1" * 120_000 + "\n"
                         + cache.read_text() + '{"key": "torn')
        again = embed(["a", "b", "c", "d", "e", "f"], source, cache)
        asked = stub.requests
    # the good rows (written last) stand for a..f; the bad ones before them are ignored
    assert again.vectors == first.vectors and again.computed == 0 and asked == 1
    cache.write_text("".join(json.dumps(r) + "\n" for r in bad))
    with StubServer() as stub:
        third = embed(["a", "b", "c", "d", "e", "f"], EmbeddingSource(base_url=stub.base_url, model="e"), cache)
    assert third.vectors == first.vectors and third.computed == 6


# -- through check: the corpus ---------------------------------------------------------------------------------------
CASES = [(f"Refund {i} please", "refund", "refund") for i in range(10)] * 2


def probe_project(tmp_path: Path, base_url: str, timeout_s: float = 2) -> Path:
    config = Path(make_project(tmp_path, 0.1, CASES))
    config.write_text(config.read_text().replace(
        "response_cache_probe: {mode: exact,",
        "response_cache_probe: {mode: semantic, threshold: 0.9, embeddings: "
        f"{{base_url: '{base_url}', model: e, timeout_s: {timeout_s}}},"))
    return config


def leaked(where: list[Path], texts: list[str], secret: str) -> list[str]:
    found = [str(p) for d in where for p in ([d] if d.is_file() else d.rglob("*"))
             if p.is_file() and secret.encode() in p.read_bytes()]
    return found + [f"output {i}" for i, t in enumerate(texts) if secret in t]


@pytest.mark.parametrize("mode", [None, *EMBEDDINGS_MODES, "redirect-307"])
def test_a_hostile_embeddings_endpoint_is_the_probes_recorded_error(mode, tmp_path, cli, monkeypatch):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    with Catcher() as catcher, StubServer(StubBehaviour(hostile=mode, redirect_to=catcher.url)) as stub:
        config = probe_project(tmp_path, embeddings_url(stub))
        started = time.monotonic()
        code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress", "--json")
        elapsed = time.monotonic() - started
    report = json.loads(out)
    probe = json.loads((tmp_path / "reports" / "r" / "run.json").read_text())["response_cache_probe"]
    assert "Traceback" not in err and code != 70 and report["metrics"]["accuracy"]["value"] == 1.0
    assert catcher.heads == []
    if mode in (None, "embeddings-usage-lies"):  # honest vectors: the probe runs (20 cases decide no bound)
        assert "error" not in probe and probe["rows"][0]["hits"] == 10
        assert probe["embeddings"]["tokens"] == (None if mode else 30)
        assert probe["embeddings"]["source"] == f"e at http://REDACTED@127.0.0.1:{stub.port}/v1"
    else:
        assert code == 3 and report["verdict"] == "INCONCLUSIVE", report["verdict_reason"]
        assert probe["rows"] == [] and probe["error"].startswith("the embeddings endpoint http://REDACTED@")
        assert "the probe failed: the embeddings endpoint" in report["response_cache_probe"]["recommended"]["why"]
        wrong = next(c for c in report["criteria"] if c["metric"] == "cache_wrong_hit_rate")
        assert wrong["verdict"] == "insufficient"
    if mode == "embeddings-trickle":  # the 2 s deadline ended it: the reply, a byte a second, would take 45 minutes
        assert "no whole reply within 2 s (timeout)" in probe["error"] and elapsed < 60
    assert summary.is_file()
    texts = [out, err]
    if mode is None:  # the terminal's report and validate's summary, too
        with StubServer() as stub:
            config = probe_project(tmp_path, embeddings_url(stub))
            texts += [*cli("check", "-c", config, "--run-id", "r2", "--no-progress")[1:], *cli("validate", "-c", config)[1:]]
        texts += [*cli("report", tmp_path / "reports" / "r2", "--format", "md")[1:]]
    assert leaked([tmp_path / "reports", summary], texts, PASSWORD) == []


# -- credentials anywhere in the config ------------------------------------------------------------------------------
def test_every_url_and_secret_named_key_is_registered_and_masked(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBED_KEY_VAR", "env-secret-77aa21")
    raw = {
        "target": {"backend": "openai", "base_url": "https://u:target-pw-1a2b@h/v1?sig=target-sig-3c4d",
                   "api_key_env": "EMBED_KEY_VAR", "secret_keys": ["org"], "extra_body": {"org": "org-val-5e6f"}},
        "judge": {"base_url": "http://judge:judge-pw-7a8b@j/v1", "headers": {"X-Token": {"env": "EMBED_KEY_VAR"}}},
        "response_cache_probe": {"embeddings": {"base_url": f"http://probe:{PASSWORD}@e/v1", "model": "m"}},
        "variants": [{"name": "v", "base_url": "http://v:variant-pw-9c0d@v/v1", "extra_body": {
            "meta": {"client_secret": "nested-secret-1e2f"}}}],
        "suites": [{"path": "s.jsonl", "prompt": "see http://example.com/a?token=x for details"}],
    }
    secrets = ["target-pw-1a2b", "target-sig-3c4d", "org-val-5e6f", "judge-pw-7a8b", PASSWORD, "variant-pw-9c0d",
               "nested-secret-1e2f"]
    masked = json.dumps(masked_config(raw))
    assert [s for s in secrets if s in masked] == []
    assert '"api_key_env": "EMBED_KEY_VAR"' in masked and '{"env": "EMBED_KEY_VAR"}' in masked  # names kept
    assert '"secret_keys": ["org"]' in masked and "see http://example.com/a?token=x for details" in masked
    register_config_secrets(raw)
    every = secrets + ["env-secret-77aa21"]
    assert redact(" ".join(every)) == " ".join(["[REDACTED]"] * len(every))
    assert redact("EMBED_KEY_VAR") == "EMBED_KEY_VAR"  # a variable's name is no secret


def test_a_resumed_run_gets_every_sections_credentials_back():
    source = {"target": {"backend": "replay", "responses": "r.jsonl"},
              "response_cache_probe": {"embeddings": {"base_url": f"http://probe:{PASSWORD}@e/v1", "model": "m"}},
              "judge": {"base_url": "http://j:judge-pw-7a8b@j/v1", "model": "m"}}
    snapshot = masked_config(source)
    assert PASSWORD not in json.dumps(snapshot)
    assert restore_from(snapshot, source) == source
    edited = {**snapshot, "judge": {"base_url": "http://other/v1", "model": "m"}}  # changed since: not restored
    assert restore_from(edited, source)["judge"] == edited["judge"]
    assert restore_from(edited, source)["response_cache_probe"] == source["response_cache_probe"]


def test_a_credential_from_an_extends_layer_or_a_set_is_masked_in_the_snapshot(tmp_path):
    probe = make_project(tmp_path, 0.1, CASES)
    base = tmp_path / "base.yaml"
    base.write_text(Path(probe).read_text().replace(
        "response_cache_probe: {mode: exact,",
        "response_cache_probe: {mode: semantic, threshold: 0.9, embeddings: "
        "{base_url: 'http://probe:layer-pw-4d5e@h/v1', model: e},"))
    (tmp_path / "c2.yaml").write_text("extends: base.yaml\n")
    config = load_config(tmp_path / "c2.yaml", overrides=("judge.base_url=http://j:set-pw-6f7a@j/v1",
                                                          "judge.model=m"))
    text = config.snapshot_text() + json.dumps(config.recorded_overrides()) + config.response_cache_probe.embeddings.describe()
    assert "layer-pw-4d5e" not in text and "set-pw-6f7a" not in text and "REDACTED@h/v1" in text
    assert redact("layer-pw-4d5e set-pw-6f7a") == "[REDACTED] [REDACTED]"


def test_a_variant_at_another_origin_gets_none_of_the_targets_credentials():
    from releasegate.pipeline.served_variants import _served_target

    target = TargetConfig(backend="openai", base_url="http://target:8000/v1", model="m", api_key_env="KEY",
                          headers={"X-Api-Key": "hdr"}, secret_keys=("org",),
                          extra_body={"temperature": 0, "api_key": "body-key", "org": "o-1",
                                      "meta": {"auth": {"token": "deep"}}, "lora": [1]})
    config = SimpleNamespace(target=target)
    endpoint = SimpleNamespace(server="endpoint", adapter=None, lora=None, parallel=1)
    elsewhere = _served_target(config, endpoint, "http://other:8000/v1", "m")
    assert elsewhere.extra_body == {"temperature": 0} and elsewhere.api_key_env is None and elsewhere.headers == {}
    same = _served_target(config, endpoint, "http://TARGET:8000/v2", "m")
    assert same.extra_body == {k: v for k, v in target.extra_body.items() if k != "lora"}
    assert same.api_key_env == "KEY" and same.headers == {"X-Api-Key": "hdr"}


# -- one way in -------------------------------------------------------------------------------------------------------
HTTP_CLIENTS = ("urllib.request", "http.client", "httpx", "httpx2", "requests", "urllib3", "aiohttp")
STREAM_CLIENTS = {
    # module -> why it talks HTTP outside border.http: the target's own streamed requests, timed and bounded by
    # `border.limits` (backends._bounds)
    "releasegate.backends._http": "the openai client's HTTP library",
    "releasegate.backends._openai_client": "the openai client, its transport trace and its byte bound",
    "releasegate.backends._retry": "httpx's exception classes, to classify a failed streamed request",
    "releasegate.backends._sse_client": "the lean streaming client (create_connection)",
    "releasegate.backends._kernel_rx": "the lean streaming client's plain-TCP connections (sock_connect, recvmsg)",
    "releasegate.backends._reach": "whether the target answers at all, one byte within the stall timeout",
}


def http_reads_outside_the_border() -> list[str]:
    import ast

    from test_architecture import MODULES

    found = []
    for name, (path, _) in MODULES.items():
        if name.startswith(("releasegate.border.", "releasegate.testing.")) or name in STREAM_CLIENTS:
            continue  # the border itself, and the stub server (a server, not a reader)
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            names += [node.attr] if isinstance(node, ast.Attribute) and node.attr in (
                "create_connection", "open_connection", "urlopen") else []
            if isinstance(node, ast.ImportFrom) and node.module == "_http":
                names.append("httpx")
            found += [f"{name}:{node.lineno} {n}" for n in names
                      if n.split(".")[0] in HTTP_CLIENTS or n in HTTP_CLIENTS or n in (
                          "create_connection", "open_connection", "urlopen")]
    return found


def test_every_http_read_goes_through_the_border():
    """No module but the border (and the target's own streaming clients, listed with their reason) opens an HTTP
    connection: a new reader of an outside reply gets the border's deadline, byte, depth and redirect rules."""
    assert http_reads_outside_the_border() == []
