"""Tests that interrupt a request (a stall, a kill, a stop) and must prove they did.

A request is interrupted only if it was running when the signal was sent and had not
finished when it landed. On a busy two-core machine, or one whose host holds a virtual CPU
(tests/support/stalls.py), a request of 1,900 tokens can run to its end while the test waits
to send the signal, or while `docker exec` carries it. Such an attempt proves nothing either
way: `interrupted()` says so (a warning in the run's summary) and makes it again, and fails
only when every attempt was foiled. An attempt whose request ended otherwise than whole
(the product's answer to the interruption) is what the test then checks.

Each test that kills or stops an engine first waits for `serving()`: a restart begun by the
test before (or left by a failed one) must be over, never inherited.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable

import httpx
import pytest

from tests.support.stalls import WATCH

SHORT_CHAT = {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 4}
SERVING_SECONDS = 300.0
RUNNING_SECONDS = 60.0


class Background:
    """A call in a thread of its own; `result` is its value or its exception once `done`."""

    def __init__(self, call: Callable[[], object]):
        self.result: object = None
        self.error: BaseException | None = None
        self.ended_at: float | None = None
        self.thread = threading.Thread(target=self._run, args=(call,), daemon=True)
        self.thread.start()

    def _run(self, call: Callable[[], object]) -> None:
        try:
            self.result = call()
        except Exception as error:  # noqa: BLE001 - the test reads what happened
            self.error = error
        self.ended_at = time.monotonic()

    @property
    def done(self) -> bool:
        return not self.thread.is_alive()

    def join(self, running_seconds: float) -> None:
        """Until the call ends, for at most `running_seconds` of the machine running."""
        began = time.monotonic()
        while self.thread.is_alive() and WATCH.since(began) < running_seconds:
            self.thread.join(0.2)

    def value(self) -> object:
        """The call's value; its exception re-raised; AssertionError if it still runs."""
        assert self.done, "the request is still in flight"
        if self.error is not None:
            raise self.error
        return self.result


def serving(container, timeout: float = SERVING_SECONDS) -> None:
    """Until the container serves again: /ping 200 and a short chat answered 200. A restart
    in progress answers 503 to both; an engine left stopped is found stalled and restarted."""
    began = time.monotonic()
    while True:
        if container.ping() == 200:
            try:
                answer = httpx.post(f"{container.url}/invocations", json=SHORT_CHAT, timeout=60)
                if answer.status_code == 200:
                    return
            except httpx.TransportError:
                pass
        assert WATCH.since(began) < timeout, (
            f"{container.name} does not serve after {timeout:.0f} s:\n{container.tail()}"
        )
        time.sleep(0.5)


def wait_running(container, request: Background) -> bool:
    """True once vLLM runs a request and `request` is still in flight; False when `request`
    ended first (it ran whole while the test waited)."""
    began = time.monotonic()
    while not request.done:
        if container.metric("vllm:num_requests_running") >= 1 and not request.done:
            return True
        assert WATCH.since(began) < RUNNING_SECONDS, (
            f"the request has not started running in {RUNNING_SECONDS:.0f} s"
        )
        time.sleep(0.1)
    return False


def retried(what: str, attempt: Callable[[], str | None], attempts: int, gave_up: str) -> None:
    """Run `attempt` until it does what it must, with the machine's say in it: it returns None
    when it did, or a sentence saying why this attempt could not. Each foiled attempt is
    reported as a warning with the CPU holds seen meanwhile; all foiled fails, `gave_up`."""
    foiled = []
    for number in range(1, attempts + 1):
        began = time.monotonic()
        why = attempt()
        if why is None:
            return
        held = WATCH.stalled(began, time.monotonic())
        foiled.append(f"attempt {number}: {why} (the machine held a CPU for {held:.1f} s)")
        warnings.warn(f"{what}: {foiled[-1]}; trying again", stacklevel=3)
    pytest.fail(f"{what}: {gave_up}:\n" + "\n".join(foiled))


def interrupted(what: str, attempt: Callable[[], str | None], attempts: int = 3) -> None:
    """Run `attempt` until it interrupts its request: it returns None when it did, or a
    sentence saying why this attempt could not (the request ran whole first)."""
    retried(what, attempt, attempts, "no attempt interrupted its request")
