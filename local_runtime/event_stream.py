"""AWS event-stream framing, the wire format of InvokeEndpointWithResponseStream's body.

A message is a prelude (total length, headers length, CRC32 of those 8 bytes), headers,
the payload, and a CRC32 of everything before it. Headers here are all strings (type 7).
"""

from __future__ import annotations

import json
import struct
import zlib

STRING_HEADER = 7
# total length + headers length + prelude CRC, then the message CRC at the end.
PRELUDE_BYTES = 12
MESSAGE_CRC_BYTES = 4
CONTENT_TYPE = "application/vnd.amazon.eventstream"


def encode_headers(headers: dict[str, str]) -> bytes:
    encoded = bytearray()
    for name, value in headers.items():
        name_bytes, value_bytes = name.encode(), value.encode()
        encoded += struct.pack(">B", len(name_bytes)) + name_bytes
        encoded += struct.pack(">BH", STRING_HEADER, len(value_bytes)) + value_bytes
    return bytes(encoded)


def encode_message(headers: dict[str, str], payload: bytes) -> bytes:
    header_bytes = encode_headers(headers)
    total = PRELUDE_BYTES + len(header_bytes) + len(payload) + MESSAGE_CRC_BYTES
    prelude = struct.pack(">II", total, len(header_bytes))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + header_bytes + payload
    return message + struct.pack(">I", zlib.crc32(message))


def payload_part(data: bytes) -> bytes:
    """One `PayloadPart` event: bytes of the container's answer, as they came."""
    return encode_message(
        {
            ":event-type": "PayloadPart",
            ":content-type": "application/octet-stream",
            ":message-type": "event",
        },
        data,
    )


def stream_exception(kind: str, message: str, error_code: str | None = None) -> bytes:
    """An exception frame (`ModelStreamError`, `InternalStreamFailure`): boto3 raises it from
    the loop over the stream."""
    body: dict[str, str] = {"Message": message}
    if error_code is not None:
        body["ErrorCode"] = error_code
    return encode_message(
        {
            ":exception-type": kind,
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        json.dumps(body).encode(),
    )
