"""Self-healing on the real engine: a stalled engine (its engine-core and worker processes
stopped, as by a kernel that never returns) is noticed and restarted in place, whether it
stopped under a request or while idle, a killed one too, until the restart budget is spent;
then the container exits non-zero. Each test says what every request got, and when. The
first four phases run in order on one container; the last two end containers of their own.

A stall or kill must land while its request runs: each test proves that it did, and makes an
attempt again when the machine let the request run whole first (tests/support/interrupts.py).
Each starts from a container that serves, never from a restart the test before began."""

from __future__ import annotations

import json
import shutil
import signal
import threading
import time

import httpx
import pytest

from serving import exit_codes
from serving.metrics import ENGINE_UP, metric_total
from tests.support.bidi import open_session, send, until_ended
from tests.support.containers import (
    DEMO_ROOT,
    Container,
    ImageContainer,
    demo_env,
    host_environment,
)
from tests.support.interrupts import Background, interrupted, serving, wait_running
from tests.support.stalls import WATCH

STALL_SECONDS = 6
# A stall under a request, one while idle, a kill, and room for one kill that lands after its
# request ran whole: that kill restarts an idle engine.
RESTARTS = 4
LONG = {
    "messages": [{"role": "user", "content": "def fibonacci(n):"}],
    "max_tokens": 1900,
    "temperature": 0,
    "ignore_eos": True,
}
SHORT = {**LONG, "max_tokens": 8}
KILLED = "was killed by signal SIGKILL"


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
    env = demo_env(
        SERVING_ENGINE_STALL_SECONDS=str(STALL_SECONDS), SERVING_ENGINE_RESTARTS=str(RESTARTS)
    )
    container = started(request, "healing", env)
    yield container
    container.stop()


def restarts(container, reason: str | None = None) -> int:
    labels = {"reason": reason} if reason else None
    return int(container.metric("serving_engine_restarts_total", labels=labels))


def restarted(container, what: str) -> int:
    """How many restarts after the engine `what` the log reports finished."""
    return container.log_text().count(f"engine restarted after it {what}")


def wait_restarted(container, what: str, count: int, timeout: float = 300) -> None:
    """Until the log reports `count` finished restarts after `what`, then until it serves."""
    began = time.monotonic()
    while restarted(container, what) < count:
        assert WATCH.since(began) < timeout, f"no restart after it {what}:\n{container.tail()}"
        time.sleep(0.2)
    serving(container)


def whole(choice: dict) -> bool:
    """The choice ran to its max_tokens: the request ended before any interruption."""
    return choice.get("finish_reason") == "length"


def ran_whole(events: list[str]) -> bool:
    """The stream ended with [DONE] after its choice ran to its max_tokens."""
    if events[-1:] != ["data: [DONE]"]:
        return False
    chunks = [json.loads(event[len("data: ") :]) for event in events[:-1]]
    return any(whole(choice) for chunk in chunks for choice in chunk.get("choices", []))


def during_restart(container, status: int, what: str, before: int, began: float) -> bool:
    """`status` (of /ping, or of a request) is as it must be while the engine restarts: 503,
    unless the restart was over by then, `before` being the finished restarts the log
    reported when it began; only a machine that held the test for the whole restart allows
    that."""
    if status == 503:
        return True
    deadline = time.monotonic() + 5  # the log can trail the event
    while restarted(container, what) <= before:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    assert WATCH.stalled(began, time.monotonic()) > 0, "the restart was over at once"
    return True


def test_a_stalled_engine_answers_its_requests_and_is_restarted_in_place(healing):
    serving(healing)
    stalls = healing.metric("serving_engine_stalls_total")
    stall_restarts = restarts(healing, "stall")
    stalls_restarted = restarted(healing, "stalled")
    outcome: dict = {}

    def attempt() -> str | None:
        request = Background(
            lambda: httpx.post(f"{healing.url}/invocations", json=LONG, timeout=300)
        )
        if not wait_running(healing, request):
            return "the request ran whole before vLLM was seen running it"
        healing.kill_engine(signal.SIGSTOP, workers=True)
        stopped_at = time.monotonic()
        request.join(STALL_SECONDS + 60)
        answer = request.value()
        if answer.status_code == 200 and whole(answer.json()["choices"][0]):
            # An idle engine stopped is no stall the front can see: let it go on.
            healing.kill_engine(signal.SIGCONT, workers=True)
            return "the request ran whole before SIGSTOP landed"
        outcome.update(answer=answer, stopped_at=stopped_at, answered_at=request.ended_at)
        return None

    interrupted("a stalled engine", attempt)
    # The request in flight gets a JSON 503 that names the stall, within the window + 10 s.
    answer = outcome["answer"]
    assert answer.status_code == 503, answer.text
    assert "stalled" in answer.json()["error"]["message"]
    assert WATCH.running(outcome["stopped_at"], outcome["answered_at"]) < STALL_SECONDS + 10
    # While the engine starts again: /ping 503, requests 503 with Retry-After.
    probed = time.monotonic()
    assert during_restart(healing, healing.ping(), "stalled", stalls_restarted, probed)
    refused = httpx.post(f"{healing.url}/invocations", json=SHORT, timeout=30)
    if refused.status_code == 503:
        assert "Retry-After" in refused.headers
        assert "restarting" in refused.json()["error"]["message"]
    assert during_restart(healing, refused.status_code, "stalled", stalls_restarted, probed), (
        refused.text
    )
    # SageMaker's scrape still gets the front's series, and a gauge that the engine's are
    # missing (not zeros), until the engine is back.
    scrape = httpx.get(f"{healing.url}/metrics", timeout=10)
    assert scrape.status_code == 200 and "serving_requests_total" in scrape.text
    engine_up = metric_total(scrape.text, ENGINE_UP)
    assert during_restart(healing, 200 if engine_up else 503, "stalled", stalls_restarted, probed)
    wait_restarted(healing, "stalled", stalls_restarted + 1)
    # Same port, same answers.
    assert httpx.post(f"{healing.url}/invocations", json=SHORT, timeout=120).status_code == 200
    assert healing.metric("serving_engine_stalls_total") == stalls + 1
    assert restarts(healing, "stall") == stall_restarts + 1


