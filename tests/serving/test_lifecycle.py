"""Shutdown and engine death, on containers of their own (each test ends its container),
and the supervisor's failures with real processes that cannot start."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
import warnings

import httpx
import psutil
import pytest
from websockets.exceptions import ConnectionClosedOK, InvalidStatus

from serving import exit_codes
from serving.engine import Engine
from serving.engine_client import EngineClient
from serving.lifecycle import Lifecycle, Status
from serving.metrics import ENGINE_UP
from tests.support.bidi import open_session, send, until_ended, until_type
from tests.support.interrupts import interrupted
from tests.support.raw_http import connect, read_all
from tests.support.stalls import WATCH

# Long enough to be running when a drain that waits for a stalled request is ended.
SOCKET_LONG = {"prompt": "def parse(text):", "max_tokens": 1900, "ignore_eos": True}
# Short enough to finish well inside the drain even on a loaded two-core machine.
STREAM = {"prompt": "def parse(text):", "max_tokens": 64, "ignore_eos": True, "stream": True}
CHAT = {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 4}


def engine_leftovers(container) -> list[psutil.Process]:
    socket_dir = str(container.engine_socket().parent)
    return [
        process
        for process in psutil.process_iter(["cmdline"])
        if any(socket_dir in part for part in process.info["cmdline"] or [])
    ]


def start_upload(container, payload: dict) -> tuple[object, bytes]:
    """A request admitted (in flight from its first byte) whose body is not all sent yet:
    in flight for as long as the test likes, whatever the generation speed. Returns the
    socket and the rest of the body."""
    sock = connect(container.url)
    body = json.dumps(payload).encode()
    sock.sendall(
        b"POST /invocations HTTP/1.1\r\nHost: front\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body[:5]
    )
    return sock, body[5:]


def test_sigterm_drains_then_a_second_sigterm_ends_the_drain(drain):
    streaming, rest_of_stream = start_upload(drain, STREAM)
    stalled, _ = start_upload(drain, CHAT)
    # A bidirectional-stream session with a long generation running on it.
    session = open_session(drain.url)
    send(session, {"id": "long", **SOCKET_LONG})
    until_type(session, "long", "chunk")
    deadline = time.monotonic() + 30
    while drain.metric("serving_requests_in_flight") < 3:
        assert time.monotonic() < deadline, "the three requests were not admitted"
        time.sleep(0.05)
    leftovers = engine_leftovers(drain)
    assert leftovers
    drain.process.send_signal(signal.SIGTERM)
    # The front takes the signal on its loop; once it says it drains, it refuses.
    assert "draining: 3 request(s) in flight" in drain.log_once("draining:", timeout=30)
    assert drain.ping() == 503
    refused = httpx.post(f"{drain.url}/invocations", json=CHAT, timeout=5)
    assert refused.status_code == 503
    assert "shutting down" in refused.json()["error"]["message"]
    # On the open session too: a new request gets a 503 frame; a new session is refused.
    send(session, {"id": "late", **CHAT})
    late = until_type(session, "late", "error")[-1]
    assert late["error"]["code"] == 503 and "shutting down" in late["error"]["message"]
    with pytest.raises(InvalidStatus) as new_session:
        open_session(drain.url)
    assert new_session.value.response.status_code == 503
    # A request in flight at SIGTERM is served in full during the drain, streamed to the end.
    streaming.sendall(rest_of_stream)
    answer = read_all(streaming)
    streaming.close()
    assert answer.startswith(b"HTTP/1.1 200")
    assert b"data: [DONE]" in answer
    # The stalled one would hold the drain for its whole limit; a second SIGTERM ends it.
    time.sleep(0.5)
    assert drain.process.poll() is None, "the drain did not wait for the stalled request"
    second = time.monotonic()
    drain.process.send_signal(signal.SIGTERM)
    assert drain.process.wait(timeout=15) == 0
    assert WATCH.since(second) < 8
    stalled.close()
    # The session's request still running when the drain ended got an error frame before
    # the socket closed (1001, going away).
    frames = until_ended(session, {"long"}, seconds=10)["long"]
    if frames[-1]["type"] == "done":
        warnings.warn("the session's 1,900 tokens ran whole before the drain ended", stacklevel=1)
    else:
        assert frames[-1]["type"] == "error", frames[-1]
        assert frames[-1]["error"]["code"] == 503, frames[-1]
        assert "shutting down" in frames[-1]["error"]["message"]
    with pytest.raises(ConnectionClosedOK) as closed:
        session.recv(timeout=10)
    assert closed.value.rcvd.code == 1001
    psutil.wait_procs(leftovers, timeout=5)
    assert not any(process.is_running() for process in leftovers)


def raw_completion(container, payload: dict, receive_buffer: int | None = None):
    sock = connect(container.url, receive_buffer=receive_buffer)
    body = json.dumps(payload).encode()
    sock.sendall(
        b"POST /invocations HTTP/1.1\r\nHost: front\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body) + body
    )
    return sock


def not_as_planned(container, headline: str, results: dict, began: float) -> None:
    """Fail with what each request got and the front's last words, the requests last: CI
    shows a failure's final lines."""
    front = [line for line in container.tail(60).splitlines() if " serving." in line]
    stream = results.get("stream")
    pytest.fail(
        "\n".join(
            [
                f"{headline} ({time.monotonic() - began:.1f} s after the stream began; "
                f"the machine held a CPU for {WATCH.stalled(began, time.monotonic()):.1f} s)",
                *front[-6:],
                f"stream: {stream and (len(stream[1]), stream[1][-1:])}",
                f"non-streaming: {str(results.get('plain'))[:400]}",
                f"stream sent at {results.get('stream sent', 0) - began:.2f} s, answered "
                f"{results.get('stream answered')}",
            ]
        )
    )


