"""An outsider's attack on the border (docs/guarantees.md rule 21): each test is one hostile input that the
border was meant to hold, with what must happen. Those that fail today are marked xfail(strict=True) with what
happens instead, so the file is green now and turns red (XPASS) once the hole is closed."""

from __future__ import annotations

import json

import pytest

from releasegate.inputs.config_secrets import masked_config, register_config_secrets
from releasegate.redaction import redact
from releasegate.testing import StubServer
from test_border_http import PASSWORD, leaked, probe_project

# A URL that Python's urlsplit (and so border.http, httpx, EmbeddingSource) reads as the same URL, userinfo and
# all, but that is not `scheme://\S+` as a whole: YAML's block scalars end in a newline, a quoted value may start
# with a blank.
PADDED = [pytest.param(" {}", id="leading-space"), pytest.param("{}\n", id="trailing-newline"),
          pytest.param("\t{}", id="leading-tab")]


@pytest.mark.parametrize("pad", PADDED)
def test_a_padded_url_in_any_section_is_masked_and_registered(pad):
    url = pad.format(f"http://probe:{PASSWORD}@h/v1")
    raw = {"response_cache_probe": {"embeddings": {"base_url": url, "model": "m"}},
           "judge": {"base_url": url, "model": "m"}, "variants": [{"name": "v", "base_url": url}]}
    assert PASSWORD not in json.dumps(masked_config(raw))
    register_config_secrets(raw)
    assert redact(PASSWORD) == "[REDACTED]"


@pytest.mark.parametrize("pad", PADDED)
def test_a_padded_embeddings_url_leaks_nothing_through_check(pad, tmp_path, cli):
    with StubServer() as stub:
        url = pad.format(f"http://probe:{PASSWORD}@127.0.0.1:{stub.port}/v1")
        config = probe_project(tmp_path, "URL")
        config.write_text(config.read_text().replace("'URL'", json.dumps(url)))
        code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress", "--json")
    assert code != 70 and "Traceback" not in err, err
    assert leaked([tmp_path / "reports"], [out, err], PASSWORD) == []


# -- credentials through the environment's proxy ---------------------------------------------------------------------
def test_a_urls_password_never_reaches_the_environments_proxy(monkeypatch):
    import base64

    from releasegate.border.http import HttpError, fetch
    from releasegate.testing.hostile import Catcher
    from test_border_http import _first_head

    with Catcher() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        try:
            fetch(f"http://probe:{PASSWORD}@models.example/v1/models")
        except HttpError:
            pass  # refusing to send a credential through a proxy in the clear is a fine answer too
        head = _first_head(proxy) if proxy.heads else ""  # refused before a byte went: nothing reached it
    basic = base64.b64encode(f"probe:{PASSWORD}".encode()).decode("ascii")
    assert basic not in head and PASSWORD not in head, head


# -- a FIFO planted where an atomic write puts its temp file -----------------------------------------------------------
def _releasegate(*args, timeout: float = 45):
    import os
    import subprocess
    import sys
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("GITHUB_STEP_SUMMARY", None)
    try:
        done = subprocess.run([sys.executable, "-m", "releasegate", *map(str, args)], capture_output=True,
                              text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def finished(tmp_path, cli):
    from test_hostile_files import replay_project
    config = replay_project(tmp_path)
    assert cli("check", "-c", config, "--run-id", "r", "--no-progress")[0] == 0
    return tmp_path / "reports" / "r"


def test_a_fifo_at_the_outputs_temp_name_is_refused_not_waited_on(finished, tmp_path):
    import os
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / ".o.md.tmp")
    result = _releasegate("report", finished, "--format", "md", "-o", out / "o.md")
    assert result is not None, "hung writing --output"
    assert result[0] in (0, 2) and "Traceback" not in result[2], result


def test_a_fifo_at_a_run_files_temp_name_is_refused_not_waited_on(finished):
    import os
    os.mkfifo(finished / ".report.json.tmp")
    result = _releasegate("gate", finished)
    assert result is not None, "hung writing report.json"
    assert result[0] != 70 and "Traceback" not in result[2], result


# -- GITHUB_STEP_SUMMARY naming a run's own evidence ------------------------------------------------------------------
def test_a_job_summary_naming_a_run_file_never_writes_into_the_run(tmp_path, cli, monkeypatch):
    from test_hostile_files import replay_project
    config = replay_project(tmp_path)
    journal = tmp_path / "reports" / "r" / "records.jsonl"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(journal))
    code, _, err = cli("check", "-c", config, "--run-id", "r", "--no-progress")
    assert code == 0, err
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    assert "<details>" not in journal.read_text()
    assert cli("gate", journal.parent)[0] == 0


