"""What the engine needs to serve agents: tool calls found in the target's own syntax, tool
arguments that follow their schema, and JSON answers that end.

- Tool calls. vLLM refuses every request with `tools` (any `tool_choice` but "none") unless
  it was started with --enable-auto-tool-choice and the parser for the target's syntax.
  The parser is chosen from the target (tool_parsers.choose), with the family's reasoning
  parser where the template thinks; SM_VLLM_TOOL_CALL_PARSER and SM_VLLM_REASONING_PARSER
  name others, `none` turns either off, and SM_VLLM_ENABLE_AUTO_TOOL_CHOICE=false turns
  tool calling off. An operator's SM_VLLM_CHAT_TEMPLATE is read instead of the target's.
- A template with no tool syntax. Named and required calls need no knowledge of any syntax
  (vLLM's grammar writes the whole call), so they are served with the `hermes` parser. A
  ChatML template is also given the tools section and `<tool_call>` syntax Qwen2.5's template
  adds to the same ChatML (chatml_tools.py, written for the engine as --chat-template), so
  `auto` is served too; for any other, the model is never shown the tools, and the front
  refuses `auto` with a sentence saying so rather than let the model answer blind.
- Arguments. vLLM's default constrains only a forced call's envelope and name, so a small
  model's arguments can break the function's schema; --tool-strict-level parameter holds
  every call to its schema, as if each tool said `"strict": true`. SM_VLLM_TOOL_STRICT_LEVEL
  overrides it (auto, function, parameter).
- JSON as the model writes it, and that ends. Guided JSON allows any whitespace between
  tokens, and a model that prefers newlines writes them until max_tokens; vLLM's
  disable_any_whitespace allows none, so every answer leaves the model's own `", "` and
  `": "` at its first separator. The container bounds it instead: at most
  JSON_MAX_WHITESPACE characters in each gap between JSON tokens (xgrammar's
  max_whitespace_cnt, exposed by vllm_patches/json_whitespace_bound.py), enough for the
  models' separators and indentation, and no run. SM_VLLM_STRUCTURED_OUTPUTS_CONFIG
  replaces it; vLLM accepts disable_any_whitespace only with the xgrammar or guidance
  backend named and max_whitespace_cnt only with xgrammar, which is checked here rather
  than by an engine that exits with 2.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from serving.engine_args.chatml_tools import NotChatml, tools_template
from serving.engine_args.environment import boolean, not_a_boolean, value_of
from serving.engine_args.tool_parsers import (
    Choice,
    Target,
    choose,
    named_template,
    read_target,
    template_writes,
)
from serving.variables import (
    AUTO_TOOL_CHOICE_VAR,
    CHAT_TEMPLATE_VAR,
    REASONING_PARSER_VAR,
    STRUCTURED_OUTPUTS_CONFIG_VAR,
    TOOL_CALL_PARSER_VAR,
    TOOL_STRICT_LEVEL_VAR,
)

OFF = "none"
STRICT_LEVEL = "parameter"
# The parser for a template with no tool syntax: the Hermes-style `<tool_call>` JSON that
# vLLM's grammar writes for named and required calls, and that the ChatML tools section teaches.
UNTAUGHT_PARSER = "hermes"
# Whitespace characters allowed in each gap between JSON tokens: the models' ", " and ": ", and
# a newline with indentation three levels deep at four spaces, seven at two (the demo pair's
# heads learn their JSON answers under it too: model_data_sources/grammar.py).
JSON_MAX_WHITESPACE = 16
STRUCTURED_OUTPUTS = {"backend": "xgrammar", "max_whitespace_cnt": JSON_MAX_WHITESPACE}
# The backends vLLM accepts each whitespace setting with.
WHITESPACE_BACKENDS = {
    "disable_any_whitespace": ("xgrammar", "guidance"),
    "max_whitespace_cnt": ("xgrammar",),
}


@dataclass(frozen=True)
class Agents:
    """The engine flags for agents, and a line saying what was chosen and why."""

    flags: tuple[str, ...]
    summary: str
    # The chat template the container writes for the engine (--chat-template), if any.
    chat_template: str | None = None
    # Where `auto` is not served: the sentence the front refuses it with.
    auto_tool_choice_refusal: str | None = None


@dataclass(frozen=True)
class ToolCalls:
    """What the engine is started with for tool calls, and the clause for the log."""

    flags: list[str]
    said: str
    chat_template: str | None = None
    auto_refusal: str | None = None


def named(environ: Mapping[str, str], variable: str) -> str | None:
    """A parser named by `variable`: None when unset, OFF for none/off/false."""
    value = value_of(environ, variable)
    if value is None:
        return None
    return OFF if value.lower() in (OFF, "off", "false") else value


def template_target(
    environ: Mapping[str, str], model_dir: Path | None
) -> tuple[Target | None, bool]:
    """What the parser is chosen from: the target, with the operator's chat template in place
    of its own where SM_VLLM_CHAT_TEMPLATE names one; and whether the template is the
    target's own (the only kind the container writes a template around)."""
    if model_dir is None:
        return None, True
    target = read_target(model_dir)
    value = value_of(environ, CHAT_TEMPLATE_VAR)
    if value is None:
        return target, True
    return Target(target.model_type, named_template(value)), False


