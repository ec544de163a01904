"""The border's proxy rule holds for every client: a plain-http proxy the environment names (HTTP_PROXY,
http_proxy, ALL_PROXY) never receives a credential. The openai client (httpx honours those variables on its
own) refuses to send the target's API key through one, and `promote` refuses to send MLflow's password through
one: one line, exit 2, and nothing reaches the proxy. NO_PROXY, https (tunnelled) and a loopback host are fine."""

from __future__ import annotations

import json
import time

import pytest

from releasegate.backends._openai_client import make_openai_client
from releasegate.border.http import proxy_in_clear
from releasegate.errors import InputError
from releasegate.inputs.target import TargetConfig
from releasegate.testing.hostile import Catcher
from test_promote import promote, released  # noqa: F401 - the fixture

API_KEY = "sk-target-key-5d1e0c"
MLFLOW_PASSWORD = "mlflow-pw-77c3a9"
PROXY_VARIABLES = ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]


@pytest.fixture
def no_proxy_env(monkeypatch):
    for name in [*PROXY_VARIABLES, "HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"]:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _settled(catcher: Catcher) -> list[str]:
    """What reached the catcher, once anything sent had time to land (a refusal sends nothing at all)."""
    time.sleep(0.2)
    return catcher.heads


@pytest.mark.parametrize("variable", PROXY_VARIABLES)
def test_the_rule_sees_every_proxy_variable(no_proxy_env, variable):
    no_proxy_env.setenv(variable, "http://proxy.example:3128")
    assert proxy_in_clear("http://models.example/v1") == "http://proxy.example:3128"
    for fine in ("https://models.example/v1", "http://127.0.0.1:8080/v1", "http://localhost/v1"):
        assert proxy_in_clear(fine) is None, fine
    no_proxy_env.setenv("NO_PROXY", "models.example")
    assert proxy_in_clear("http://models.example/v1") is None


@pytest.mark.parametrize("variable", PROXY_VARIABLES)
def test_the_openai_client_never_sends_the_api_key_through_a_plain_http_proxy(no_proxy_env, variable):
    target = TargetConfig(backend="openai", base_url="http://models.example/v1", model="m", client="openai")
    with Catcher() as proxy:
        no_proxy_env.setenv(variable, proxy.url)
        with pytest.raises(InputError) as caught:
            make_openai_client(target, API_KEY)
        assert "NO_PROXY" in str(caught.value) and caught.value.field == "target.base_url"
        assert _settled(proxy) == []
    no_proxy_env.setenv("NO_PROXY", "models.example")
    make_openai_client(target, API_KEY)  # the host bypasses the proxy: straight there
    no_proxy_env.delenv("NO_PROXY")
    make_openai_client(target, "not-needed")  # no key, no header: nothing to leak


def test_check_with_the_openai_client_refuses_before_a_byte_goes(project, cli, no_proxy_env):
    """Through `check`: exit 2 in one line, and the proxy saw nothing (the key in no request head)."""
    config = project / "releasegate.yaml"
    text = config.read_text().replace("  backend: replay\n", "  backend: openai\n  base_url: http://models.example/v1"
                                      "\n  model: m\n  client: openai\n  api_key_env: TARGET_KEY\n#")
    config.write_text(text)
    no_proxy_env.setenv("TARGET_KEY", API_KEY)
    with Catcher() as proxy:
        no_proxy_env.setenv("HTTP_PROXY", proxy.url)
        code, out, err = cli("check", "-c", config, "--no-progress")
        heads = _settled(proxy)
    assert code == 2 and "NO_PROXY" in err and "Traceback" not in err, err
    assert [h for h in heads if API_KEY in h] == [] and API_KEY not in out + err


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "ALL_PROXY"])
def test_promote_never_sends_mlflows_password_through_a_plain_http_proxy(released, cli, no_proxy_env, variable):  # noqa: F811
    pytest.importorskip("mlflow")
    run, _ = released
    no_proxy_env.setenv("MLFLOW_TRACKING_USERNAME", "ci")
    no_proxy_env.setenv("MLFLOW_TRACKING_PASSWORD", MLFLOW_PASSWORD)
    with Catcher() as proxy:
        no_proxy_env.setenv(variable, proxy.url)
        code, out, err = promote(cli, run, "--mlflow-model", "bot", "--alias", "prod", "--mlflow-uri",
                                 "http://registry.example:5000", "--json")
        heads = _settled(proxy)
    assert code == 2 and "NO_PROXY" in err and "--mlflow-uri" in err, err
    assert heads == [] and MLFLOW_PASSWORD not in out + err
    assert json.dumps(heads).count("Authorization") == 0


def test_a_socks_proxy_counts_for_the_rule_but_the_reader_never_speaks_http_to_it(no_proxy_env):
    """ALL_PROXY=socks5://...: the openai client (httpx) would tunnel through it in clear, so a credential is
    refused; the border's reader cannot speak SOCKS, and goes straight to the server rather than send HTTP there."""
    from urllib.parse import urlsplit

    from releasegate.border.http import _proxy

    no_proxy_env.setenv("ALL_PROXY", "socks5://127.0.0.1:1080")
    assert proxy_in_clear("http://models.example/v1") == "socks5://127.0.0.1:1080"
    assert _proxy(urlsplit("http://models.example/v1")) is None
