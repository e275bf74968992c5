"""The front's HTTP client to the engine, over the engine's private Unix socket.

aiohttp (a vLLM dependency, so in every image) parses the engine's answers in C and hands
over whatever has arrived: per relayed chunk that is a quarter less of the front's CPU than
httpx's pure-Python HTTP/1.1 (measured: 25.6 against 34.4 us a chunk over 32 streams), on
the core the engine's API server shares. The rest of the front sees only this module's
types: bytes in, bytes out, and `EngineError` when the engine is not there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
from yarl import URL

from serving.headers import RawHeaders

# The engine listens on a Unix socket only; HTTP needs a host name all the same.
ENGINE_ORIGIN = "http://engine"
CONNECT_SECONDS = 5.0


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


class EngineAnswer:
    """An answer whose status and headers have arrived; its body is read once, as it comes."""

    def __init__(self, response: aiohttp.ClientResponse):
        self._response = response
        self.status = response.status
        self.raw_headers: RawHeaders = list(response.raw_headers)

    def header(self, name: str) -> str:
        return self._response.headers.get(name, "")

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives, whatever has arrived at each step."""
        try:
            async for chunk in self._response.content.iter_any():
                yield chunk
        except (aiohttp.ClientError, OSError) as error:
            raise EngineError(repr(error)) from error

    async def read(self) -> bytes:
        try:
            return await self._response.read()
        except (aiohttp.ClientError, OSError) as error:
            raise EngineError(repr(error)) from error

    def close(self) -> None:
        """Keep the connection when the body was read to its end; otherwise close it, which
        is how vLLM learns to abort a generation nobody reads any more."""
        if self._response.content.is_eof():
            self._response.release()
        else:
            self._response.close()


class EngineClient:
    def __init__(self, socket_path: str, max_connections: int):
        self.socket_path = socket_path
        self.max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None
        # Why the engine is away, for the answers of requests it leaves (a stall, a restart).
        self.unavailable: str | None = None

    def session(self) -> aiohttp.ClientSession:
        # Made on first use: aiohttp wants a running event loop.
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.UnixConnector(
                    path=self.socket_path,
                    limit=self.max_connections,
                    keepalive_timeout=30,
                ),
                # A generation may take minutes; only reaching the engine is timed.
                timeout=aiohttp.ClientTimeout(total=None, connect=CONNECT_SECONDS),
                # The engine's bytes go to the client as they are.
                auto_decompress=False,
                skip_auto_headers=("User-Agent", "Accept-Encoding", "Content-Type"),
            )
        return self._session

    async def send(
        self, method: str, target: bytes, content: bytes, headers: RawHeaders
    ) -> EngineAnswer:
        """Send a request; return once the answer's headers are in. Cancelling closes the
        connection."""
        try:
            response = await self.session().request(
                method,
                engine_url(target),
                data=content or None,
                headers=as_text(headers),
                allow_redirects=False,
                compress=None,
            )
        except (aiohttp.ClientError, OSError) as error:
            raise EngineError(repr(error)) from error
        return EngineAnswer(response)

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
        self._session = None

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