def untaught(template: str, own: bool) -> ToolCalls:
    """Tool calls for a template with no tool syntax: the ChatML tools section where the
    template is the target's own ChatML, else named and required calls only."""
    flags = ["--enable-auto-tool-choice", "--tool-call-parser", UNTAUGHT_PARSER]
    try:
        if not own:
            raise NotChatml(f"the operator's ({CHAT_TEMPLATE_VAR}) is served as it is")
        written = tools_template(template)
    except NotChatml as why:
        said = (
            f"tool calls parsed by {UNTAUGHT_PARSER} for named and required tool_choice only: "
            f"the chat template has no tool-call syntax and no tools section can be added to "
            f'it ({why}), so the model is never shown the tools and tool_choice "auto" is '
            "refused"
        )
        refusal = (
            'tool_choice "auto" (also meant by tools without a tool_choice) is not served '
            "here: the model's chat template has no tool-call syntax, so the model is never "
            'shown the tools; name the function in tool_choice or send "required" (the '
            "engine then writes the call), or serve the model with a chat template that "
            f"writes tool calls ({CHAT_TEMPLATE_VAR})."
        )
        return ToolCalls(flags, said, auto_refusal=refusal)
    said = (
        f"tool calls parsed by {UNTAUGHT_PARSER}: the chat template has no tool-call syntax, "
        "so the container serves it with the tools section and '<tool_call>' syntax that "
        "Qwen2.5's template adds to the same ChatML (a chat without tools renders as the "
        "model's own template renders it)"
    )
    return ToolCalls(flags, said, chat_template=written)


def parser_fix(chosen: Choice | None, no_syntax: bool) -> str:
    """The fix for a named parser whose syntax the template never writes."""
    if chosen is not None and chosen.tool_call_parser:
        return f"Set it to {chosen.tool_call_parser} ({chosen.because}), or to none."
    if no_syntax:
        return (
            f"Set it to {UNTAUGHT_PARSER}, which the container serves a template without tool "
            "syntax with, or to none."
        )
    return "Give the model a chat template with tool calls, or set it to none."


