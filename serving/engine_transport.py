"""The front's connections to the engine: httpx over asyncio's own Unix-socket streams.

httpx reaches a Unix socket through anyio, whose Unix stream registers and unregisters the
socket with the event loop for every read: two extra system calls and a future per relayed
chunk, on the core the engine's API server shares. asyncio's stream protocol keeps the socket
registered and hands over whatever has arrived. Everything above the socket (HTTP/1.1 with
h11, the keep-alive pool, timeouts, errors) stays httpx's and httpcore's.
"""

from __future__ import annotations

import asyncio
import typing

import httpcore
import httpx

READ_LIMIT = 1 << 20


class AsyncioStream(httpcore.AsyncNetworkStream):
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader = reader
        self.writer = writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            async with asyncio.timeout(timeout):
                return await self.reader.read(max_bytes)
        except TimeoutError:
            raise httpcore.ReadTimeout("the engine sent nothing in time") from None
        except OSError as error:
            raise httpcore.ReadError(str(error)) from error

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        try:
            self.writer.write(buffer)
            async with asyncio.timeout(timeout):
                await self.writer.drain()
        except TimeoutError:
            raise httpcore.WriteTimeout("the engine took no more of the request in time") from None
        except OSError as error:
            raise httpcore.WriteError(str(error)) from error

    async def aclose(self) -> None:
        self.writer.close()

    def get_extra_info(self, info: str) -> typing.Any:
        if info == "is_readable":
            # The pool asks before reusing an idle connection: the engine closed it (EOF),
            # or sent something unasked for.
            return self.reader.at_eof() or bool(self.reader._buffer)  # noqa: SLF001
        return None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: typing.Iterable[typing.Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_unix_connection(path, limit=READ_LIMIT)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"no connection to unix:{path} in time") from None
        except OSError as error:
            raise httpcore.ConnectError(str(error)) from error
        return AsyncioStream(reader, writer)

    async def connect_tcp(self, *args: typing.Any, **kwargs: typing.Any) -> typing.NoReturn:
        raise httpcore.ConnectError("the engine is reached over its Unix socket only")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def engine_transport(socket_path: str, max_connections: int) -> httpx.AsyncHTTPTransport:
    """httpx's transport, its pool connecting through AsyncioBackend."""
    transport = httpx.AsyncHTTPTransport(uds=socket_path)
    # httpx takes no network backend of its own; its pool (httpcore's) does.
    transport._pool = httpcore.AsyncConnectionPool(  # noqa: SLF001
        max_connections=max_connections,
        max_keepalive_connections=max_connections,
        uds=socket_path,
        network_backend=AsyncioBackend(),
    )
    return transport
