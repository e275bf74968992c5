"""The front's HTTP/1.1 wire protocol: uvicorn's, with its malformed-request answer in JSON.

A request the HTTP parser cannot read (a space or a NUL in the request target, a bad
header line) never reaches the app; uvicorn answers it with a plain-text 400 of its own.
Clients of the front parse every error as the OpenAI-shaped JSON the app sends, so this
one is the same shape too.

An upload the app refuses (413) is answered at once, and what the client still sends of it
is read and thrown away (uvicorn's parser drops the body of an answered request) for at most
LINGER_SECONDS before the connection closes: nginx's lingering close. Closing at once would
reset the connection under a client that sends its whole body before it reads (Python's
http.client, requests, most SDKs), which then reports a broken pipe instead of the 413.
"""

from __future__ import annotations

import json

from uvicorn.protocols.http.auto import AutoHTTPProtocol

from serving.errors import error_body

LINGER_SECONDS = 30.0
MALFORMED = (
    "the request could not be parsed as HTTP/1.1 (a bad request line, URL or header); "
    "percent-encode the URL and send headers as name: value lines."
)


def bad_request_bytes(default_headers: list[tuple[bytes, bytes]]) -> bytes:
    """A whole 400 answer, JSON body, ending the connection."""
    body = json.dumps(error_body(400, MALFORMED)).encode() + b"\n"
    head = [b"HTTP/1.1 400 Bad Request\r\n"]
    head += [name + b": " + value + b"\r\n" for name, value in default_headers]
    head += [
        b"content-type: application/json\r\n",
        b"content-length: %d\r\n" % len(body),
        b"connection: close\r\n\r\n",
    ]
    return b"".join(head) + body


class FrontProtocol(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
    """uvicorn's HTTP protocol (httptools, or h11 without it), answering parse errors in JSON."""

    def send_400_response(self, msg: str) -> None:
        self.transport.write(bad_request_bytes(self.server_state.default_headers))
        self.transport.close()

    def on_response_complete(self) -> None:
        cycle = self.cycle
        super().on_response_complete()
        if cycle is not None and cycle.more_body and not self.transport.is_closing():
            # Answered before its body was all in: the rest is dropped as it comes.
            self.loop.call_later(LINGER_SECONDS, self.end_linger, cycle)

    def end_linger(self, cycle) -> None:
        if self.cycle is cycle and cycle.more_body and not self.transport.is_closing():
            self.transport.close()
