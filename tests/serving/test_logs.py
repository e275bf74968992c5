"""Logs: text from a request cannot forge a log line."""

from __future__ import annotations

import uuid

from serving.logs import printable
from tests.support.raw_http import get, status_of


def test_printable_escapes_every_line_breaker():
    text = "a\r\nb\x00c\x1b[31md\x85e\u2028f\u2029g\x7f"
    escaped = printable(text)
    assert escaped == "a\\x0d\\x0ab\\x00c\\x1b[31md\\x85e\\u2028f\\u2029g\\x7f"
    assert len(escaped.splitlines()) == 1


def test_printable_keeps_invalid_utf8_visible():
    assert printable(b"/v1/\xff\xfe") == "/v1/\\xff\\xfe"


def test_a_path_cannot_forge_an_access_log_line(peagle):
    marker = uuid.uuid4().hex
    forged = f"2026-01-01 00:00:00,000 INFO serving.access: forged-{marker}"
    path = b"/v1/x%0d%0a" + forged.replace(" ", "%20").encode() + b"%0a"
    assert status_of(get(peagle.url, path)) == 404
    log = peagle.log_once(f"forged-{marker}")
    lines = [line for line in log.splitlines() if f"forged-{marker}" in line]
    assert len(lines) == 1
    assert not lines[0].startswith("2026-01-01")