# -- a FIFO where the probe keeps its embeddings ------------------------------------------------------------------------
def test_a_fifo_as_the_embeddings_cache_is_not_waited_on(tmp_path):
    import os
    import threading

    from releasegate.backends.embeddings import embed
    from releasegate.inputs.cache_config import EmbeddingSource

    cache = tmp_path / "embeddings.jsonl"
    os.mkfifo(cache)
    outcome: list = []

    def probe():
        try:
            outcome.append(embed(["a b", "c d", "e f"], EmbeddingSource(base_url=stub.base_url, model="e",
                                                                         timeout_s=2), cache))
        except Exception as exc:  # noqa: BLE001 - any error that names the file is an answer; a hang is not
            outcome.append(exc)

    with StubServer() as stub:
        worker = threading.Thread(target=probe, daemon=True)
        worker.start()
        worker.join(30)
        hung = worker.is_alive()
        if hung:  # let the blocked writer go: a reader on the FIFO, then the thread ends
            reader = os.open(cache, os.O_RDONLY | os.O_NONBLOCK)
            worker.join(10)
            os.close(reader)
    assert not hung, "embed() waited on a FIFO past 30 s (its deadline is 2 s)"


# -- JSON whose depth count is quadratic ----------------------------------------------------------------------------------
# An unterminated string of escaped quotes: json_reader._STRING tries a match at every quote, each running to the end
# of the text before it fails, so json_depth (the border's one depth count, run before any parser) takes time
# quadratic in the text: 80 KB took 23 s here; a 16 MiB reply, inside every byte bound, would take days. The count runs
# after border.http's deadline has let the reply in, and on every stored file, suite line and journal line too.
QUADRATIC = 'b"\\"" + b"\\\\\\"" * {n}'

_DEPTH_SCRIPT = """
import sys, time
from releasegate.border.json_reader import json_depth
data = {data}
started = time.monotonic()
json_depth(data, stop_at=32)
print(time.monotonic() - started)
"""

_REPLY_SCRIPT = """
import socket, threading, time
from releasegate.border.http import HttpError, Limits, post_json
body = {data}
srv = socket.create_server(("127.0.0.1", 0))
def serve():
    conn, _ = srv.accept()
    conn.recv(65536)
    conn.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(body) + body)
    time.sleep(120)  # never close first: a reset would end the client's read before it counts
threading.Thread(target=serve, daemon=True).start()
started = time.monotonic()
try:
    post_json(f"http://127.0.0.1:{{srv.getsockname()[1]}}/v1/embeddings", {{"input": ["a"]}},
              limits=Limits(deadline_s=2, read_timeout_s=2))
except HttpError as exc:
    print(exc.kind)
print(time.monotonic() - started)
"""


def _python(script: str, timeout: float):
    import os
    import subprocess
    import sys
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    try:
        return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout,
                              env=env)
    except subprocess.TimeoutExpired:
        return None


def test_the_depth_count_is_linear_in_the_text():
    done = _python(_DEPTH_SCRIPT.format(data=QUADRATIC.format(n=100_000)), timeout=20)
    assert done is not None, "json_depth took more than 20 s over 200 KB"
    assert done.returncode == 0, done.stderr


def test_an_embeddings_reply_that_is_slow_to_count_still_ends_near_its_deadline():
    done = _python(_REPLY_SCRIPT.format(data=QUADRATIC.format(n=100_000)), timeout=30)
    assert done is not None, "post_json with a 2 s deadline was still counting after 30 s"
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


def test_a_job_summary_naming_an_input_never_writes_into_it(tmp_path, cli, monkeypatch):
    from test_hostile_files import replay_project
    config = replay_project(tmp_path)
    rubric = tmp_path / "rubric.yaml"
    before = rubric.read_text()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(rubric))
    assert cli("check", "-c", config, "--run-id", "r", "--no-progress")[0] == 0
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    assert rubric.read_text() == before


# -- an embeddings base_url with a query ----------------------------------------------------------------------------------
def test_an_embeddings_base_url_with_a_query_posts_to_its_embeddings_path():
    from releasegate.backends.embeddings import embed
    from releasegate.errors import TargetError
    from releasegate.inputs.cache_config import EmbeddingSource
    from releasegate.testing.hostile import Catcher
    from test_border_http import _first_head

    with Catcher() as server:
        with pytest.raises(TargetError):  # the catcher answers 404
            embed(["a b", "c d"], EmbeddingSource(base_url=server.url + "/v1?api-version=2", model="e", timeout_s=5),
                  None)
        head = _first_head(server)
    assert head.startswith("POST /v1/embeddings?api-version=2 HTTP/1.1\r\n"), head.splitlines()[0]


