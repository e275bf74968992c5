"""Log set-up: plain lines by default, one JSON object per line with SERVING_LOG_FORMAT=json."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Literal

LOG_FORMAT_VAR = "SERVING_LOG_FORMAT"
LogFormat = Literal["plain", "json"]

PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Request fields attached by the access log (`extra={"fields": {...}}`).
FIELDS = "fields"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **getattr(record, FIELDS, {}),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure(log_format: LogFormat = "plain") -> None:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(
        JsonFormatter() if log_format == "json" else logging.Formatter(PLAIN_FORMAT)
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)


# C0 and C1 control characters, DEL, and the Unicode line separators some log viewers split
# on: escaped wherever text from a request is written to a log, so it cannot forge a line.
UNPRINTABLE = {
    code: f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    for code in [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029]
}


def printable(value: str | bytes) -> str:
    """Request text (a path, a header value) made safe to put in one log line."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="backslashreplace")
    return value.translate(UNPRINTABLE)