# Eight sequences of 1,900 tokens each: 45 s of work here, and killed about a second after
# it is sent, so it is still in the engine at the kill on any machine.
LONGEST = {"prompt": "x", "max_tokens": 1900, "ignore_eos": True, "n": 8}
STREAMED = {"prompt": "x", "max_tokens": 1900, "ignore_eos": True, "stream": True}
PLAN_ATTEMPTS = 3


def non_streaming(container, results: dict) -> None:
    # No client timeout: only the kill (or an error, which the checks report) ends it.
    try:
        response = httpx.post(f"{container.url}/invocations", json=LONGEST, timeout=None)
        results["plain"] = (time.monotonic(), response.status_code, response.json())
    except Exception as error:  # reported by the checks
        results["plain"] = (time.monotonic(), None, repr(error))


def streaming(container, results: dict, started: threading.Event) -> None:
    events = []
    results["stream sent"] = time.monotonic()
    try:
        with httpx.stream(
            "POST", f"{container.url}/invocations", json=STREAMED, timeout=60
        ) as response:
            results["stream answered"] = (time.monotonic(), response.status_code)
            for line in response.iter_lines():
                if line.startswith("data: "):
                    events.append(line)
                    started.set()
    finally:
        results["stream"] = (time.monotonic(), events)


class Load:
    """The requests in flight at the engine's death: a stream and eight sequences, sent
    together, so that a hold of the test (tests/support/stalls.py) finds nine sequences
    sharing the engine: the stream's 1,900 tokens then take about 50 s here, not 20."""

    def __init__(self, container) -> None:
        self.container = container
        self.results: dict[str, object] = {}
        self.started = threading.Event()
        self.stream = threading.Thread(
            target=streaming, args=(container, self.results, self.started)
        )
        self.plain = threading.Thread(target=non_streaming, args=(container, self.results))
        self.began = time.monotonic()

    def all_nine_running(self) -> str | None:
        """None once the stream's first event has come (the engine is generating it) and
        vLLM runs all nine sequences, else what went otherwise."""
        self.stream.start()
        self.plain.start()
        running = 0.0
        while True:
            if self.started.is_set():
                running = self.container.metric("vllm:num_requests_running")
                if running >= 9:
                    return None
            if not self.plain.is_alive() or not self.stream.is_alive():
                return f"a request ended with {running:.0f} running"
            if WATCH.since(self.began) > 30:
                return f"after 30 s, stream started: {self.started.is_set()}, {running:.0f} running"
            time.sleep(0.2)

    def join(self, running_seconds: float) -> None:
        """Until both requests end, for at most `running_seconds` of the machine running."""
        since = time.monotonic()
        for thread in (self.plain, self.stream):
            while thread.is_alive() and WATCH.since(since) < running_seconds:
                thread.join(0.2)

    def fail(self, headline: str) -> None:
        not_as_planned(self.container, headline, self.results, self.began)


