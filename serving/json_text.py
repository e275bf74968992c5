"""JSON text and bytes for any value a request or an answer can hold.

A JSON string may escape a lone UTF-16 surrogate (`"\\ud800"`); Python decodes it into a
str that UTF-8 cannot encode, so writing such a value back out with `ensure_ascii=False`
raises (a 500, or a capture thread that dies). Inside JSON text a character only ever stands
in a string, where the backslash escape `\\udXXX` is what it was: encoding with
`backslashreplace` writes the client's escape back, and everything else as UTF-8.
"""

from __future__ import annotations

import json
from typing import Any

COMPACT = (",", ":")


def json_bytes(value: Any, separators: tuple[str, str] | None = None) -> bytes:
    text = json.dumps(value, ensure_ascii=False, separators=separators)
    return text.encode("utf-8", "backslashreplace")


def json_text(value: Any) -> str:
    """The same JSON as text that encodes to UTF-8 (a WebSocket text frame)."""
    return json_bytes(value).decode("utf-8")
