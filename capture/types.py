"""The few types the capture modules share: one captured exchange, and why a record is
skipped."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


@dataclass(frozen=True)
class Exchange:
    """One chat request and the answer the target gave it, whichever file format held them.

    `response` has the non-stream chat.completion shape; streamed answers are reassembled.
    """

    request: dict[str, Any]
    response: dict[str, Any]


class Skip(StrEnum):
    """Why a record did not become a training conversation; the summary counts each."""

    MALFORMED_LINE = "malformed_line"  # not a JSON object
    UNKNOWN_RECORD = "unknown_record"  # a JSON object of neither capture format
    BAD_ENCODING = "bad_encoding"  # Data Capture data that is not valid base64 or UTF-8
    MISSING_PAYLOAD = "missing_payload"  # the request or the answer was not captured
    ERROR_STATUS = "error_status"  # not answered with 200, or the answer is an error
    NOT_CHAT = "not_chat"  # not a chat-completions request and answer
    NO_ANSWER = "no_answer"  # the answer has no assistant text
    UNKNOWN_ROLE = "unknown_role"
    NON_TEXT_CONTENT = "non_text_content"  # images, audio, files
    SHORT_ANSWER = "short_answer"  # under --min-answer-chars
    TOO_LONG = "too_long"  # over --max-chars
    DUPLICATE = "duplicate"


class Skipped(Exception):
    def __init__(self, reason: Skip):
        self.reason = reason
        super().__init__(reason.value)
