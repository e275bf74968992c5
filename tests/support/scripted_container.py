"""Containers the local runtime's tests talk to without vLLM: the stand-in container served
in this process, and a socket server that answers each request from a script."""

from __future__ import annotations

import contextlib
import itertools
import socket
import threading
from collections.abc import Callable, Iterator

from tests.support.in_process import serving
from tests.support.standin_container import app as standin_app


def standin(port: int | None = None):
    """The stand-in container on a loopback port, in this process, for the block's duration."""
    return serving(standin_app, port, log_level="error")


def read_request(connection: socket.socket) -> bytes:
    """One request off the socket, head and Content-Length body; b"" once the peer closed."""
    data = b""
    while b"\r\n\r\n" not in data:
        if not (chunk := connection.recv(65536)):
            return b""
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.lower().split(b"\r\n")
            if b"content-length" in line
        ),
        0,
    )
    while len(body) < length:
        body += connection.recv(65536)
    return head


# (the connection, its number from 1, the request's number on it from 1, the request's head)
Script = Callable[[socket.socket, int, int, bytes], bool]


@contextlib.contextmanager
def scripted_container(script: Script) -> Iterator[tuple[str, list[int]]]:
    """A socket server that hands each request to `script`, which answers or not, and says
    whether to keep the connection open. Yields the URL and a one-item list counting the
    connections accepted."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted = [0]

    def serve(connection: socket.socket, number: int) -> None:
        with connection:
            for request_number in itertools.count(1):
                request = read_request(connection)
                if not request or not script(connection, number, request_number, request):
                    return

    accept_in_background(listener, serve, accepted)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", accepted
    finally:
        listener.close()


def accept_in_background(
    listener: socket.socket, serve: Callable[[socket.socket, int], None], accepted: list[int]
) -> None:
    """Each connection to `listener` served by `serve(connection, its number from 1)` in a
    thread of its own, counted in `accepted[0]`, until the listener is closed."""

    def accept() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            accepted[0] += 1
            threading.Thread(target=serve, args=(connection, accepted[0]), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()


def ok(body: bytes = b"{}", extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)
