"""The runtime's HTTP/1.1 client to the container: keep-alive connections on asyncio streams.

httpx cost 1.1 to 1.7 ms of CPU per relayed call on the 2-core dev machine (its request and
response models, h11, anyio and the pool's bookkeeping), most of what the runtime added to a
call; this client costs a tenth of that. The container speaks plain HTTP/1.1 on loopback, and
a relay writes one request and reads one answer at a time on a connection, which takes only
this much code.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping
from urllib.parse import urlsplit

# Connections kept open between calls; more are opened as concurrency needs, then closed.
MAX_IDLE_CONNECTIONS = 64
# How long one is kept idle: well under the container's keep-alive (the front's 65 s), so the
# pool never offers a connection the container is about to close. One it closed all the
# same (another server behind the URL) is met by `send`, which goes again.
MAX_IDLE_SECONDS = 30.0
# Answers that carry no body whatever their headers say (RFC 9112, 6.3).
BODYLESS_STATUSES = frozenset({204, 304})
HEAD_END = b"\r\n\r\n"
LINE_END = b"\r\n"
# The most read at once from a body not cut into chunks.
READ_BYTES = 64 * 1024


class ContainerError(Exception):
    """The container could not be reached, or broke the connection or HTTP before the whole
    answer arrived. The message says which, for the client's ModelError."""


class ClosedBeforeAnswer(ContainerError):
    """The connection ended before any byte of the answer. On a reused connection that is the
    container closing it while idle (its keep-alive timeout), so the request may go again."""


class Head:
    """An answer's status and headers (names lower-case; repeated headers joined by ', ')."""

    def __init__(self, status: int, headers: dict[str, str]):
        self.status = status
        self.headers = headers

    @property
    def chunked(self) -> bool:
        return "chunked" in self.headers.get("transfer-encoding", "").lower()

    @property
    def keeps_alive(self) -> bool:
        return "close" not in self.headers.get("connection", "").lower()

    @property
    def content_length(self) -> int | None:
        """None when the length is not given (chunked, or until the container closes)."""
        if self.status in BODYLESS_STATUSES:
            return 0
        if self.chunked or "content-length" not in self.headers:
            return None
        value = self.headers["content-length"]
        if not value.isdigit():
            raise ContainerError(f"the container's answer has a bad Content-Length: {value!r}")
        return int(value)


def parse_head(raw: bytes) -> Head:
    status_line, *lines = raw.decode("latin-1").split("\r\n")
    version, _, rest = status_line.partition(" ")
    if not version.startswith("HTTP/1.") or not rest[:3].isdigit():
        raise ContainerError(f"the container's answer is not HTTP/1.1: {status_line[:100]!r}")
    headers: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(":")
        if colon:
            name, value = name.strip().lower(), value.strip()
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return Head(int(rest[:3]), headers)


def request_bytes(
    method: str, target: str, host: str, headers: Mapping[str, str], body: bytes
) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", f"host: {host}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if body or method == "POST":
        lines.append(f"content-length: {len(body)}")
    # One write: head and body leave in as few packets as the kernel can make.
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class Connection:
    """One keep-alive connection: a request written, then its answer read to the end before
    the next request (HTTP/1.1 without pipelining)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader = reader
        self.writer = writer
        # True only once an answer has been read to its end and the container keeps it open.
        self.reusable = False
        self.idle_since = 0.0

    def is_open(self) -> bool:
        # A container that closed the connection while idle left EOF (or an error) behind.
        return not (self.reader.at_eof() or self.reader.exception() or self.writer.is_closing())

    def close(self) -> None:
        self.reusable = False
        self.writer.close()

    async def send(self, request: bytes) -> Head:
        """Write the request; read the answer's head."""
        self.reusable = False
        try:
            self.writer.write(request)
            await self.writer.drain()
            head = parse_head(await self.reader.readuntil(HEAD_END))
            while 100 <= head.status < 200:  # 100 Continue and the like come before the answer
                head = parse_head(await self.reader.readuntil(HEAD_END))
            return head
        except asyncio.IncompleteReadError as error:
            if error.partial:
                raise ContainerError("the container closed the connection mid-answer") from None
            raise ClosedBeforeAnswer("the container closed the connection") from None
        except asyncio.LimitOverrunError:
            raise ContainerError("the container's answer head is too long") from None
        except OSError as error:
            raise ClosedBeforeAnswer(f"{type(error).__name__}: {error}") from None

    async def read_body(self, head: Head) -> bytes:
        """The whole body."""
        length = head.content_length
        if length is None:
            return b"".join([chunk async for chunk in self.chunks(head, None)])
        try:
            body = await self.reader.readexactly(length)
        except (asyncio.IncompleteReadError, OSError) as error:
            raise broken(error) from None
        self.reusable = head.keeps_alive
        return body

    async def chunks(self, head: Head, read_timeout: float | None) -> AsyncIterator[bytes]:
        """The body as it comes: one item per HTTP chunk (or per read when not chunked), with
        at most `read_timeout` seconds (None: no limit) of silence before each."""
        length = head.content_length
        try:
            if length is not None:
                while length:
                    async with asyncio.timeout(read_timeout):
                        data = await self.reader.read(min(length, READ_BYTES))
                    if not data:
                        raise asyncio.IncompleteReadError(b"", length)
                    length -= len(data)
                    yield data
            elif head.chunked:
                while size := await self.chunk_size(read_timeout):
                    # Never yield inside a timeout: it would fire in the consumer's code.
                    async with asyncio.timeout(read_timeout):
                        data = await self.reader.readexactly(size + len(LINE_END))
                    yield data[:size]
                await self.trailers(read_timeout)
            else:  # no length: the body runs until the container closes the connection
                while True:
                    async with asyncio.timeout(read_timeout):
                        data = await self.reader.read(READ_BYTES)
                    if not data:
                        return
                    yield data
        except TimeoutError:
            raise ContainerError(
                f"the container sent nothing for {read_timeout:g} s mid-answer"
            ) from None
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError) as error:
            raise broken(error) from None
        self.reusable = head.keeps_alive

    async def chunk_size(self, read_timeout: float | None) -> int:
        async with asyncio.timeout(read_timeout):
            line = await self.reader.readuntil(LINE_END)
        size = line.split(b";", 1)[0].strip()  # chunk extensions follow a ';'
        try:
            return int(size, 16)
        except ValueError:
            raise ContainerError(f"the container sent a bad chunk size: {size[:20]!r}") from None

    async def trailers(self, read_timeout: float | None) -> None:
        async with asyncio.timeout(read_timeout):
            while await self.reader.readuntil(LINE_END) != LINE_END:
                pass