def nine_running(container) -> Load:
    """A `Load` with all nine sequences running. One foiled while the machine held a CPU
    (a request can run to its end while the test waits in a held run queue;
    tests/support/stalls.py) is made again once its requests have ended; one foiled while the
    machine ran fails."""
    for _ in range(PLAN_ATTEMPTS):
        load = Load(container)
        foiled = load.all_nine_running()
        if foiled is None:
            return load
        if not WATCH.stalled(load.began, time.monotonic()):
            load.fail(foiled)
        load.join(running_seconds=120)
        if load.plain.is_alive() or load.stream.is_alive():
            load.fail(f"{foiled}, and the rest did not end")
    load.fail(f"{foiled}, with a CPU held, in each of {PLAN_ATTEMPTS} attempts")


def test_engine_death_fails_requests_fast_and_exits_non_zero(doomed):
    # A big answer whose client stops reading after the status line, so the engine dies
    # while its body is being relayed: top-20 logprobs echoed for a 1,500-token prompt
    # (token ids: the same length with any tokenizer), three times over, about 9 MB, more
    # than the kernel's 4 MB TCP send buffer and the rest hold. Prefill only, so it is
    # quick to make even on a loaded machine.
    big = {"prompt": [5] * 1500, "max_tokens": 1, "echo": True, "logprobs": 20, "n": 3}
    # A bidirectional-stream session generating too (nine running are waited for below).
    session = open_session(doomed.url)
    send(session, {"id": "socket", **STREAMED})
    until_type(session, "socket", "chunk")
    cut = raw_completion(doomed, big, receive_buffer=4096)
    cut.settimeout(120)
    assert cut.recv(12).startswith(b"HTTP/1.1 200")
    try:
        load = nine_running(doomed)
    finally:  # even when a check fails: no generation left running beside later tests
        doomed.kill_engine(signal.SIGKILL)
        killed_at = time.monotonic()
    load.join(running_seconds=10)
    results = load.results

    # Each request in flight ends within 5 s of the kill, with an error that names it. The
    # front answers within milliseconds of the engine's socket closing (its log says so), but
    # the socket closes only once the kernel has torn the killed process down, which on a
    # loaded two-core machine has taken most of 2.1 s (CI, session 11).
    answered_at, status, body = results.get("plain", (None, None, None))
    assert status is not None and 500 <= status < 600, f"non-streaming: {results.get('plain')}"
    assert "engine" in body["error"]["message"]
    # Windows are in the machine's running time: a stall of the host stops the front too.
    assert WATCH.running(killed_at, answered_at) < 5.0
    ended_at, events = results["stream"]
    assert WATCH.running(killed_at, ended_at) < 5.0, f"ended {ended_at - killed_at:.1f} s after"
    assert events[-1] != "data: [DONE]"
    assert "error" in json.loads(events[-1][len("data: ") :])
    # The cut answer's connection is aborted: no final chunk, so it never reads as complete.
    cut.settimeout(10)
    relayed = read_all(cut)
    cut_closed_at = time.monotonic()
    cut.close()
    assert b"\r\n0\r\n\r\n" not in relayed
    assert WATCH.running(killed_at, cut_closed_at) < 7, "the cut was only closed by the exit"

    # The session's request ended in an error frame that names the engine; the session
    # lives on, and what it is sent now gets the dead container's 503.
    frames = until_ended(session, {"socket"}, seconds=10)["socket"]
    assert frames[-1]["type"] == "error" and frames[-1]["error"]["code"] == 503, frames[-1]
    assert "engine" in frames[-1]["error"]["message"]
    send(session, {"id": "after", **STREAMED})
    after = until_ended(session, {"after"}, seconds=10)["after"][-1]
    assert after["type"] == "error" and after["error"]["code"] == 503, after
    session.close()

    assert httpx.get(f"{doomed.url}/ping", timeout=10).status_code == 503
    # Its metrics say the engine's part is missing rather than reading as zeros.
    assert doomed.metric(ENGINE_UP) == 0
    code = doomed.wait_exit(timeout=30)  # bounded below in running time
    assert code == exit_codes.ENGINE_DIED
    # SERVING_ENGINE_EXIT_SECONDS=10 after the death
    assert WATCH.since(killed_at) < 13


