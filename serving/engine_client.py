"""The front's HTTP client to the engine, over the engine's private Unix socket.

aiohttp (a vLLM dependency, so in every image) parses the engine's answers in C and hands
over whatever has arrived: per relayed chunk that is a quarter less of the front's CPU than
httpx's pure-Python HTTP/1.1 (measured: 25.6 against 34.4 us a chunk over 32 streams), on
the core the engine's API server shares. The rest of the front sees only this module's
types: bytes in, bytes out, and `EngineError` when the engine is not there.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from types import SimpleNamespace

import aiohttp
from yarl import URL

from serving.headers import RawHeaders

log = logging.getLogger("serving.engine_client")

# The engine listens on a Unix socket only; HTTP needs a host name all the same.
ENGINE_ORIGIN = "http://engine"
CONNECT_SECONDS = 5.0
# How long vLLM's API server keeps an idle connection (uvicorn's keep-alive, set through
# vLLM's VLLM_HTTP_TIMEOUT_KEEP_ALIVE; vLLM's own default is 5 s). Raised, so the engine
# closes no connection during the pauses clients commonly make; the pool drops its idle
# connections at half of it, so it never offers one the engine is about to close.
ENGINE_KEEP_ALIVE_VAR = "VLLM_HTTP_TIMEOUT_KEEP_ALIVE"
ENGINE_KEEP_ALIVE_SECONDS = 60
# Errors of a request written on a connection the engine had closed (reset, or closed
# with no answer); aiohttp raises others for a socket it cannot reach at all.
CLOSED_UNDER_US = (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)


class EngineError(Exception):
    """The engine could not be reached, or broke off its answer."""


def engine_url(target: bytes) -> URL:
    """The request target as the client sent it; bytes no request line may carry escaped."""
    text = "".join(chr(byte) if 0x20 < byte < 0x7F else f"%{byte:02X}" for byte in target)
    return URL(ENGINE_ORIGIN + text, encoded=True)


def as_text(headers: RawHeaders) -> list[tuple[str, str]]:
    # aiohttp writes header text as UTF-8: UTF-8 values (the front refuses others) go out as
    # the bytes that came in.
    return [(name.decode("latin-1"), value.decode("utf-8")) for name, value in headers]


class Once:
    """A call that runs the first time only."""

    def __init__(self, call: Callable[[], None]):
        self.call: Callable[[], None] | None = call

    def __call__(self) -> None:
        if self.call is not None:
            self.call, call = None, self.call
            call()


class EngineAnswer:
    """An answer whose status and headers have arrived; its body is read once, as it comes.
    `answered` runs once: when the first of its body has come, when it is closed, or when it
    is dropped unread (a client gone before its answer began)."""

    def __init__(self, response: aiohttp.ClientResponse, answered: Callable[[], None]):
        self._response = response
        self._body_began = Once(answered)
        weakref.finalize(self, self._body_began)
        self.status = response.status
        self.raw_headers: RawHeaders = list(response.raw_headers)

    def header(self, name: str) -> str:
        return self._response.headers.get(name, "")

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives, whatever has arrived at each step."""
        try:
            async for chunk in self._response.content.iter_any():
                self._body_began()
                yield chunk
        except (aiohttp.ClientError, OSError) as error:
            raise EngineError(repr(error)) from error

    async def read(self) -> bytes:
        try:
            return await self._response.read()
        except (aiohttp.ClientError, OSError) as error:
            raise EngineError(repr(error)) from error
        finally:
            self._body_began()

    def close(self) -> None:
        """Keep the connection when the body was read to its end; otherwise close it, which
        is how vLLM learns to abort a generation nobody reads any more."""
        self._body_began()
        if self._response.content.is_eof():
            self._response.release()
        else:
            self._response.close()


def pool_idle_seconds(environ: Mapping[str, str]) -> float:
    """How long the pool keeps an idle connection: half the engine's keep-alive."""
    value = environ.get(ENGINE_KEEP_ALIVE_VAR, "")
    keep_alive = int(value) if value.strip().isdigit() else ENGINE_KEEP_ALIVE_SECONDS
    return max(keep_alive, 1) / 2


# The pool's idle limit under the engine keep-alive the front sets.
DEFAULT_IDLE_SECONDS = ENGINE_KEEP_ALIVE_SECONDS / 2


async def note_reuse(session, context: SimpleNamespace, params) -> None:
    if context.trace_request_ctx is not None:  # None for the small GETs
        context.trace_request_ctx.reused = True


def reuse_tracing() -> aiohttp.TraceConfig:
    """Tells each request (`trace_request_ctx.reused`) whether it went on a pooled
    connection."""
    tracing = aiohttp.TraceConfig()
    tracing.on_connection_reuseconn.append(note_reuse)
    return tracing