def broken(error: Exception) -> ContainerError:
    if isinstance(error, asyncio.IncompleteReadError):
        return ContainerError("the container closed the connection mid-answer")
    if isinstance(error, asyncio.LimitOverrunError):
        return ContainerError("the container sent a line too long for HTTP/1.1 framing")
    return ContainerError(f"the connection broke mid-answer ({type(error).__name__}: {error})")


class Answer:
    """A whole answer."""

    def __init__(self, head: Head, body: bytes):
        self.status = head.status
        self.headers = head.headers
        self.body = body


class StreamedAnswer:
    """An answer whose body is read as it comes; `close` when done with it, read or not."""

    def __init__(
        self,
        client: ContainerClient,
        connection: Connection,
        head: Head,
        read_timeout: float | None,
    ):
        self.status = head.status
        self.headers = head.headers
        self.client = client
        self.connection = connection
        self.head = head
        self.read_timeout = read_timeout

    def chunks(self) -> AsyncIterator[bytes]:
        return self.connection.chunks(self.head, self.read_timeout)

    async def read(self) -> bytes:
        return await self.connection.read_body(self.head)

    def close(self) -> None:
        # A body left unread leaves the connection unusable: release closes it then.
        self.client.release(self.connection)


class ContainerClient:
    """Requests to one container's base URL over a pool of keep-alive connections."""

    def __init__(self, base_url: str, connect_timeout: float):
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(
                f"container URL {base_url!r} is not http://HOST:PORT; the local runtime "
                "reaches the container over plain HTTP."
            )
        self.host = parts.hostname
        self.port = parts.port or 80
        self.authority = parts.netloc
        self.base_path = parts.path.rstrip("/")
        self.connect_timeout = connect_timeout
        self.idle: list[Connection] = []

    async def connect(self) -> Connection:
        try:
            async with asyncio.timeout(self.connect_timeout):
                reader, writer = await asyncio.open_connection(self.host, self.port)
        except TimeoutError:
            raise ContainerError(
                f"no connection to {self.authority} within {self.connect_timeout:g} s"
            ) from None
        except OSError as error:
            raise ContainerError(f"cannot connect to {self.authority}: {error}") from None
        return Connection(reader, writer)

    def idle_connection(self) -> Connection | None:
        now = time.monotonic()
        while self.idle:
            connection = self.idle.pop()
            if connection.is_open() and now - connection.idle_since < MAX_IDLE_SECONDS:
                return connection
            connection.close()
        return None

    def release(self, connection: Connection) -> None:
        if connection.reusable and connection.is_open() and len(self.idle) < MAX_IDLE_CONNECTIONS:
            connection.idle_since = time.monotonic()
            self.idle.append(connection)
        else:
            connection.close()

    async def send(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[Connection, Head]:
        """A connection with the request written and the answer's head read."""
        request = request_bytes(method, self.base_path + path, self.authority, headers, body)
        reused = self.idle_connection()
        if reused is not None:
            try:
                return reused, await reused.send(request)
            except ClosedBeforeAnswer:
                # The container closed it while idle, before reading this request: go again.
                reused.close()
            except BaseException:
                reused.close()
                raise
        connection = await self.connect()
        try:
            return connection, await connection.send(request)
        except BaseException:
            connection.close()
            raise

    async def fetch(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes = b""
    ) -> Answer:
        """The whole answer; the connection goes back to the pool only if it was read to the
        end (a timeout or cancellation midway closes it)."""
        connection, head = await self.send(method, path, headers, body)
        try:
            return Answer(head, await connection.read_body(head))
        finally:
            self.release(connection)

    async def stream(
        self, path: str, headers: Mapping[str, str], body: bytes, read_timeout: float | None
    ) -> StreamedAnswer:
        """POST; the answer's head now, its body as it comes."""
        connection, head = await self.send("POST", path, headers, body)
        return StreamedAnswer(self, connection, head, read_timeout)

    def close(self) -> None:
        while self.idle:
            self.idle.pop().close()
