"""Which headers cross the front, in each direction.

Headers travel as raw byte pairs: repeated headers stay repeated, and the bytes a client
sent (UTF-8 in a custom attribute, say) reach the engine unchanged. A value that is not
UTF-8 could not reach it unchanged (the engine client writes header text as UTF-8), so the
front refuses it rather than pass on other bytes.
"""

from __future__ import annotations

from collections.abc import Iterable

RawHeaders = list[tuple[bytes, bytes]]

# RFC 9110 hop-by-hop headers, plus those the HTTP layers recompute on each hop.
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"trailers",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"content-length",
    }
)
# The front's HTTP server writes its own; the engine's would make two of each.
SERVER_WRITTEN = frozenset({b"date", b"server"})
# The front names the request in the engine itself (SageMaker's inference id, or ours).
REQUEST_ID = b"x-request-id"


def connection_named(headers: Iterable[tuple[bytes, bytes]]) -> set[bytes]:
    """Header names listed in Connection: hop-by-hop for this message only (RFC 9110 7.6.1)."""
    named: set[bytes] = set()
    for name, value in headers:
        if name.lower() == b"connection":
            named.update(token.strip().lower() for token in value.split(b","))
    return named


def end_to_end(headers: Iterable[tuple[bytes, bytes]], drop: frozenset = frozenset()) -> RawHeaders:
    pairs = [(name.lower(), value) for name, value in headers]
    dropped = HOP_BY_HOP | drop | connection_named(pairs)
    return [(name, value) for name, value in pairs if name not in dropped]


def to_engine(headers: Iterable[tuple[bytes, bytes]], request_id: bytes) -> RawHeaders:
    """A client's request headers as the engine gets them."""
    forwarded = end_to_end(headers, drop=frozenset({REQUEST_ID}))
    return [*forwarded, (REQUEST_ID, request_id)]


def to_engine_as_json(headers: Iterable[tuple[bytes, bytes]], request_id: bytes) -> RawHeaders:
    """The same, for a body the front hands the engine as JSON whatever the client's type
    said (a Batch Transform record, a request of a bidirectional-stream session)."""
    forwarded = end_to_end(headers, drop=frozenset({REQUEST_ID, b"content-type"}))
    return [*forwarded, (REQUEST_ID, request_id), (b"content-type", b"application/json")]


def to_client(headers: Iterable[tuple[bytes, bytes]]) -> RawHeaders:
    """The engine's response headers as the client gets them."""
    return end_to_end(headers, drop=SERVER_WRITTEN)


def has_forbidden_bytes(value: bytes) -> bool:
    """Control bytes other than tab, which no HTTP/1.1 header value may carry."""
    return any(byte < 0x20 and byte != 0x09 or byte == 0x7F for byte in value)


def value_problem(value: bytes) -> str | None:
    """Why a header value cannot go to the engine as it is, and the fix; or None."""
    if has_forbidden_bytes(value):
        return "carries control characters; remove them"
    if not value.isascii():
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            return "is not UTF-8 text; encode it as UTF-8"
    return None
