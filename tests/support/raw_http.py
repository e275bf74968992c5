"""HTTP as bytes on a socket: paths, headers and uploads exactly as a hostile or broken
client sends them. httpx and http.client normalise or refuse much of this."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit


def connect(url: str, receive_buffer: int | None = None, timeout: float = 60) -> socket.socket:
    parts = urlsplit(url)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if receive_buffer is not None:
        # Before connect, so the window the server sees stays this small.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.settimeout(timeout)
    sock.connect((parts.hostname, parts.port))
    return sock


def read_all(sock: socket.socket) -> bytes:
    """Everything until the server closes the connection."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def read_one(sock: socket.socket) -> bytes:
    """One answer, its head and its Content-Length body, without waiting for the server to
    close the connection."""
    data = b""
    while b"\r\n\r\n" not in data and (chunk := sock.recv(65536)):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int((header_values(data, b"content-length") or [b"0"])[0])
    while len(body) < length and (chunk := sock.recv(65536)):
        body += chunk
    return head + b"\r\n\r\n" + body


def exchange(url: str, request: bytes, timeout: float = 60) -> bytes:
    """Send `request` (ask for Connection: close) and return the whole answer."""
    with connect(url, timeout=timeout) as sock:
        sock.sendall(request)
        return read_all(sock)


def get(url: str, path: bytes, headers: bytes = b"") -> bytes:
    return exchange(
        url,
        b"GET " + path + b" HTTP/1.1\r\nHost: front\r\n" + headers + b"Connection: close\r\n\r\n",
    )


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def header_values(answer: bytes, name: bytes) -> list[bytes]:
    head = answer.split(b"\r\n\r\n", 1)[0]
    return [
        line.split(b":", 1)[1].strip()
        for line in head.split(b"\r\n")[1:]
        if line.split(b":", 1)[0].strip().lower() == name.lower()
    ]


def body_of(answer: bytes) -> bytes:
    return answer.split(b"\r\n\r\n", 1)[1]
