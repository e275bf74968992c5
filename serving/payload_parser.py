"""Where /invocations bodies are parsed: small ones on the event loop, big ones in a worker
process of their own.

json.loads holds the GIL for the whole of a 5 MB body; in a thread of the front that still
stops the event loop (and /ping) for the length of every parse. In another process it stops
nothing: only the body goes over, and a small `Edit` comes back.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import signal
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from serving import invocations

log = logging.getLogger("serving.payload_parser")
# Below this a parse takes well under a millisecond: not worth the trip to the worker.
INLINE_PARSE_BYTES = 64 * 1024


def ignore_interrupts() -> None:
    # Ctrl-C under `make serve` reaches the whole process group; the front decides, not us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class PayloadParser:
    def __init__(self, served_model_name: str):
        self.served_model_name = served_model_name
        self._pool: ProcessPoolExecutor | None = None

    def start(self) -> None:
        """Start the worker now (a spawn takes about a second), not on the first big body."""
        self._pool = ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=ignore_interrupts,
        )
        self._pool.submit(int)

    async def prepare(self, body: bytes) -> invocations.Prepared:
        """The engine's body (see invocations.prepare); RequestRefused for a bad one."""
        if len(body) <= INLINE_PARSE_BYTES or self._pool is None:
            return invocations.prepare(body, self.served_model_name)
        loop = asyncio.get_running_loop()
        try:
            edit = await loop.run_in_executor(
                self._pool, invocations.plan, body, self.served_model_name
            )
        except BrokenProcessPool:
            # The worker died (killed, out of memory): a new one for the next body, and this
            # one parsed here rather than failed.
            log.warning("the payload parser process died; starting a new one")
            self.start()
            edit = invocations.plan(body, self.served_model_name)
        return invocations.apply(body, edit, self.served_model_name)

    def stop(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