def test_an_engine_stalled_while_idle_is_found_by_the_next_request(healing):
    """vLLM sets its gauges as its core takes a step: a core stopped with nothing to do reads
    0 running and 0 waiting for ever. The request sent to it is what shows the stall; before,
    it waited for an answer that never came, and /ping stayed 200."""
    serving(healing)
    stalls_restarted = restarted(healing, "stalled")
    healing.kill_engine(signal.SIGSTOP, workers=True)
    sent = time.monotonic()
    answer = httpx.post(f"{healing.url}/invocations", json=SHORT, timeout=STALL_SECONDS + 60)
    answered = time.monotonic()
    assert answer.status_code == 503, answer.text
    message = answer.json()["error"]["message"]
    assert "stalled" in message and "1 sent with no answer begun" in message, message
    assert WATCH.running(sent, answered) < STALL_SECONDS + 10
    wait_restarted(healing, "stalled", stalls_restarted + 1)
    assert httpx.post(f"{healing.url}/invocations", json=SHORT, timeout=120).status_code == 200


def test_a_killed_engine_ends_its_stream_with_an_error_and_comes_back(healing):
    serving(healing)
    # A bidirectional-stream session open across the restart.
    session = open_session(healing.url)
    exit_restarts = restarts(healing, "exit")
    kills = 0
    outcome: dict = {}

    def attempt() -> str | None:
        nonlocal kills
        events: list[str] = []
        generating = threading.Event()

        def read_stream() -> None:
            body = {**LONG, "stream": True}
            with httpx.stream("POST", f"{healing.url}/invocations", json=body, timeout=300) as s:
                for line in s.iter_lines():
                    if line:
                        events.append(line)
                        generating.set()

        serving(healing)
        stream = Background(read_stream)
        began = time.monotonic()
        while not generating.wait(0.2) and not stream.done:
            assert WATCH.since(began) < 60, "the stream sent no event in 60 s"
        if stream.done:
            stream.value()
            return "the stream ran whole before the test saw its first event"
        before = restarted(healing, KILLED)
        healing.kill_engine(signal.SIGKILL)
        kills += 1
        killed_at = time.monotonic()
        stream.join(30)
        stream.value()
        if ran_whole(events):
            wait_restarted(healing, KILLED, before + 1)
            return "the stream ran whole before SIGKILL landed (an idle engine was restarted)"
        outcome.update(events=events, killed_at=killed_at, ended_at=stream.ended_at, before=before)
        return None

    # Each kill is a restart: as many attempts as the budget leaves after this one.
    interrupted("a killed engine", attempt, attempts=RESTARTS - restarts(healing))
    events = outcome["events"]
    assert events[-1] != "data: [DONE]"
    assert "error" in json.loads(events[-1][len("data: ") :])
    assert WATCH.running(outcome["killed_at"], outcome["ended_at"]) < 5
    wait_restarted(healing, KILLED, outcome["before"] + 1)
    assert restarts(healing, "exit") == exit_restarts + kills
    # The session outlived the restart: once /ping is 200 again, it serves.
    send(session, {"id": "after", **SHORT})
    assert until_ended(session, {"after"})["after"][-1]["type"] == "done"
    session.close()


def test_one_death_more_than_allowed_ends_the_container(healing):
    serving(healing)
    for _ in range(RESTARTS - restarts(healing)):  # what the tests before left of the budget
        count = restarted(healing, KILLED)
        healing.kill_engine(signal.SIGKILL)
        wait_restarted(healing, KILLED, count + 1)
    healing.kill_engine(signal.SIGKILL)
    code = healing.wait_exit(timeout=60)
    assert code == exit_codes.ENGINE_DIED
    assert f"{RESTARTS} restart(s) in the last 900 s already" in healing.log_text()


def test_a_stop_during_a_restart_exits_0_within_sagemakers_30_s(demo_root, request):
    outcome: dict = {}

    def attempt() -> str | None:
        container = started(request, "interrupted", demo_env(SERVING_ENGINE_RESTARTS="2"))
        try:
            container.kill_engine(signal.SIGKILL)
            assert "restarting it in place" in container.log_once("restarting it in place", 30)
            time.sleep(2)  # the new engine is loading
            began = time.monotonic()
            code = container.stop(timeout=30)
            stopped_after = WATCH.since(began)
        finally:
            container.stop()
        log = container.log_text()
        # The stop must land while the new engine loads: before the log says it is ready.
        assert "draining" in log, container.tail()
        if "engine restarted after" in log[: log.index("draining")]:
            return "the new engine was ready before the stop landed"
        outcome.update(code=code, stopped_after=stopped_after)
        return None

    interrupted("a stop during a restart", attempt)
    assert outcome["code"] == 0
    assert outcome["stopped_after"] < 30


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
