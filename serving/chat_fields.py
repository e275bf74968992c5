"""The shape of a chat payload's agent fields (`tools`, `tool_choice`, `response_format`),
checked before the engine sees it.

vLLM's own /invocations tries each request type in turn and reports the last one's error, so
a chat payload with a malformed `tools` came back as "Either prompt or prompt_embeds must be
provided" (the completion type's complaint). These checks give the 400 that names the field
instead. They check shape only, the part vLLM's router loses; vLLM still validates the rest.
One check is the container's own: where the model is never shown the tools (a chat template
without tool syntax that the container cannot add any to, serving/engine_args/agents.py),
tool_choice "auto" is refused with the sentence the settings carry.
"""

from __future__ import annotations

import json
from typing import Any

from serving.errors import RequestRefused

TOOL_CHOICES = ("none", "auto", "required")
RESPONSE_FORMATS = ("text", "json_object", "json_schema", "structural_tag")


def refuse(message: str) -> RequestRefused:
    return RequestRefused(400, message)


def tool_names(tools: Any) -> list[str]:
    if not isinstance(tools, list):
        raise refuse('\'tools\' must be a list of {"type": "function", "function": {...}}.')
    names = []
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise refuse(
                f'\'tools[{index}]\' must be {{"type": "function", "function": '
                '{"name": ..., "parameters": {...}}}; its function or its name is missing.'
            )
        parameters = function.get("parameters")
        if parameters is not None and not isinstance(parameters, dict):
            raise refuse(f"'tools[{index}].function.parameters' must be a JSON schema object.")
        names.append(function["name"])
    return names


def check_tool_choice(choice: Any, names: list[str] | None) -> None:
    if choice is None or choice in TOOL_CHOICES:
        return
    if isinstance(choice, dict):
        function = choice.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if isinstance(name, str):
            if names is not None and name not in names:
                raise refuse(
                    f"'tool_choice' names the function {name!r}, which is not among 'tools' "
                    f"({', '.join(names) or 'none given'})."
                )
            return
    raise refuse(
        '\'tool_choice\' must be "none", "auto", "required" or '
        '{"type": "function", "function": {"name": ...}}.'
    )


def check_response_format(response_format: Any) -> None:
    if response_format is None:
        return
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if kind not in RESPONSE_FORMATS:
        raise refuse(
            "'response_format' must be an object whose \"type\" is one of "
            f"{', '.join(RESPONSE_FORMATS)}."
        )
    if kind == "json_schema" and not isinstance(response_format.get("json_schema"), dict):
        raise refuse(
            "'response_format' of type json_schema needs \"json_schema\": "
            '{"name": ..., "schema": {...}}.'
        )


def asks_auto_tool_choice(payload: dict[str, Any]) -> bool:
    """Tools given, and the model left to choose whether to call one: tool_choice "auto", or
    none given (which vLLM reads as auto)."""
    return bool(payload.get("tools")) and payload.get("tool_choice") in (None, "auto")


def check_chat_fields(payload: dict[str, Any], auto_tool_choice_refusal: str | None = None) -> None:
    """Raise RequestRefused (400, naming the field) for a malformed agent field, or with
    `auto_tool_choice_refusal` for tool_choice "auto" where it is not served."""
    names = tool_names(payload["tools"]) if payload.get("tools") is not None else None
    check_tool_choice(payload.get("tool_choice"), names)
    check_response_format(payload.get("response_format"))
    if auto_tool_choice_refusal is not None and asks_auto_tool_choice(payload):
        raise refuse(auto_tool_choice_refusal)


def check_relayed_chat(body: bytes, auto_tool_choice_refusal: str | None) -> None:
    """The refusal of tool_choice "auto" for a chat body relayed as it came (/v1): parsed only
    where auto is refused and the body names tools; the engine answers for the rest."""
    if auto_tool_choice_refusal is None or b'"tools"' not in body:
        return
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        return
    if isinstance(payload, dict) and asks_auto_tool_choice(payload):
        raise refuse(auto_tool_choice_refusal)
