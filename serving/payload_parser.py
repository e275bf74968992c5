"""Where /invocations bodies (and /v1/chat/completions bodies that send reasoning back) are
parsed: small ones on the event loop, big ones in a worker process of their own.

json.loads holds the GIL for the whole of a 5 MB body; in a thread of the front that still
stops the event loop (and /ping) for the length of every parse. In another process it stops
nothing: only the body goes over, and a small `Edit` comes back.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import signal
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from serving import invocations, reasoning

log = logging.getLogger("serving.payload_parser")
T = TypeVar("T")
# Below this a parse takes well under a millisecond: not worth the trip to the worker.
INLINE_PARSE_BYTES = 64 * 1024


def ignore_interrupts() -> None:
    # Ctrl-C under `make serve` reaches the whole process group; the front decides, not us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class PayloadParser:
    def __init__(self, served_model_name: str, auto_tool_choice_refusal: str | None = None):
        self.served_model_name = served_model_name
        self.auto_tool_choice_refusal = auto_tool_choice_refusal
        self._pool: ProcessPoolExecutor | None = None

    def start(self) -> None:
        """Start the worker now (a spawn takes about a second), not on the first big body."""
        self._pool = ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=ignore_interrupts,
        )
        self._pool.submit(int)

    async def parsed(self, body: bytes, parse: Callable[..., T], *args: Any) -> T:
        """`parse(body, *args)`: here for a small body (or without a worker), in the worker
        for a big one, and here again if the worker died (killed, out of memory): a new one is
        started for the next body, and this one is parsed rather than failed."""
        if len(body) <= INLINE_PARSE_BYTES or self._pool is None:
            return parse(body, *args)
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._pool, parse, body, *args)
        except BrokenProcessPool:
            log.warning("the payload parser process died; starting a new one")
            self.start()
            return parse(body, *args)

    async def prepare(self, body: bytes) -> invocations.Prepared:
        """The engine's body (see invocations.prepare); RequestRefused for a bad one."""
        edit = await self.parsed(
            body, invocations.plan, self.served_model_name, self.auto_tool_choice_refusal
        )
        return invocations.apply(body, edit, self.served_model_name)

    async def relayed_chat(self, body: bytes) -> bytes:
        """A /v1/chat/completions body as the engine gets it: reasoning sent back as blocks
        made the string vLLM takes (serving/reasoning.py). A body that names no reasoning is
        not parsed; a big one that does is parsed in the worker, as /invocations bodies are."""
        if not any(probe in body for probe in reasoning.PROBES):
            return body
        return await self.parsed(body, reasoning.chat_body) or body

    def stop(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