# -- a FIFO as reviews.jsonl ------------------------------------------------------------------------------------------------
def test_a_fifo_as_reviews_jsonl_is_refused_by_review_import(finished, cli):
    import csv
    import os
    assert cli("review", "export", finished)[0] == 0
    queue = finished / "review_queue.csv"
    with queue.open(newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.reader(fh))
    header = rows[0]
    for row in rows[1:]:
        if len(row) == len(header):
            row[header.index("label")], row[header.index("reviewer")] = "pass", "me"
    with queue.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    os.mkfifo(finished / "reviews.jsonl")
    result = _releasegate("review", "import", finished, queue)
    assert result is not None, "review import hung on a FIFO as reviews.jsonl"
    assert result[0] == 2 and "reviews.jsonl" in result[2], result


# -- a FIFO as corpus_scores.jsonl ---------------------------------------------------------------------------------------------
def test_a_fifo_as_the_corpus_journal_is_not_waited_on(tmp_path):
    import os
    import threading

    from releasegate.record.records import RunDir
    from releasegate.scorers.stored import CORPUS_JOURNAL, CorpusScores

    run = RunDir(tmp_path)
    os.mkfifo(tmp_path / CORPUS_JOURNAL)
    scores = CorpusScores.of(run)
    scores.add("sha256:x", "bleu", 0.5, 10)
    worker = threading.Thread(target=lambda: _quiet(scores.save, run), daemon=True)
    worker.start()
    worker.join(20)
    hung = worker.is_alive()
    if hung:
        reader = os.open(tmp_path / CORPUS_JOURNAL, os.O_RDONLY | os.O_NONBLOCK)
        worker.join(10)
        os.close(reader)
    assert not hung, "CorpusScores.save waited on a FIFO for 20 s"


def _quiet(call, *args):
    try:
        call(*args)
    except Exception:  # noqa: BLE001 - an error naming the file is an answer; a hang is not
        pass


# -- a target base_url whose path is not Latin-1 -------------------------------------------------------------------------------
def test_a_base_url_path_that_is_not_latin1_is_exit_2_or_a_target_error(tmp_path, cli):
    from test_hostile_files import replay_project
    config = replay_project(tmp_path)
    with StubServer() as stub:
        config.write_text(config.read_text().replace(
            "target: {backend: replay, responses: responses.jsonl}",
            "target: {backend: openai, base_url: '" + stub.base_url + "/\u20ac', model: m}"))
        code, _, err = cli("check", "-c", config, "--run-id", "r", "--no-progress")
    assert code != 70 and "internal error" not in err, err


# -- a credential variable holding a line break ----------------------------------------------------------------------------------
def test_a_key_with_a_line_break_never_splits_the_request_head(tmp_path, cli, monkeypatch):
    from releasegate.testing.hostile import Catcher
    from test_hostile_files import replay_project
    config = replay_project(tmp_path)
    monkeypatch.setenv("RG_ATTACK_KEY", "sk-abcdefgh\r\nX-Injected: 1")
    with Catcher() as server:
        config.write_text(config.read_text().replace(
            "target: {backend: replay, responses: responses.jsonl}",
            "target: {backend: openai, base_url: '" + server.url + "/v1', model: m, api_key_env: RG_ATTACK_KEY, "
            "retries: 0}"))
        code, _, err = cli("check", "-c", config, "--run-id", "r", "--no-progress")
        heads = list(server.heads)
    assert code != 70 and "internal error" not in err, err
    assert not any("\r\nX-Injected: 1\r\n" in h for h in heads), [h for h in heads if "X-Injected" in h][:1]


# -- the embeddings fingerprint hashes the password ------------------------------------------------------------------------------
def test_the_embeddings_fingerprint_holds_no_credential():
    from releasegate.backends.embeddings import source_fingerprint
    from releasegate.inputs.cache_config import EmbeddingSource
    one = source_fingerprint(EmbeddingSource(base_url=f"http://probe:{PASSWORD}@h/v1", model="e"))
    other = source_fingerprint(EmbeddingSource(base_url="http://probe:another-pw-123456@h/v1", model="e"))
    assert one == other
