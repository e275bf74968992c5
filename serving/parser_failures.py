"""A vLLM plugin: a tool parser that cannot parse the model's output logs one line, not a
traceback.

vLLM's tool parsers (`vllm/tool_parsers/*_tool_parser.py`) catch their own failures to read a
tool call out of the model's text, answer with the text as content (or leave a streamed
delta out), and log the failure with `logger.exception`: a full traceback at ERROR for
output the model wrote, which is normal traffic for a model that calls tools, seen here with
hermes for every call the model wrote half of. A log that shows tracebacks for normal
traffic trains operators to ignore tracebacks. This plugin (entry point
`vllm.general_plugins`, loaded in each vLLM process) makes each such record one WARNING
line as it is made: the request, the parser, why, and what the client got. Every other
record, tracebacks included, is made as before. It wraps the log record factory rather than
filtering vLLM's handler because vLLM builds its handlers again once its config is read.
"""

from __future__ import annotations

import logging
import sys

PARSER_LOGGERS = "vllm.tool_parsers."
# How far up the parser's caller the request's id is looked for (vLLM's chat generators
# hold it as `request_id`, a handful of frames up).
FRAMES_TO_SEARCH = 40


def request_id_of_caller() -> str:
    """The id of the request being answered: the nearest caller's `request_id`."""
    frame = sys._getframe(1)
    for _ in range(FRAMES_TO_SEARCH):
        if frame is None:
            break
        value = frame.f_locals.get("request_id")
        if isinstance(value, str) and value:
            return value
        frame = frame.f_back
    return "(unknown)"


def one_line(record: logging.LogRecord) -> logging.LogRecord:
    """A tool parser's failure with its traceback as one line; any other record as it is."""
    if not (record.exc_info and record.name.startswith(PARSER_LOGGERS)):
        return record
    error = record.exc_info[1]
    parser = record.name.removeprefix(PARSER_LOGGERS).removesuffix("_tool_parser")
    streaming = "stream" in str(record.msg).lower()
    kept = (
        "the stream went on without this piece"
        if streaming
        else "the client got the model's text as content"
    )
    record.msg = "request %s: tool parser %s could not read a tool call (%s: %s); %s"
    why = str(error).replace("\n", " ")[:200]
    record.args = (request_id_of_caller(), parser, type(error).__name__, why, kept)
    record.exc_info = None
    record.exc_text = None
    record.levelno = logging.WARNING
    record.levelname = "WARNING"
    return record


class OneLineParserFailures:
    """A log record factory: the one it wraps, with `one_line` applied."""

    def __init__(self, factory):
        self.factory = factory

    def __call__(self, *args, **kwargs) -> logging.LogRecord:
        return one_line(self.factory(*args, **kwargs))


def installed(factory) -> bool:
    while factory is not None:
        if isinstance(factory, OneLineParserFailures):
            return True
        factory = getattr(factory, "factory", getattr(factory, "_factory", None))
    return False


def register() -> None:
    factory = logging.getLogRecordFactory()
    if not installed(factory):  # plugins load more than once in some processes
        logging.setLogRecordFactory(OneLineParserFailures(factory))
