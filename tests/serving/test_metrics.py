"""/metrics: the engine's metrics, ours, and acceptance gauges derived from vLLM's counters."""

from __future__ import annotations

import json

import httpx
from prometheus_client.parser import text_string_to_metric_families

from serving.metrics import (
    ENGINE_UP,
    FrontMetrics,
    drafts_by_k,
    metric_total,
    spec_decode_totals,
)

CHAT = {"messages": [{"role": "user", "content": "Write a loop."}], "max_tokens": 24}


# As prometheus_client writes them: a counter's TYPE names its `_total` samples, and its
# `_created` timestamps come as a gauge of their own.
ENGINE_TEXT = """\
# HELP vllm:spec_decode_num_drafts_total Drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 3.0
vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 4.0
# HELP vllm:spec_decode_num_drafts_created Drafts.
# TYPE vllm:spec_decode_num_drafts_created gauge
vllm:spec_decode_num_drafts_created{engine="0",model_name="m"} 1.7e+09
vllm:spec_decode_num_drafts_created{engine="1",model_name="m"} 1.7e+09
# HELP serving_requests_total Requests.
# TYPE serving_requests_total counter
serving_requests_total{route="/invocations",status="200"} 5.0
serving_requests_total{route="/invocations",status="500"} 2.0
serving_requests_total{route="/ping",status="200"} 9.0
# HELP serving_requests_in_flight In flight.
# TYPE serving_requests_in_flight gauge
serving_requests_in_flight 1.0
"""


def test_metric_total_sums_a_counters_samples_by_either_name_and_filters_by_labels():
    assert metric_total(ENGINE_TEXT, "vllm:spec_decode_num_drafts_total") == 7.0
    assert metric_total(ENGINE_TEXT, "vllm:spec_decode_num_drafts") == 7.0
    assert metric_total(ENGINE_TEXT, "vllm:spec_decode_num_drafts_total", {"engine": "1"}) == 4.0
    assert metric_total(ENGINE_TEXT, "serving_requests_total") == 16.0
    errors = {"route": "/invocations", "status": "500"}
    assert metric_total(ENGINE_TEXT, "serving_requests_total", errors) == 2.0
    assert metric_total(ENGINE_TEXT, "serving_requests_total", {"route": "/invocations"}) == 7.0
    assert metric_total(ENGINE_TEXT, "serving_requests_in_flight") == 1.0
    assert metric_total(ENGINE_TEXT, "vllm:num_requests_running") == 0.0
    assert metric_total(ENGINE_TEXT, "serving_requests_total", {"status": "404"}) == 0.0


def test_a_scrape_says_whether_it_carries_the_engines_metrics():
    front = FrontMetrics()
    assert metric_total(front.render(ENGINE_TEXT).decode(), ENGINE_UP) == 1.0
    missing = front.render(None).decode()
    assert metric_total(missing, ENGINE_UP) == 0.0
    assert "serving_spec_decode_mean_acceptance_length" not in missing


def test_the_k_in_force_is_a_gauge_per_batch_size_range():
    scheduled = FrontMetrics()
    schedule = [[1, 4, 7], [5, 16, 3], [17, 256, 0]]
    scheduled.speculation(
        {"num_speculative_tokens": 7, "num_speculative_tokens_per_batch_size": schedule}
    )
    values = samples(scheduled.render(None).decode())
    ks = {
        dict(labels)["batch_sizes"]: value
        for (name, labels), value in values.items()
        if name == "serving_spec_decode_k"
    }
    assert ks == {"1-4": 7, "5-16": 3, "17-256": 0}
    fixed = FrontMetrics()
    fixed.speculation({"method": "eagle3", "num_speculative_tokens": 5})
    assert (
        samples(fixed.render(None).decode())[("serving_spec_decode_k", (("batch_sizes", "all"),))]
        == 5
    )
    none = FrontMetrics()
    none.speculation(None)
    assert "serving_spec_decode_k{" not in none.render(None).decode()


