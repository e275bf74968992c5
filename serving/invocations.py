"""What /invocations accepts: a JSON body, routed to vLLM's chat or completion API; a TGI
payload (`inputs`, `parameters`) becomes a completion request (serving/tgi.py); reasoning sent
back as blocks becomes the string vLLM takes (serving/reasoning.py)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from serving import reasoning
from serving.chat_fields import check_chat_fields
from serving.errors import RequestRefused
from serving.json_text import json_bytes
from serving.tgi import TgiAnswer, completion_request, is_tgi

# vLLM's own /invocations takes both payload kinds and applies SageMaker's session
# (X-Amzn-SageMaker-Session-Id) and adapter (X-Amzn-SageMaker-Adapter-Identifier) rules.
ENGINE_PATH = "/invocations"
# Keys that mark a payload vLLM's /invocations accepts: chat, completion, session control.
PAYLOAD_KEYS = ("messages", "prompt", "requestType")
JSON_MEDIA_TYPES = {"application/json", "text/json"}
# What clients send by default when nobody chose a type: the SageMaker SDK v2 Predictor
# without a serializer (octet-stream), LangChain's content handlers (text/plain). Their
# bodies are JSON all the same, so they are read as JSON; one that is not gets the 400.
DEFAULT_CLIENT_MEDIA_TYPES = {"application/octet-stream", "text/plain", "*/*"}


def check_content_type(content_type: str | None) -> None:
    """Absent means JSON (curl and boto3 users often leave it out), and so do the types
    clients send by default; anything else must be JSON."""
    if not content_type:
        return
    media_type = content_type.split(";", 1)[0].strip().lower()
    if (
        media_type in JSON_MEDIA_TYPES
        or media_type.endswith("+json")
        or media_type in DEFAULT_CLIENT_MEDIA_TYPES
    ):
        return
    raise RequestRefused(
        415,
        f"Content-Type {media_type!r} is not supported; send the payload as application/json.",
    )


# Python's JSON parser (the front's, and vLLM's API server's) gives up near 1,000 levels.
TOO_DEEP = (
    "request body nests arrays and objects too deeply for its JSON to be read (about 1,000 "
    "levels); no request needs more than a few dozen."
)
# No body with fewer brackets than this can be nested too deeply to parse.
FEWEST_BRACKETS_TOO_DEEP = 500


# The engine's API server hands a request to its engine core as MessagePack, which carries
# integers from -2**63 to 2**64 - 1; a larger one (in a JSON schema, say) failed there as a
# 500 with no message. Only a body with a run of this many digits can hold one.
LONGEST_INTEGER = re.compile(rb"\d{19,}")
INTEGER_RANGE = (-(2**63), 2**64 - 1)


def check_engine_limits(body: bytes, payload: Any = None) -> None:
    """Refuse what the engine cannot carry and would answer 500 for: a body nested past what
    its JSON parser reads, or an integer outside 64 bits. Only a body with many brackets or
    a long run of digits is parsed (or walked, given `payload`) to find out."""
    nested = body.count(b"[") + body.count(b"{") >= FEWEST_BRACKETS_TOO_DEEP
    long_digits = LONGEST_INTEGER.search(body) is not None
    if payload is None and (nested or long_digits):
        try:
            payload = json.loads(body)
        except RecursionError:
            raise RequestRefused(400, TOO_DEEP) from None
        except ValueError:
            return  # not JSON: the engine says so itself
    try:
        where = out_of_range(payload) if long_digits else None
    except RecursionError:
        raise RequestRefused(400, TOO_DEEP) from None
    if where is not None:
        raise RequestRefused(
            400,
            f"the integer at {where} is outside the 64-bit range the engine takes "
            f"({INTEGER_RANGE[0]} to {INTEGER_RANGE[1]}).",
        )


def out_of_range(value: Any, trail: str = "") -> str | None:
    """Where (a JSON path) the first integer outside INTEGER_RANGE is, if any."""
    if isinstance(value, int) and not isinstance(value, bool):
        low, high = INTEGER_RANGE
        return None if low <= value <= high else (trail or "the top")
    if isinstance(value, dict):
        items = ((f"{trail}.{key}" if trail else str(key), item) for key, item in value.items())
    elif isinstance(value, list):
        items = ((f"{trail}[{index}]", item) for index, item in enumerate(value))
    else:
        return None
    for where, item in items:
        if (found := out_of_range(item, where)) is not None:
            return found
    return None


def parse_json_object(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise RequestRefused(
            400,
            f"request body is not valid JSON: {error}. /invocations takes a JSON payload "
            "whatever the Content-Type says.",
        ) from None
    except RecursionError:
        raise RequestRefused(400, TOO_DEEP) from None
    if not isinstance(payload, dict):
        raise RequestRefused(
            400, f"request body is a JSON {type(payload).__name__}; send a JSON object."
        )
    return payload


def check_kind(payload: dict[str, Any]) -> None:
    if not any(key in payload for key in PAYLOAD_KEYS):
        raise RequestRefused(
            400,
            "payload has neither 'messages' nor 'prompt'; send an OpenAI chat-completion payload "
            '({"messages": [{"role": "user", "content": "..."}]}), a completion payload '
            '({"prompt": "..."}) or a TGI one ({"inputs": "...", "parameters": {...}}).',
        )


@dataclass(frozen=True)
class Edit:
    """What a checked body needs before the engine gets it: a refusal, `model` spliced in, a
    whole new body, or nothing. Small, so a parse in another process returns cheaply."""

    refusal: tuple[int, str] | None = None
    splice_model: bool = False
    replacement: bytes | None = None
    tgi: TgiAnswer | None = None
    stream: bool = False


@dataclass(frozen=True)
class Prepared:
    """The engine's body, and how to write its answer when the client spoke TGI."""

    content: bytes
    tgi: TgiAnswer | None = None
    # The client asked for a stream (`stream: true`, or TGI's `stream`).
    stream: bool = False


