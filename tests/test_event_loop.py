"""The client's event loop: uvloop by default where it is installed, asyncio's with RELEASEGATE_EVENT_LOOP=asyncio;
the same run on either loop, against the stub server, says which loop measured it."""

from __future__ import annotations

import sys

import pytest

from releasegate.backends._dispatch import EVENT_LOOP_ENV, loop_factory
from releasegate.errors import InputError
from releasegate.testing import StubBehaviour, StubServer
from test_client_lateness import check, project

LOOPS = ["asyncio", "uvloop"]


def test_asyncio_is_the_way_back(monkeypatch):
    monkeypatch.setenv(EVENT_LOOP_ENV, "asyncio")
    assert loop_factory() is None
    assert loop_factory(" AsyncIO ") is None


def test_uvloop_is_the_default_where_it_is_installed(monkeypatch):
    uvloop = pytest.importorskip("uvloop")
    monkeypatch.delenv(EVENT_LOOP_ENV, raising=False)
    assert loop_factory() is uvloop.new_event_loop
    monkeypatch.setenv(EVENT_LOOP_ENV, "")
    assert loop_factory() is uvloop.new_event_loop


def test_without_uvloop_auto_is_asyncio_and_asking_for_it_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "uvloop", None)  # `import uvloop` now raises ImportError
    monkeypatch.delenv(EVENT_LOOP_ENV, raising=False)
    assert loop_factory() is None
    with pytest.raises(InputError, match="uvloop is not installed") as raised:
        loop_factory("uvloop")
    assert raised.value.exit_code == 2


def test_an_unknown_loop_is_refused(monkeypatch):
    monkeypatch.setenv(EVENT_LOOP_ENV, "trio")
    with pytest.raises(InputError, match="RELEASEGATE_EVENT_LOOP='trio' is not an event loop"):
        loop_factory()


@pytest.mark.parametrize("loop", LOOPS)
def test_the_lean_client_runs_on_either_loop(tmp_path, cli, monkeypatch, loop):
    if loop == "uvloop":
        pytest.importorskip("uvloop")
    monkeypatch.setenv(EVENT_LOOP_ENV, loop)
    with StubServer(StubBehaviour(ttft_ms=10, itl_ms=2, tokens=6)) as stub:
        config = project(tmp_path, stub.base_url, load="load: {concurrency: 4, requests: 12, warmup: 2}\n")
        code, run, info, err = check(cli, config)
    assert code == 0, err
    for summary in (info["client"], info["load_phase"]["client"]):
        assert summary["client"] == "lean" and summary["event_loop"] == loop
        assert summary["loop_lag_ms"]["n"] > 0
        # the receive dispatch delay is observable on asyncio's loop only: said, not guessed
        assert (summary["rx_dispatch_ms"] is None) is (loop == "uvloop")
    records = run.read_records()
    assert len(records) == 6 and all(r.output and r.error is None for r in records)


def test_check_with_an_unknown_loop_is_one_line_and_exit_2(tmp_path, cli, monkeypatch):
    monkeypatch.setenv(EVENT_LOOP_ENV, "trio")
    with StubServer(StubBehaviour(ttft_ms=1, itl_ms=1, tokens=2)) as stub:
        code, _, err = cli("check", "-c", project(tmp_path, stub.base_url), "--run-id", "r", "--no-progress")
        sent = stub.requests
    assert code == 2
    assert "RELEASEGATE_EVENT_LOOP='trio' is not an event loop" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert sent == 0  # refused before any request
