"""Tool calls for a ChatML chat template that teaches none: the tools section and `<tool_call>`
syntax that Qwen2.5's template adds to the same ChatML, written around the model's own template.

vLLM refuses every request with `tools` unless a tool-call parser reads the model's text, and a
template without tool syntax never shows the model the tools. For a template that renders plain
ChatML (`<|im_start|>role\\n...<|im_end|>\\n`) the container writes one that:
- renders a conversation without tools by the model's own template, byte for byte: the original
  is its `else` branch, so every prompt without tools, and the P-EAGLE heads trained on them,
  see the same tokens;
- renders one with tools (or with tool calls and answers in its turns) as Qwen2.5's template
  does: the model's system message, or its default one, then a `# Tools` section listing each
  tool in `<tools>`; an assistant's calls as `<tool_call>\\n{"name": ..., "arguments": ...}\\n
  </tool_call>`; a tool's answers as `<tool_response>` in a user turn. vLLM's `hermes` parser
  reads those calls, and its grammar for named and required calls writes the same layout.

Whether a template qualifies is found by rendering probe conversations with it (transformers'
renderer, which vLLM renders prompts with): it must write plain ChatML and do nothing with
`tools`. The written template is checked the same way before it is used.
"""

from __future__ import annotations

import json
from typing import Any

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
# Qwen2.5's own words around the tools (its chat template on the Hub).
TOOLS_INTRO = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_OUTRO = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)

# The probes: texts no template writes by itself, in the conversations every template renders.
SYSTEM, FIRST, ANSWER, SECOND = "PROBE-SYSTEM", "PROBE-FIRST", "PROBE-ANSWER", "PROBE-SECOND"
PROBE_TOOL = {
    "type": "function",
    "function": {"name": "probe", "description": "A probe.", "parameters": {"type": "object"}},
}
WITH_SYSTEM = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": FIRST},
    {"role": "assistant", "content": ANSWER},
    {"role": "user", "content": SECOND},
]
WITHOUT_SYSTEM = [{"role": "user", "content": FIRST}]
WITH_TOOL_TURNS = [
    {"role": "user", "content": FIRST},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"type": "function", "function": {"name": "probe", "arguments": {}}}],
    },
    {"role": "tool", "content": ANSWER},
]


class NotChatml(Exception):
    """Why a template cannot be given the ChatML tools section: a clause for the log."""


def turn(role: str, content: str) -> str:
    return f"{IM_START}{role}\n{content}{IM_END}\n"


def render(template: str, messages: list[dict], tools: list[dict] | None = None) -> str:
    """`template` rendered as vLLM renders it (through transformers), with the generation
    prompt."""
    from transformers.utils.chat_template_utils import render_jinja_template

    rendered, _ = render_jinja_template(
        conversations=[messages], tools=tools, chat_template=template, add_generation_prompt=True
    )
    return rendered[0]


def default_system(template: str) -> str | None:
    """The system prompt `template` writes when a conversation has none (None: it writes no
    system turn); NotChatml when it does not render the probes as plain ChatML or does
    something with `tools`."""
    prompt = IM_START + "assistant\n"
    expected = "".join(turn(m["role"], m["content"]) for m in WITH_SYSTEM) + prompt
    alone = turn("user", FIRST) + prompt
    try:
        with_system = render(template, WITH_SYSTEM)
        without_system = render(template, WITHOUT_SYSTEM)
        ignores_tools = all(
            render(template, messages, [PROBE_TOOL]) == render(template, messages)
            for messages in (WITH_SYSTEM, WITHOUT_SYSTEM)
        )
    except ImportError:
        raise NotChatml("transformers, which renders chat templates, cannot be imported") from None
    except Exception as error:  # a template's own failure (raise_exception, a jinja error)
        raise NotChatml(f"it fails on a plain conversation ({error})") from None
    if with_system != expected or not without_system.endswith(alone):
        raise NotChatml(f"it does not render plain ChatML ({IM_START}role ... {IM_END})")
    if not ignores_tools:
        raise NotChatml("it renders `tools` in a way of its own")
    prefix = without_system[: -len(alone)]
    if not prefix:
        return None
    opening, closing = f"{IM_START}system\n", f"{IM_END}\n"
    if not (prefix.startswith(opening) and prefix.endswith(closing)):
        raise NotChatml(f"it writes {prefix!r} before a conversation without a system message")
    return prefix[len(opening) : -len(closing)]