def plan(body: bytes, served_model_name: str, auto_tool_choice_refusal: str | None = None) -> Edit:
    """Parse and check the body; never raises, so it can run in a worker process.
    `auto_tool_choice_refusal`: the settings' sentence where tool_choice "auto" is refused."""
    try:
        payload = parse_json_object(body)
        check_engine_limits(body, payload)
        if is_tgi(payload) and not any(key in payload for key in PAYLOAD_KEYS):
            request, answer = completion_request(payload, served_model_name)
            replacement = json_bytes(request)
            return Edit(replacement=replacement, tgi=answer, stream=answer.stream)
        check_kind(payload)
        if "messages" in payload:
            check_chat_fields(payload, auto_tool_choice_refusal)
        elif payload.get("prompt") in ("", [], [""]):
            # vLLM refuses an empty prompt only once a stream has begun (a 200, then an error).
            raise RequestRefused(400, "'prompt' is empty; send the text to continue.")
    except RequestRefused as refused:
        return Edit(refusal=(refused.status, refused.message))
    stream = payload.get("stream") is True
    if (messages := reasoning.messages_with_text(payload.get("messages"))) is not None:
        # Reasoning sent back as blocks: re-encoded as the string vLLM takes.
        payload = {**payload, "messages": messages}
        if "requestType" not in payload and not payload.get("model"):
            payload["model"] = served_model_name
        return Edit(replacement=json_bytes(payload), stream=stream)
    if "requestType" in payload or payload.get("model"):
        return Edit(stream=stream)
    if "model" in payload or json.detect_encoding(body) != "utf-8":
        # An explicit null or empty model (or a UTF-16/32 body): only a re-encode fixes it.
        replaced = json_bytes({**payload, "model": served_model_name})
        return Edit(replacement=replaced, stream=stream)
    return Edit(splice_model=True, stream=stream)


def apply(body: bytes, edit: Edit, served_model_name: str) -> Prepared:
    """The body as the engine gets it. An absent `model` is spliced in after the opening
    brace, so a 5 MB prompt is never re-serialised."""
    if edit.refusal is not None:
        raise RequestRefused(*edit.refusal)
    if edit.replacement is not None:
        return Prepared(edit.replacement, edit.tgi, edit.stream)
    if not edit.splice_model:
        return Prepared(body, stream=edit.stream)
    opening = body.index(b"{") + 1
    name = json.dumps(served_model_name).encode()
    spliced = b"".join((body[:opening], b'"model": ', name, b",", body[opening:]))
    return Prepared(spliced, stream=edit.stream)


def prepare(
    body: bytes, served_model_name: str, auto_tool_choice_refusal: str | None = None
) -> Prepared:
    """Check an /invocations body and return what the engine's /invocations gets."""
    edit = plan(body, served_model_name, auto_tool_choice_refusal)
    return apply(body, edit, served_model_name)
