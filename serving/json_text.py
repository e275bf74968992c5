"""JSON as UTF-8 bytes, for any text a request can hold.

A JSON string may escape a lone UTF-16 surrogate (`"\\ud800"`); Python decodes it into a
str that UTF-8 cannot encode, so writing such a value back out with `ensure_ascii=False`
raises. Inside JSON text a character only ever stands in a string, where the backslash
escape `\\udXXX` is what it was: encoding with `backslashreplace` writes the client's
escape back, and everything else as UTF-8.
"""

from __future__ import annotations

import json
from typing import Any


def json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "backslashreplace")
