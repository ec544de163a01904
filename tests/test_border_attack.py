"""An outsider's attack on the border (docs/guarantees.md rule 21): each test is one hostile input that the
border was meant to hold, with what must happen. Those that fail today are marked xfail(strict=True) with what
happens instead, so the file is green now and turns red (XPASS) once the hole is closed."""

from __future__ import annotations

import json
import time

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


@pytest.mark.xfail(strict=True, reason="config_secrets._URL.fullmatch needs the whole value to be scheme://\\S+: "
                   "a URL with a blank before it or a newline after it is neither masked nor registered")
@pytest.mark.parametrize("pad", PADDED)
def test_a_padded_url_in_any_section_is_masked_and_registered(pad):
    url = pad.format(f"http://probe:{PASSWORD}@h/v1")
    raw = {"response_cache_probe": {"embeddings": {"base_url": url, "model": "m"}},
           "judge": {"base_url": url, "model": "m"}, "variants": [{"name": "v", "base_url": url}]}
    assert PASSWORD not in json.dumps(masked_config(raw))
    register_config_secrets(raw)
    assert redact(PASSWORD) == "[REDACTED]"


@pytest.mark.xfail(strict=True, reason="a padded embeddings base_url is used (urlsplit strips the pad) but its "
                   "password is never registered: it is written whole into the run's config.yaml")
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
@pytest.mark.xfail(strict=True, reason="border.http sends a plain-http URL through HTTP_PROXY in absolute form with "
                   "the userinfo's Basic authorization (and every header) in it: the proxy, another origin, gets "
                   "the password (base64 only)")
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
        head = _first_head(proxy)
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


@pytest.mark.xfail(strict=True, reason="outputs.write_output_file writes `.NAME.tmp` with Path.write_bytes: a FIFO "
                   "there blocks the open() forever (no O_NONBLOCK, no check), so `report -o` hangs")
def test_a_fifo_at_the_outputs_temp_name_is_refused_not_waited_on(finished, tmp_path):
    import os
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / ".o.md.tmp")
    result = _releasegate("report", finished, "--format", "md", "-o", out / "o.md")
    assert result is not None, "hung writing --output"
    assert result[0] in (0, 2) and "Traceback" not in result[2], result


@pytest.mark.xfail(strict=True, reason="RunStore.write_text writes `.report.json.tmp` with Path.write_text: a FIFO "
                   "left in a run directory blocks `gate RUN` forever")
def test_a_fifo_at_a_run_files_temp_name_is_refused_not_waited_on(finished):
    import os
    os.mkfifo(finished / ".report.json.tmp")
    result = _releasegate("gate", finished)
    assert result is not None, "hung writing report.json"
    assert result[0] != 70 and "Traceback" not in result[2], result


# -- GITHUB_STEP_SUMMARY naming a run's own evidence ------------------------------------------------------------------
@pytest.mark.xfail(strict=True, reason="append_step_summary appends wherever GITHUB_STEP_SUMMARY points, a run's "
                   "records.jsonl included (`-o` is refused there, the summary is not): the journal then holds "
                   "Markdown, `gate RUN` is exit 2 'corrupt record', and `verify` still says nothing changed")
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
@pytest.mark.xfail(strict=True, reason="backends.embeddings reads its cache through open_regular (a FIFO: ignored) "
                   "but appends the new vectors with path.open('a'): a FIFO at RUN/embeddings.jsonl blocks the "
                   "probe forever, whatever its timeout_s")
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
