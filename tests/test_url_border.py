"""Every URL a user gives is parsed once where it comes in (`border.http.url_problem`): a URL urllib cannot
split (an unclosed IPv6 bracket, a port past 65535 or not a number) is one line naming the field, exit 2, at
each way in: the target's and the embeddings' base_url in a config, `init --endpoint`, `promote --webhook` and
`promote --mlflow-uri`. Never exit 70."""

from __future__ import annotations

import pytest

from conftest import run_subprocess
from releasegate.border.http import url_problem

BROKEN = ["http://[::1", "http://[::1]:99999/v1", "http://localhost:abc/v1", "http://h:65536/v1", "https://[zz]/v1"]


@pytest.mark.parametrize("url", BROKEN)
def test_a_url_urllib_cannot_split_is_named(url):
    assert url_problem(url) is not None and url_problem(url).startswith("not a URL")


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/v1", "https://user:pw@host.example/v1?x=1", "http://[::1]:80"])
def test_a_good_url_is_one(url):
    assert url_problem(url) is None


def _one_line(out, *needles: str) -> None:
    lines = [line for line in out.stderr.strip().splitlines() if line.strip()]
    assert out.returncode == 2 and len(lines) == 1, out.stderr
    assert all(n in lines[0] for n in needles), lines[0]


@pytest.mark.parametrize("url", BROKEN)
def test_the_targets_base_url(project, url):
    config = project / "releasegate.yaml"
    text = config.read_text().replace("  backend: replay\n", f'  backend: openai\n  base_url: "{url}"\n  model: m\n#')
    config.write_text(text)
    _one_line(run_subprocess("validate", "-c", str(config), cwd=project), "target.base_url", "not a URL")


@pytest.mark.parametrize("url", BROKEN[:3])
def test_the_embeddings_base_url(project, url):
    config = project / "releasegate.yaml"
    config.write_text(config.read_text() + "response_cache_probe:\n  mode: semantic\n  threshold: 0.9\n  embeddings: "
                      f'{{base_url: "{url}", model: e}}\n')
    _one_line(run_subprocess("validate", "-c", str(config), cwd=project), "embeddings", "base_url", "not a URL")


@pytest.mark.parametrize("url", BROKEN[:3])
def test_init_endpoint(tmp_path, url):
    _one_line(run_subprocess("init", str(tmp_path / "p"), "--endpoint", url, cwd=tmp_path), "--endpoint", "not a URL")


@pytest.mark.parametrize("url", BROKEN[:3])
def test_promote_webhook_and_mlflow_uri(tmp_path, url):
    _one_line(run_subprocess("promote", str(tmp_path), "--webhook", url, "--key", "k", cwd=tmp_path),
              "--webhook", "not a URL")
    _one_line(run_subprocess("promote", str(tmp_path), "--mlflow-model", "m", "--alias", "a", "--mlflow-uri", url,
                             cwd=tmp_path), "--mlflow-uri", "not a URL")