class EngineClient:
    def __init__(
        self, socket_path: str, max_connections: int, idle_seconds: float = DEFAULT_IDLE_SECONDS
    ):
        self.socket_path = socket_path
        self.max_connections = max_connections
        self.idle_seconds = idle_seconds
        self._session: aiohttp.ClientSession | None = None
        self._fresh: aiohttp.ClientSession | None = None
        # Why the engine is away, for the answers of requests it leaves (a stall, a restart).
        self.unavailable: str | None = None
        # Requests sent whose answer has not begun: the engine's work that its own gauges
        # miss while its core takes no step (serving/stall_watch.py).
        self.unanswered = 0

    def session(self) -> aiohttp.ClientSession:
        # Made on first use: aiohttp wants a running event loop.
        if self._session is None:
            self._session = self._new_session(
                aiohttp.UnixConnector(
                    path=self.socket_path,
                    limit=self.max_connections,
                    keepalive_timeout=self.idle_seconds,
                )
            )
        return self._session

    def fresh_session(self) -> aiohttp.ClientSession:
        """Requests on connections of their own, closed after the answer: for a request
        that must not meet another pooled connection the engine has closed."""
        if self._fresh is None:
            self._fresh = self._new_session(
                aiohttp.UnixConnector(
                    path=self.socket_path, limit=self.max_connections, force_close=True
                )
            )
        return self._fresh

    def _new_session(self, connector: aiohttp.UnixConnector) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(
            connector=connector,
            trace_configs=[reuse_tracing()],
            # A generation may take minutes; only reaching the engine is timed.
            timeout=aiohttp.ClientTimeout(total=None, connect=CONNECT_SECONDS),
            # The engine's bytes go to the client as they are.
            auto_decompress=False,
            skip_auto_headers=("User-Agent", "Accept-Encoding", "Content-Type"),
        )

    async def send(
        self, method: str, target: bytes, content: bytes, headers: RawHeaders, watched: bool = True
    ) -> EngineAnswer:
        """Send a request; return once the answer's headers are in. Cancelling closes the
        connection. A `watched` request counts in `unanswered` until its answer's body
        begins: one the engine must take steps to answer (an adapter's load takes none).

        A request that fails on a pooled connection before any answer came back went on a
        connection the engine had just closed (its keep-alive ran out as the request was
        written): it goes again, once, on a fresh connection. Any other failure, or a second
        one, is the engine's absence."""
        if not watched:
            return await self._send_once_more(method, target, content, headers, lambda: None)
        self.unanswered += 1
        try:
            return await self._send_once_more(method, target, content, headers, self._answered)
        except BaseException:
            self._answered()
            raise

    def _answered(self) -> None:
        self.unanswered -= 1

    async def _send_once_more(
        self,
        method: str,
        target: bytes,
        content: bytes,
        headers: RawHeaders,
        answered: Callable[[], None],
    ) -> EngineAnswer:
        sent = SimpleNamespace(reused=False)
        try:
            return await self._send(
                self.session(), method, target, content, headers, sent, answered
            )
        except CLOSED_UNDER_US as error:
            if not sent.reused:
                raise EngineError(repr(error)) from error
            log.info("the engine had closed a pooled connection (%r); sent again", error)
        except (aiohttp.ClientError, OSError) as error:
            raise EngineError(repr(error)) from error
        try:
            fresh = self.fresh_session()
            return await self._send(
                fresh, method, target, content, headers, SimpleNamespace(), answered
            )
        except (aiohttp.ClientError, OSError) as error:
            raise EngineError(repr(error)) from error

    async def _send(
        self,
        session: aiohttp.ClientSession,
        method: str,
        target: bytes,
        content: bytes,
        headers: RawHeaders,
        sent: SimpleNamespace,
        answered: Callable[[], None],
    ) -> EngineAnswer:
        response = await session.request(
            method,
            engine_url(target),
            data=content or None,
            headers=as_text(headers),
            allow_redirects=False,
            compress=None,
            trace_request_ctx=sent,
        )
        return EngineAnswer(response, answered)

    async def get(self, path: str, timeout: float) -> tuple[int, str] | None:
        """A small GET (health, metrics): its status and text, or None when unreachable."""
        try:
            async with self.session().get(
                engine_url(path.encode()), timeout=aiohttp.ClientTimeout(total=timeout)
            ) as response:
                return response.status, await response.text()
        except (aiohttp.ClientError, OSError, TimeoutError):
            return None

    async def get_text(self, path: str, timeout: float = 5.0) -> str | None:
        """A GET's text when the engine answers 200 (its /metrics), else None."""
        answer = await self.get(path, timeout)
        return answer[1] if answer is not None and answer[0] == 200 else None

    async def reset(self) -> None:
        """Drop every pooled connection: they lead to an engine that is gone."""
        await self.aclose()
        self._session = self._fresh = None

    async def aclose(self) -> None:
        for session in (self._session, self._fresh):
            if session is not None:
                await session.close()
