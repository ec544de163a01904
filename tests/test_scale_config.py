"""The `scale:` section: what it accepts, what it refuses (one line, exit 2), and Ray missing."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import HANG_S, ROOT

DEMO = ROOT / "releasegate.yaml"


def config_with(tmp_path, scale: str, *, target: str | None = None, load: str = ""):
    text = DEMO.read_text()
    for rel in ("models/demo/base", "models/demo/adapters/good", "suites/demo/", "rubrics/demo.yaml"):
        text = text.replace(f" {rel}", f" {ROOT}/{rel}")
    if target is not None:
        text = text.split("generation:", 1)[1]
        text = f"target: {target}\ngeneration:{text}"
    path = tmp_path / "releasegate.yaml"
    path.write_text(text + f"scale: {scale}\n" + (f"load: {load}\n" if load else ""))
    return path


def test_a_scale_section_loads_with_its_defaults(tmp_path):
    pytest.importorskip("ray")
    from releasegate.inputs.config import load_config

    config = load_config(config_with(tmp_path, "{engine: ray}"))
    assert (config.scale.workers, config.scale.address, config.scale.cpus_per_worker, config.scale.gpus_per_worker) == (
        2, "none", 1.0, 0.0)
    config = load_config(config_with(tmp_path, "{engine: ray, workers: 8, address: auto, gpus_per_worker: 1}"))
    assert (config.scale.workers, config.scale.address, config.scale.gpus_per_worker) == (8, "auto", 1)


@pytest.mark.parametrize("scale, target, load, message", [
    ("{engine: spark}", None, "", "scale.engine"),
    ("{engine: ray, workers: 0}", None, "", "scale.workers"),
    ("{engine: ray, address: 'http://head:8265'}", None, "", "scale.address"),
    ("{engine: ray, cpus_per_worker: 0}", None, "", "scale.cpus_per_worker"),
    ("{engine: ray, nodes: 3}", None, "", "nodes"),
    ("{engine: ray}", "{backend: replay, responses: r.jsonl}", "", "nothing to scale"),
    ("{engine: ray, workers: 2}", f"{{backend: hf, base: {ROOT}/models/demo/base, device: cuda}}", "",
     "scale.gpus_per_worker"),
    ("{engine: ray}", "{backend: openai, base_url: 'http://127.0.0.1:1/v1', model: m}", "", "has no load:"),
    ("{engine: ray}", "{backend: openai, base_url: 'http://127.0.0.1:1/v1', model: m}",
     "{sweep: {start_rps: 1, max_rps: 4, slo: {ttft_ms_p95: 500}}}", "capacity sweep"),
])
def test_a_scale_that_cannot_work_is_refused_in_one_line(tmp_path, cli, scale, target, load, message):
    if target and "replay" in target:
        (tmp_path / "r.jsonl").write_text("")
    code, _, err = cli("validate", "-c", config_with(tmp_path, scale, target=target, load=load))
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err


def test_without_ray_a_scaled_config_says_how_to_install_it(tmp_path):
    config = config_with(tmp_path, "{engine: ray, workers: 2}")
    for command in (["validate", "-c", config], ["check", "-c", config, "--no-progress"]):
        probe = ("import sys; sys.modules['ray'] = None\n"  # as if it were not installed
                 "from releasegate.cli import main\n"
                 f"sys.exit(main({[str(a) for a in command]!r}))\n")
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=HANG_S, cwd=tmp_path)
        assert out.returncode == 2, out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and "pip install 'releasegate[ray]'" in lines[0] and "scale.engine" in lines[0], lines
    assert not (tmp_path / "reports").exists()  # refused before any run directory was made


def test_where_a_run_is_computed_is_local_or_the_ray_cluster_and_its_workers():
    from releasegate.inputs.scale_config import ScaleConfig, computed_words, where_computed

    assert where_computed(None, "hf") == {"where": "local"} and computed_words({"where": "local"}) == "computed: locally"
    hf = where_computed(ScaleConfig(workers=4, address="ray://head:10001"), "hf")
    assert hf == {"where": "ray", "address": "ray://head:10001", "workers": 4, "spreads": "quality cases"}
    assert computed_words(hf) == "computed: on the Ray cluster at ray://head:10001, 4 workers (quality cases)"
    load = where_computed(ScaleConfig(), "openai")
    assert computed_words(load) == "computed: on a local Ray cluster started for the run, 2 workers (load phase)"
    assert computed_words(None).startswith("computed: not recorded")  # a run from before: never called local
    assert computed_words({"where": "elsewhere"}).startswith("computed: not recorded")