def tool_parsers(
    environ: Mapping[str, str], model_dir: Path | None, problems: list[str]
) -> ToolCalls:
    """The tool-call and reasoning parser flags, what else they need, and the clause for the
    log."""
    auto = value_of(environ, AUTO_TOOL_CHOICE_VAR)
    try:
        wanted = True if auto is None else boolean(auto)
    except ValueError:
        problems.append(not_a_boolean(AUTO_TOOL_CHOICE_VAR, auto or ""))
        return ToolCalls([], "")
    tool_parser = named(environ, TOOL_CALL_PARSER_VAR)
    reasoning_parser = named(environ, REASONING_PARSER_VAR)
    target, own = template_target(environ, model_dir)
    chosen = choose(target) if target is not None else None
    if target is not None and not own and target.chat_template is None:
        chosen = Choice(None, None, f"{CHAT_TEMPLATE_VAR} names no chat template readable here")
    # A template without tool syntax: served with UNTAUGHT_PARSER (untaught).
    template = target.chat_template if target is not None else None
    no_syntax = template is not None and chosen is not None and chosen.tool_call_parser is None
    if not wanted or tool_parser == OFF:
        variable = AUTO_TOOL_CHOICE_VAR if not wanted else TOOL_CALL_PARSER_VAR
        calls = ToolCalls([], f"tool calls off ({variable}); requests with tools are refused")
    elif no_syntax and template is not None and tool_parser in (None, UNTAUGHT_PARSER):
        calls = untaught(template, own)
    elif tool_parser is not None:
        if target is not None and template_writes(tool_parser, template) is False:
            problems.append(
                f"{TOOL_CALL_PARSER_VAR}={tool_parser}: the target's chat template never "
                f"writes that parser's tool-call syntax, so no call would ever be found. "
                + parser_fix(chosen, no_syntax)
            )
        flags = ["--enable-auto-tool-choice", "--tool-call-parser", tool_parser]
        calls = ToolCalls(flags, f"tool calls parsed by {tool_parser} ({TOOL_CALL_PARSER_VAR})")
    elif chosen is not None and chosen.tool_call_parser is not None:
        flags = ["--enable-auto-tool-choice", "--tool-call-parser", chosen.tool_call_parser]
        said = f"tool calls parsed by {chosen.tool_call_parser}: {chosen.because}"
        calls = ToolCalls(flags, said)
    else:
        why = chosen.because if chosen is not None else "the target is not a local model folder"
        calls = ToolCalls(
            [],
            f"tool calls off: {why}; requests with tools are refused "
            f"(set {TOOL_CALL_PARSER_VAR} to turn them on)",
        )
    flags, said = list(calls.flags), calls.said
    if reasoning_parser is None and chosen is not None and flags:
        reasoning_parser = chosen.reasoning_parser
    if reasoning_parser not in (None, OFF):
        flags += ["--reasoning-parser", reasoning_parser]
        said += f"; reasoning parsed by {reasoning_parser}"
    return ToolCalls(flags, said, calls.chat_template, calls.auto_refusal)


def structured_outputs(environ: Mapping[str, str], problems: list[str]) -> tuple[list[str], str]:
    """Our structured-outputs flag when the user set none; theirs checked."""
    raw = value_of(environ, STRUCTURED_OUTPUTS_CONFIG_VAR)
    if raw is None:
        flags = ["--structured-outputs-config", json.dumps(STRUCTURED_OUTPUTS)]
        return flags, (
            f"JSON answers by xgrammar with at most {JSON_MAX_WHITESPACE} whitespace "
            "characters between tokens"
        )
    try:
        config = json.loads(raw)
    except ValueError:
        return [], f"structured outputs as {STRUCTURED_OUTPUTS_CONFIG_VAR} says"
    if not isinstance(config, dict):
        return [], f"structured outputs as {STRUCTURED_OUTPUTS_CONFIG_VAR} says"
    backend = config.get("backend", "auto")
    for setting, backends in WHITESPACE_BACKENDS.items():
        if config.get(setting) not in (None, False) and backend not in backends:
            problems.append(
                f"{STRUCTURED_OUTPUTS_CONFIG_VAR} sets {setting} with backend {backend!r}; "
                f"vLLM allows it only with the {' or '.join(backends)} backend. Add "
                '"backend": "xgrammar", or leave the variable unset (the container\'s '
                f"default is {json.dumps(STRUCTURED_OUTPUTS)})."
            )
    bound = config.get("max_whitespace_cnt")
    if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int) or bound < 1):
        problems.append(
            f"{STRUCTURED_OUTPUTS_CONFIG_VAR} sets max_whitespace_cnt to {bound!r}; it is the "
            "number of whitespace characters allowed between JSON tokens, a whole number of "
            f"at least 1 (the container's default is {JSON_MAX_WHITESPACE})."
        )
    return [], f"structured outputs as {STRUCTURED_OUTPUTS_CONFIG_VAR} says"


def agent_flags(environ: Mapping[str, str], model_dir: Path | None, problems: list[str]) -> Agents:
    """The flags the container adds for agents (before the user's own flags)."""
    calls = tool_parsers(environ, model_dir, problems)
    flags, said = calls.flags, calls.said
    if "--tool-call-parser" in flags and value_of(environ, TOOL_STRICT_LEVEL_VAR) is None:
        flags += ["--tool-strict-level", STRICT_LEVEL]
        said += "; arguments held to their schemas"
    output_flags, output_said = structured_outputs(environ, problems)
    return Agents(
        tuple(flags + output_flags),
        f"agents: {said}; {output_said}",
        calls.chat_template,
        calls.auto_refusal,
    )
