"""Which of vLLM's tool-call and reasoning parsers fits a target, read from the target itself.

vLLM finds tool calls in a model's text only with the parser for the syntax its chat template
teaches (`--tool-call-parser`), and refuses every request with `tools` without one. The
syntax is in the template, so the choice is made from it: the markers each family's template
writes, most specific first (several families wrap calls in `<tool_call>`), with
`model_type` where the template alone cannot tell. Sources: vLLM 0.32's tool-calling and
reasoning docs, and the markers in each parser's source (vllm/tool_parsers/, vllm/parser/);
tests/serving/test_agents.py checks each name against the installed vLLM.

No imports beyond the standard library: preflight and the laptop tools read it too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Family:
    """A model family's tool-call syntax: the markers its chat template writes (any one
    suffices), the model types it is restricted to (empty: any), and vLLM's parsers."""

    name: str
    markers: tuple[str, ...]
    tool_call_parser: str
    reasoning_parser: str | None = None
    model_types: tuple[str, ...] = ()
    # A reasoning parser only when the template also has the thinking markers.
    thinking_markers: tuple[str, ...] = ()


# Most specific first: the first family whose markers (and model type) match is chosen.
FAMILIES = (
    Family("GPT-OSS (harmony)", ("<|call|>", "<|channel|>"), "openai", "openai_gptoss",
           model_types=("gpt_oss",)),
    Family("Qwen3-Coder (XML)", ("<function=",), "qwen3_coder", "qwen3",
           thinking_markers=("<think>",)),
    Family("GLM-4.5/4.6", ("<arg_key>",), "glm45", "glm45", thinking_markers=("<think>",)),
    Family("Kimi K2", ("<|tool_calls_section_begin|>",), "kimi_k2", "kimi_k2",
           thinking_markers=("<think>",)),
    Family("DeepSeek V3.2", ("<｜DSML｜",), "deepseek_v32", "deepseek_v3"),
    Family("DeepSeek V3.1", ("<｜tool▁sep｜>",), "deepseek_v31", "deepseek_v3",
           model_types=("deepseek_v3",), thinking_markers=("<think>",)),
    Family("DeepSeek V3 / R1", ("<｜tool▁calls▁begin｜>",), "deepseek_v3", "deepseek_r1",
           thinking_markers=("<think>",)),
    Family("Mistral", ("[TOOL_CALLS]",), "mistral", "mistral", thinking_markers=("[THINK]",)),
    Family("Gemma 4", ("<|tool_call>",), "gemma4", "gemma4", thinking_markers=("<|channel>",)),
    Family("FunctionGemma", ("<start_function_call>",), "functiongemma"),
    Family("MiniMax-M2", ("<minimax:tool_call>",), "minimax_m2", "minimax_m2_append_think",
           thinking_markers=("<think>",)),
    Family("Seed-OSS", ("<seed:tool_call>",), "seed_oss", "seed_oss",
           thinking_markers=("<seed:think>",)),
    Family("InternLM 2", ("<|plugin|>",), "internlm"),
    Family("Granite 3", ("<|tool_call|>",), "granite", "granite",
           thinking_markers=("<think>",)),
    Family("Granite 4", ("<tool_call>",), "granite4", model_types=("granitemoehybrid",)),
    Family("Llama 3.x (JSON)", ("<|python_tag|>", "ipython"), "llama3_json",
           model_types=("llama",)),
    Family("Llama 4 (pythonic)", ("<|python_start|>",), "llama4_pythonic",
           model_types=("llama4",)),
    Family("Phi-4-mini", ("functools[",), "phi4_mini_json"),
    Family("Olmo 3", ("<function_calls>",), "olmo3", "olmo3", thinking_markers=("<think>",)),
    Family("Hermes / Qwen2.5 / Qwen3", ("<tool_call>",), "hermes", "qwen3",
           thinking_markers=("<think>",)),
)  # fmt: skip

# Every parser above, and what the template must write for it to find calls. A parser a
# user names that is not here is vLLM's to check.
MARKERS_BY_PARSER: dict[str, tuple[str, ...]] = {}
for _family in FAMILIES:
    MARKERS_BY_PARSER.setdefault(_family.tool_call_parser, ())
    MARKERS_BY_PARSER[_family.tool_call_parser] += _family.markers
MARKERS_BY_PARSER["qwen3_json"] = ("<tool_call>",)
MARKERS_BY_PARSER["qwen3_xml"] = MARKERS_BY_PARSER["qwen3_coder"]
MARKERS_BY_PARSER["glm47"] = MARKERS_BY_PARSER["glm45"]
MARKERS_BY_PARSER["llama4_json"] = MARKERS_BY_PARSER["llama4_pythonic"]


@dataclass(frozen=True)
class Target:
    """What the choice reads off a target model directory."""

    model_type: str | None
    chat_template: str | None


@dataclass(frozen=True)
class Choice:
    tool_call_parser: str | None
    reasoning_parser: str | None
    because: str


def chat_template(model_dir: Path) -> str | None:
    """The chat template(s) the model ships, joined: chat_template.jinja, chat_template.json,
    or tokenizer_config.json's `chat_template` (a string, or a list of named templates)."""
    jinja = model_dir / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(errors="replace")
    for name in ("chat_template.json", "tokenizer_config.json"):
        try:
            value = json.loads((model_dir / name).read_text()).get("chat_template")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            named = [item for item in value if isinstance(item, dict)]
            return "\n".join(str(item.get("template", "")) for item in named)
    return None


def named_template(value: str) -> str | None:
    """The template an operator's --chat-template names, as vLLM reads it: the file's text,
    or the value itself when it holds Jinja; None when it is neither here (a name among
    vLLM's built-in templates)."""
    path = Path(value)
    try:
        if path.is_file():
            return path.read_text(errors="replace")
    except OSError:  # a value too long to be a path
        pass
    return value if any(mark in value for mark in "{}\n") else None


def read_target(model_dir: Path) -> Target:
    try:
        config = json.loads((model_dir / "config.json").read_text())
    except (OSError, ValueError):
        config = {}
    model_type = config.get("model_type") if isinstance(config, dict) else None
    return Target(model_type if isinstance(model_type, str) else None, chat_template(model_dir))


def choose(target: Target) -> Choice:
    """The parsers for `target`, and a sentence saying why (or why none)."""
    template = target.chat_template
    if template is None:
        return Choice(None, None, "the model ships no chat template, so it writes no tool calls")
    for family in FAMILIES:
        if family.model_types and target.model_type not in family.model_types:
            continue
        found = next((marker for marker in family.markers if marker in template), None)
        if found is None:
            continue
        thinking = family.reasoning_parser is not None and (
            not family.thinking_markers
            or any(marker in template for marker in family.thinking_markers)
        )
        return Choice(
            family.tool_call_parser,
            family.reasoning_parser if thinking else None,
            f"its chat template writes {found!r} ({family.name})",
        )
    return Choice(None, None, "its chat template has no tool-call syntax vLLM can parse")


def template_writes(parser: str, template: str | None) -> bool | None:
    """Whether `template` writes what `parser` looks for; None when the parser is not known
    here (vLLM checks it against the tokenizer at start-up)."""
    markers = MARKERS_BY_PARSER.get(parser)
    if markers is None:
        return None
    return template is not None and any(marker in template for marker in markers)