def supervise(argv: list[str], niceness: int = 0) -> tuple[Lifecycle, list[int]]:
    """Run a Lifecycle around a real process made from `argv` until it asks to exit."""
    exits: list[int] = []

    async def run() -> Lifecycle:
        # Nothing listens there: health checks fail at once, as while vLLM loads.
        client = EngineClient("/nonexistent/engine.sock", max_connections=4)
        lifecycle = Lifecycle(
            Engine(argv, niceness), client, drain_seconds=1, engine_exit_seconds=0.1,
            request_exit=exits.append,
        )  # fmt: skip
        lifecycle.start(in_flight=lambda: 0)
        async with asyncio.timeout(20):
            while not exits:
                await asyncio.sleep(0.05)
        await client.aclose()
        return lifecycle

    return asyncio.run(run()), exits


def test_an_engine_that_cannot_be_spawned_ends_the_container(caplog):
    lifecycle, exits = supervise(["/nonexistent/python", "-m", "vllm"])
    assert lifecycle.status is Status.DEAD
    assert exits == [exit_codes.ENGINE_DIED]
    assert "/nonexistent/python" in caplog.text or "No such file" in caplog.text


def test_an_engine_that_exits_at_once_ends_the_container():
    # Exits before (or while) the niceness is set: the supervisor must still see it.
    lifecycle, exits = supervise(["/bin/true"], niceness=10)
    assert lifecycle.status is Status.DEAD
    assert exits == [exit_codes.ENGINE_DIED]


def in_session(process: psutil.Process, session: int) -> bool:
    """vLLM and its workers run in a session of their own, led by the vLLM server."""
    try:
        return os.getsid(process.pid) == session
    except ProcessLookupError:
        return False


def test_ctrl_c_twice_while_loading_leaves_no_engine_behind(demo_root, tmp_path):
    from tests.support.containers import Container, demo_env

    def attempt() -> str | None:
        container = Container("ctrl-c", demo_env()).start()
        try:
            socket_dir = str(container.engine_socket().parent)
            deadline = time.monotonic() + 30
            while not (engine := container.find_engine_process()):
                assert time.monotonic() < deadline, "the engine was never started"
                time.sleep(0.05)
            # The front's other children (its payload parser) must go with it too.
            children = psutil.Process(container.process.pid).children(recursive=True)
            # A terminal's Ctrl-C goes to the foreground process group: the front's.
            os.killpg(container.process.pid, signal.SIGINT)
            time.sleep(0.2)
            os.killpg(container.process.pid, signal.SIGINT)
            container.process.wait(timeout=20)
            engine.wait(timeout=10)
            if "engine ready" in container.log_text():
                return "the engine had loaded before Ctrl-C"
            left = [process for process in psutil.process_iter() if in_session(process, engine.pid)]
            assert not left, [process.name() for process in left]
            gone, alive = psutil.wait_procs(children, timeout=10)
            assert not alive, [process.cmdline() for process in alive]
            assert not os.path.exists(socket_dir)
            return None
        finally:
            container.stop()

    interrupted("Ctrl-C while loading", attempt)


def test_a_taken_port_exits_4_before_the_engine_starts(demo_root):
    import socket

    from tests.support.containers import demo_env, serve_until_exit

    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = serve_until_exit(demo_env(SAGEMAKER_BIND_TO_PORT=str(port)))
    assert result.returncode == exit_codes.FRONT_FAILED
    assert "SAGEMAKER_BIND_TO_PORT" in result.stdout
    assert "starting engine" not in result.stdout
