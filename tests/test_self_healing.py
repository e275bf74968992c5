"""Self-healing on the real engine: a stalled engine (its engine-core and worker processes
stopped, as by a kernel that never returns) is noticed and restarted in place, a killed one
too, until the restart budget is spent; then the container exits non-zero. Each test says
what every request got, and when. The first three phases run in order on one container; the
last two end containers of their own."""

from __future__ import annotations

import json
import shutil
import signal
import threading
import time

import httpx
import pytest

from serving import exit_codes
from tests.support.containers import (
    DEMO_ROOT,
    Container,
    ImageContainer,
    demo_env,
    host_environment,
)
from tests.support.stalls import WATCH

STALL_SECONDS = 6
LONG = {
    "messages": [{"role": "user", "content": "def fibonacci(n):"}],
    "max_tokens": 1900,
    "temperature": 0,
    "ignore_eos": True,
}


def started(request, name: str, env: dict[str, str]):
    """A container of its own (its engine is stopped and killed), on either backend."""
    if request.config.getoption("--backend") == "docker":
        container = ImageContainer(name, env, request.config.getoption("--image"))
    else:
        container = Container(name, env)
    container.start()
    container.wait_ready()
    return container


@pytest.fixture(scope="module")
def healing(demo_root, request):
    env = demo_env(SERVING_ENGINE_STALL_SECONDS=str(STALL_SECONDS), SERVING_ENGINE_RESTARTS="2")
    container = started(request, "healing", env)
    yield container
    container.stop()


def in_background(call) -> tuple[threading.Thread, dict]:
    result: dict = {}

    def run() -> None:
        try:
            result["answer"] = call()
        except Exception as error:  # noqa: BLE001 - the test reads what happened
            result["error"] = error
        result["at"] = time.monotonic()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, result


def wait_running(container, count: int = 1, timeout: float = 60) -> None:
    began = time.monotonic()
    while container.metric("vllm:num_requests_running") < count:
        assert WATCH.since(began) < timeout, "the request never started running"
        time.sleep(0.2)


def wait_ping(container, status: int, timeout: float) -> float:
    """Seconds (of the machine running) until /ping answers `status`."""
    began = time.monotonic()
    while container.ping() != status:
        assert WATCH.since(began) < timeout, f"/ping never answered {status}"
        time.sleep(0.2)
    return WATCH.since(began)


def test_a_stalled_engine_answers_its_requests_and_is_restarted_in_place(healing):
    thread, result = in_background(
        lambda: httpx.post(f"{healing.url}/invocations", json=LONG, timeout=300)
    )
    wait_running(healing)
    healing.kill_engine(signal.SIGSTOP, workers=True)
    stopped_at = time.monotonic()
    thread.join(STALL_SECONDS + 30)
    # The request in flight gets a JSON 503 that names the stall, within the window + 10 s.
    answer = result["answer"]
    assert answer.status_code == 503, answer.text
    assert "stalled" in answer.json()["error"]["message"]
    assert WATCH.running(stopped_at, result["at"]) < STALL_SECONDS + 10
    # While the engine starts again: /ping 503, requests 503 with Retry-After.
    assert healing.ping() == 503
    refused = httpx.post(f"{healing.url}/invocations", json=LONG, timeout=10)
    assert refused.status_code == 503 and "Retry-After" in refused.headers
    assert "restarting" in refused.json()["error"]["message"]
    wait_ping(healing, 200, timeout=300)
    # Same port, same answers.
    short = {**LONG, "max_tokens": 8}
    assert httpx.post(f"{healing.url}/invocations", json=short, timeout=120).status_code == 200
    assert healing.metric("serving_engine_stalls_total") == 1
    assert healing.metric("serving_engine_restarts_total", labels={"reason": "stall"}) == 1
    assert "engine restarted after it stalled" in healing.log_text()


def test_a_killed_engine_ends_its_stream_with_an_error_and_comes_back(healing):
    stream = {**LONG, "stream": True}

    def read_stream() -> list[str]:
        with httpx.stream("POST", f"{healing.url}/invocations", json=stream, timeout=300) as s:
            return [line for line in s.iter_lines() if line]

    thread, result = in_background(read_stream)
    wait_running(healing)
    healing.kill_engine(signal.SIGKILL)
    killed_at = time.monotonic()
    thread.join(30)
    events = result["answer"]
    assert events[-1] != "data: [DONE]"
    assert "error" in json.loads(events[-1][len("data: ") :])
    assert WATCH.running(killed_at, result["at"]) < 5
    # The stream can end before the front has seen the engine's exit: /ping turns 503 first,
    # then 200 once the new engine is ready.
    wait_ping(healing, 503, timeout=30)
    took = wait_ping(healing, 200, timeout=300)
    assert healing.metric("serving_engine_restarts_total", labels={"reason": "exit"}) == 1
    log = healing.log_text()
    assert "engine restarted after it was killed by signal SIGKILL" in log, took


def test_one_death_more_than_allowed_ends_the_container(healing):
    healing.kill_engine(signal.SIGKILL)
    code = healing.wait_exit(timeout=60)
    assert code == exit_codes.ENGINE_DIED
    assert "2 restart(s) in the last 900 s already" in healing.log_text()


def test_a_stop_during_a_restart_exits_0_within_sagemakers_30_s(demo_root, request):
    container = started(request, "interrupted", demo_env(SERVING_ENGINE_RESTARTS="2"))
    try:
        container.kill_engine(signal.SIGKILL)
        wait_ping(container, 503, timeout=30)
        time.sleep(2)  # the new engine is loading
        assert "restarting it in place" in container.log_text()
        began = time.monotonic()
        code = container.stop(timeout=30)
        assert code == 0
        assert WATCH.since(began) < 30
    finally:
        container.stop()


def test_a_restart_that_fails_ends_the_container_and_says_why(demo_root, tmp_path):
    """Host only: the model tree is broken under the running container before its engine is
    killed, so the restart cannot load it."""
    tree = shutil.copytree(DEMO_ROOT, tmp_path / "opt_ml")
    container = Container("unrestartable", host_environment(OPT_ML_ROOT=str(tree)))
    container.start()
    try:
        container.wait_ready()
        (tree / "model" / "config.json").write_text("{")
        container.kill_engine(signal.SIGKILL)
        code = container.wait_exit(timeout=180)
        assert code == exit_codes.ENGINE_DIED
        assert "could not start again after it was killed by signal SIGKILL" in container.log_text()
    finally:
        container.stop()
