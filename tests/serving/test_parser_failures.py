"""A tool parser's failure to read the model's output is one log line, not a traceback
(serving/parser_failures.py, a vLLM plugin)."""

from __future__ import annotations

import importlib.metadata
import io
import json
import logging

from serving.parser_failures import OneLineParserFailures


def logged(logger_name: str, message: str) -> str:
    """What vLLM's handler writes when `logger_name` logs `message` with the exception of a
    failed parse, inside a generator that holds the request's id as vLLM's do."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
    factory = logging.getLogRecordFactory()
    logging.setLogRecordFactory(OneLineParserFailures(factory))
    logger = logging.getLogger(logger_name)
    logger.addHandler(handler)
    logger.propagate = False

    def extract_tool_calls(model_output: str) -> None:
        try:
            json.loads(model_output)
        except Exception:
            logger.exception(message)

    def chat_completion_full_generator(request_id: str) -> None:
        extract_tool_calls('{"name": "get_weather", "arguments": {"city": "Par')

    try:
        chat_completion_full_generator("chatcmpl-abc123")
    finally:
        logger.removeHandler(handler)
        logging.setLogRecordFactory(factory)
    return out.getvalue()


def test_a_parse_failure_is_one_warning_with_the_request_and_the_parser():
    text = logged("vllm.tool_parsers.hermes_tool_parser", "Error in extracting tool call.")
    assert "Traceback" not in text and len(text.splitlines()) == 1
    assert text.startswith("WARNING vllm.tool_parsers.hermes_tool_parser request chatcmpl-abc123")
    assert "tool parser hermes could not read a tool call (JSONDecodeError: " in text
    assert text.rstrip().endswith("the client got the model's text as content")


def test_a_streamed_parse_failure_says_the_piece_was_left_out():
    text = logged(
        "vllm.tool_parsers.llama_tool_parser", "Error trying to handle streaming tool call."
    )
    assert "tool parser llama could not read" in text
    assert text.rstrip().endswith("the stream went on without this piece")


def test_other_tracebacks_are_kept():
    text = logged("vllm.entrypoints.openai.serving", "Error in preprocessing prompt inputs")
    assert "Traceback" in text and text.startswith("ERROR")


def test_vllm_loads_the_filter_as_a_plugin():
    plugins = importlib.metadata.entry_points(group="vllm.general_plugins")
    assert "serving.parser_failures:register" in {plugin.value for plugin in plugins}