def samples(text: str) -> dict[tuple[str, tuple], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_metrics_parse_and_carry_ours_and_the_engines(client: httpx.Client):
    client.post("/invocations", json=CHAT)
    with client.stream("POST", "/invocations", json={**CHAT, "stream": True}) as response:
        list(response.iter_lines())
    values = samples(client.get("/metrics").text)
    names = {name for name, _ in values}
    assert "vllm:num_requests_running" in names
    assert values[("serving_requests_total", (("route", "/invocations"), ("status", "200")))] >= 2
    assert "serving_request_duration_seconds_bucket" in names
    assert "serving_stream_first_byte_seconds_count" in names
    assert ("serving_requests_in_flight", ()) in values
    assert values[(ENGINE_UP, ())] == 1
    assert values[("serving_spec_decode_k", (("batch_sizes", "all"),))] == 3  # peagle:3


def test_acceptance_gauges_agree_with_vllms_counters(client: httpx.Client):
    before = spec_decode_totals(client.get("/metrics").text)
    client.post("/invocations", json=CHAT)
    text = client.get("/metrics").text
    values = samples(text)
    totals, by_position, drafted_by_position = spec_decode_totals(text)
    drafts = totals["vllm:spec_decode_num_drafts"]
    accepted = totals["vllm:spec_decode_num_accepted_tokens"]
    assert drafts > 0
    length = values[("serving_spec_decode_mean_acceptance_length", ())]
    assert length == 1 + accepted / drafts
    assert 1.0 <= length <= 1 + 3
    assert 0.0 <= values[("serving_spec_decode_acceptance_rate", ())] <= 1.0
    positions = {
        dict(labels)["position"]
        for name, labels in values
        if name == "serving_spec_decode_position_acceptance_rate"
    }
    assert positions == {"0", "1", "2"}
    assert set(by_position) == {0, 1, 2}
    # vllm_patches/draft_tokens_per_position.py: over this request (no grammar to cut its
    # drafts), every draft had all K=3 tokens, and the front counts drafts of each K.
    new_drafts = drafts - before.totals.get("vllm:spec_decode_num_drafts", 0.0)
    assert new_drafts > 0
    assert {
        position: value - before.drafted_by_position.get(position, 0.0)
        for position, value in drafted_by_position.items()
    } == {0: new_drafts, 1: new_drafts, 2: new_drafts}
    by_k = {
        dict(labels)["k"]: value
        for (name, labels), value in values.items()
        if name == "serving_spec_decode_drafts_by_k"
    }
    assert set(by_k) == {"1", "2", "3"}
    assert by_k["3"] - drafts_by_k(before.drafted_by_position).get(3, 0.0) == new_drafts


def test_no_acceptance_gauges_without_speculation(plain):
    text = httpx.get(f"{plain.url}/metrics").text
    assert "serving_spec_decode_mean_acceptance_length" not in text


def test_json_logs_carry_one_object_per_request(plain):
    inference_id = "json-log-check-1"
    httpx.post(
        f"{plain.url}/invocations",
        json={**CHAT, "ignore_eos": True},
        headers={"X-Amzn-SageMaker-Inference-Id": inference_id},
        timeout=60,
    )
    entries = [
        json.loads(line)
        for line in plain.log_once(f'"request_id": "{inference_id}"').splitlines()
        if line.startswith("{") and inference_id in line
    ]
    assert len(entries) == 1
    entry = entries[0]
    assert entry["request_id"] == inference_id
    assert entry["status"] == 200
    assert entry["completion_tokens"] == 24
    assert entry["latency_ms"] > 0


def test_unknown_paths_share_one_series(client: httpx.Client):
    import uuid

    def series() -> set[tuple]:
        return {
            labels
            for (name, labels) in samples(client.get("/metrics").text)
            if name.startswith("serving_request")
        }

    client.get(f"/{uuid.uuid4().hex}")
    before = series()
    for _ in range(30):
        assert client.get(f"/{uuid.uuid4().hex}").status_code == 404
        assert client.post(f"/v1/{uuid.uuid4().hex}").status_code == 404
    assert series() == before
    values = samples(client.get("/metrics").text)
    assert values[("serving_requests_total", (("route", "unmatched"), ("status", "404")))] >= 60
