"""Only the routes we mean are reachable: the engine's root API never is, however the path
is spelled, and allowed routes are forwarded byte for byte."""

from __future__ import annotations

import json
import re

import httpx
import pytest

from serving import routes
from tests.support.raw_http import body_of, get, header_values, status_of

HOSTILE_PATHS = [
    b"/v1/../tokenize",
    b"/v1/%2e%2e/tokenize",
    b"/v1/%2E%2E/detokenize",
    b"/v1/..%2ftokenize",
    b"/v1/.%2e/detokenize",
    b"/v1/models/../../tokenize",
    b"/v1%2f..%2ftokenize",
    b"/v1/./models/../../detokenize",
    b"/v1/%2e%2e/%2e%2e/tokenize",
    b"/tokenize",
    b"/detokenize",
    b"/version",
    b"/load",
    b"/collective_rpc",
    b"/sleep",
    b"/reset_prefix_cache",
    b"/v1/load_lora_adapter",
    b"/v1/chat%2fcompletions",
    b"/v1/chat/completions%00",
    b"//v1/models",
    b"/v1//models",
    b"/v1/models/",
]


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_hostile_paths_match_no_route(path: bytes):
    assert routes.match(path) is None


@pytest.mark.parametrize(
    ("path", "label"),
    [
        (b"/v1/models", "/v1/models"),
        (b"/v1/chat/completions", "/v1/chat/completions"),
        (b"/v1/responses/resp_123/cancel", "/v1/responses/{response_id}/cancel"),
        (b"/adapters/my-lora.v2", "/adapters/{adapter_name}"),
        (b"/invocations", "/invocations"),
        (b"/v1/responses/..", routes.UNMATCHED),
        (b"/" + b"a" * 40, routes.UNMATCHED),
    ],
)
def test_labels_are_route_templates(path: bytes, label: str):
    route = routes.match(path)
    assert (route.label if route else routes.UNMATCHED) == label


def engine_handler_counts(peagle) -> dict[str, float]:
    """vLLM's own per-handler request counter, read through the front's /metrics."""
    counts: dict[str, float] = {}
    for line in httpx.get(f"{peagle.url}/metrics", timeout=10).text.splitlines():
        match = re.match(r'http_requests_total\{.*handler="([^"]*)".*\} (\S+)', line)
        if match:
            counts[match.group(1)] = counts.get(match.group(1), 0.0) + float(match.group(2))
    return counts


def test_engine_root_routes_are_unreachable_however_spelled(peagle):
    before = engine_handler_counts(peagle)
    for method in (b"GET", b"POST"):
        for path in HOSTILE_PATHS:
            answer = get(peagle.url, path) if method == b"GET" else post_empty(peagle.url, path)
            assert status_of(answer) == 404, (path, answer[:300])
            assert "no such route" in json.loads(body_of(answer))["error"]["message"]
    after = engine_handler_counts(peagle)
    for handler in ("/tokenize", "/detokenize", "/collective_rpc", "/sleep"):
        assert after.get(handler, 0) == before.get(handler, 0), handler


def post_empty(url: str, path: bytes) -> bytes:
    from tests.support.raw_http import exchange

    return exchange(
        url,
        b"POST " + path + b" HTTP/1.1\r\nHost: front\r\nContent-Type: application/json\r\n"
        b"Content-Length: 2\r\nConnection: close\r\n\r\n{}",
    )


def test_allowed_route_is_relayed_with_its_raw_query(peagle):
    answer = get(peagle.url, b"/v1/models?probe=%2e%2e%2Fx")
    assert status_of(answer) == 200
    assert b'"object":"list"' in answer


def test_wrong_method_is_405_naming_the_allowed_one(client: httpx.Client):
    response = client.get("/v1/chat/completions")
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert "POST" in response.json()["error"]["message"]


def test_unknown_path_is_a_json_404(peagle):
    answer = get(peagle.url, b"/no/such/thing")
    assert status_of(answer) == 404
    assert header_values(answer, b"content-type") == [b"application/json"]


def test_sagemakers_adapter_routes_reach_the_engine_when_it_serves_them(plain):
    # The plain container runs with VLLM_ALLOW_RUNTIME_LORA_UPDATING, so vLLM mounts
    # SageMaker's POST /adapters and DELETE /adapters/{name}; the answers are vLLM's own
    # refusals (no name; no such adapter), which only the engine can give.
    before = engine_handler_counts(plain)
    load = httpx.post(f"{plain.url}/adapters", json={"name": "", "src": "/nowhere"}, timeout=30)
    assert load.status_code == 400, load.text
    assert "name cannot be an empty string" in load.text
    unload = httpx.delete(f"{plain.url}/adapters/no-such-lora", timeout=30)
    assert 400 <= unload.status_code < 500, unload.text
    assert "no-such-lora" in unload.text
    after = engine_handler_counts(plain)
    assert after.get("/adapters", 0) == before.get("/adapters", 0) + 1
    assert after.get("/adapters/{adapter_name}", 0) == before.get("/adapters/{adapter_name}", 0) + 1
