"""Shutdown and engine death, on containers of their own (each test ends its container)."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import httpx

STREAM = {"prompt": "def parse(text):", "max_tokens": 1000, "ignore_eos": True, "stream": True}
CHAT = {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 4}


def test_sigterm_drains_in_flight_streams_then_exits_0(drain):
    with httpx.Client(timeout=60) as http:
        with http.stream("POST", f"{drain.url}/invocations", json=STREAM) as response:
            lines = response.iter_lines()
            next(line for line in lines if line.startswith("data: "))
            drain.process.send_signal(signal.SIGTERM)
            time.sleep(0.2)
            ping = httpx.get(f"{drain.url}/ping", timeout=2)
            assert ping.status_code == 503
            refused = httpx.post(f"{drain.url}/invocations", json=CHAT, timeout=5)
            assert refused.status_code == 503
            assert "shutting down" in refused.json()["error"]["message"]
            rest = [line for line in lines if line.startswith("data: ")]
    assert rest[-1] == "data: [DONE]"
    assert "draining: 1 request(s) in flight" in drain.log_text()
    assert drain.process.wait(timeout=30) == 0
    assert not any(p.is_running() for p in engine_tree_leftovers(drain))


def engine_tree_leftovers(container):
    import psutil

    return [
        p
        for p in psutil.process_iter(["cmdline"])
        if p.info["cmdline"]
        and "--port" in p.info["cmdline"]
        and str(container.port) in p.info["cmdline"]
    ]


def test_engine_death_fails_requests_fast_and_exits_non_zero(doomed):
    results: dict[str, object] = {}
    stream_started = threading.Event()
    # As long as max_model_len allows: neither request can finish before the kill.
    longest = {"prompt": "x", "max_tokens": 2000, "ignore_eos": True}

    def non_streaming():
        response = httpx.post(f"{doomed.url}/invocations", json=longest, timeout=60)
        results["plain"] = (time.monotonic(), response.status_code, response.json())

    def streaming():
        payload = {**longest, "stream": True}
        with httpx.stream("POST", f"{doomed.url}/invocations", json=payload, timeout=60) as r:
            events = []
            for line in r.iter_lines():
                if line.startswith("data: "):
                    events.append(line)
                    stream_started.set()
        results["stream"] = (time.monotonic(), events)

    plain_thread = threading.Thread(target=non_streaming)
    stream_thread = threading.Thread(target=streaming)
    plain_thread.start()
    deadline = time.monotonic() + 30
    while doomed.metric("vllm:num_requests_running") < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    stream_thread.start()
    assert stream_started.wait(30), "the stream never started"
    assert plain_thread.is_alive(), "the non-streaming request ended before the kill"
    engine = doomed.engine_process()
    os.kill(engine.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    for thread in (plain_thread, stream_thread):
        thread.join(10)

    answered_at, status, body = results["plain"]
    assert 500 <= status < 600
    assert "engine" in body["error"]["message"]
    assert answered_at - killed_at < 1.0
    ended_at, events = results["stream"]
    assert ended_at - killed_at < 1.0
    assert events[-1] != "data: [DONE]"
    assert "error" in json.loads(events[-1][len("data: ") :])

    assert httpx.get(f"{doomed.url}/ping", timeout=2).status_code == 503
    code = doomed.process.wait(timeout=5)
    assert code != 0
    assert time.monotonic() - killed_at < 5