def literal(text: str) -> str:
    """`text` as a Jinja string literal (JSON's escapes are Jinja's)."""
    return json.dumps(text)


# A message's content as text: a list of parts (what vLLM gives a template that reads parts)
# joined. A filter, not a loop: vLLM decides which content a template takes from its loops.
AS_TEXT = "({0} if {0} is string else ({0} or []) | map(attribute='text') | join(''))"


def tools_branch(system: str | None) -> str:
    """Qwen2.5's rendering of a conversation with tools, on ChatML whose default system prompt
    is `system`: the model's own, where Qwen2.5 writes its own."""
    default = literal(system or "")
    return (
        "{%- if messages[0]['role'] == 'system' %}"
        "{%- set system = " + AS_TEXT.format("messages[0]['content']") + " %}"
        "{%- else %}{%- set system = " + default + " %}{%- endif %}"
        "{%- if tools %}"
        "{{- '<|im_start|>system\\n' }}{%- if system %}{{- system + '\\n\\n' }}{%- endif %}"
        "{{- " + literal(TOOLS_INTRO) + " }}"
        "{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}"
        "{{- " + literal(TOOLS_OUTRO + IM_END + "\n") + " }}"
        "{%- elif system %}{{- '<|im_start|>system\\n' + system + '<|im_end|>\\n' }}"
        "{%- endif %}"
        "{%- for message in messages %}"
        "{%- set text = " + AS_TEXT.format("message['content']") + " %}"
        "{%- if loop.first and message['role'] == 'system' %}"
        "{%- elif message['role'] == 'assistant' and message.tool_calls %}"
        "{{- '<|im_start|>assistant' }}{%- if text %}{{- '\\n' + text }}{%- endif %}"
        "{%- for tool_call in message.tool_calls %}"
        "{%- set call = tool_call.function if tool_call.function is defined else tool_call %}"
        '{{- \'\\n<tool_call>\\n{"name": "\' + call.name + \'", "arguments": \' }}'
        "{{- call.arguments if call.arguments is string else call.arguments | tojson }}"
        "{{- '}\\n</tool_call>' }}"
        "{%- endfor %}"
        "{{- '<|im_end|>\\n' }}"
        "{%- elif message['role'] == 'tool' %}"
        "{%- if loop.first or messages[loop.index0 - 1]['role'] != 'tool' %}"
        "{{- '<|im_start|>user' }}{%- endif %}"
        "{{- '\\n<tool_response>\\n' + text + '\\n</tool_response>' }}"
        "{%- if loop.last or messages[loop.index0 + 1]['role'] != 'tool' %}"
        "{{- '<|im_end|>\\n' }}{%- endif %}"
        "{%- else %}{{- '<|im_start|>' + message['role'] + '\\n' + text + '<|im_end|>\\n' }}"
        "{%- endif %}"
        "{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
    )


# A conversation is rendered with the tools section when it has tools, or tool calls or a
# tool's answers in its turns (which the model's own template has no place for).
USES_TOOLS = (
    "tools or (messages | selectattr('role', 'equalto', 'tool') | list)"
    " or (messages | selectattr('tool_calls') | list)"
)


def wrap(original: str, system: str | None) -> str:
    """The tools branch, else `original` verbatim. trim_blocks drops the one newline after
    `{% else %}`, so the original's own first character survives; the empty expression
    before `{% endif %}` keeps lstrip_blocks off the original's last line."""
    return (
        "{%- if " + USES_TOOLS + " %}" + tools_branch(system) + "{% else %}\n"
        + original + "{{ '' }}{% endif %}"
    )  # fmt: skip


def tools_template(original: str) -> str:
    """The chat template the container writes for `original`, a ChatML template without tool
    syntax; NotChatml (why, as a clause) when `original` is not one, or when the written
    template would not render a conversation without tools exactly as `original` does."""
    written = wrap(original, default_system(original))
    conversations: list[list[dict[str, Any]]] = [WITH_SYSTEM, WITHOUT_SYSTEM]
    try:
        same = all(render(written, c) == render(original, c) for c in conversations)
        shown = "<tools>" in render(written, WITHOUT_SYSTEM, [PROBE_TOOL])
        answered = "<tool_response>" in render(written, WITH_TOOL_TURNS, [PROBE_TOOL])
    except Exception as error:  # the original's text does not nest inside an if block
        raise NotChatml(f"its text cannot be wrapped ({error})") from None
    if not (same and shown and answered):
        raise NotChatml("wrapped, it would not render a chat without tools as it does")
    return written
