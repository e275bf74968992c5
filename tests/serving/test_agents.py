"""The flags for agents (serving/engine_args/agents.py, tool_parsers.py): the parser chosen
from each family's real chat-template syntax, the user's overrides, the checks with their
fixes, every parser name against the installed vLLM's registry, and a template without tool
syntax: the written ChatML template on the engine's command line, or `auto` refused by the
front."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from serving.chat_fields import check_relayed_chat
from serving.engine_args.agents import agent_flags
from serving.engine_args.argv import build_argv, write_engine_files
from serving.engine_args.tool_parsers import FAMILIES, MARKERS_BY_PARSER, Target, choose
from serving.errors import RequestRefused
from serving.invocations import plan
from serving.settings import SettingsError, load_settings

# What each family's chat template writes around a call (shortened from the real templates).
TEMPLATES = [
    # (model_type, a piece of its chat template, tool-call parser, reasoning parser)
    ("qwen2", "<tool_call>\n{{ tool_call | tojson }}\n</tool_call>", "hermes", None),
    ("qwen3", "<think>\n\n</think>\n\n<tool_call>\n{\"name\": ...}</tool_call>", "hermes", "qwen3"),
    ("qwen3_moe", "<tool_call>\n<function={{ name }}>\n<parameter=", "qwen3_coder", None),
    ("gpt_oss", "<|start|>assistant<|channel|>commentary to=functions.f<|call|>", "openai",
     "openai_gptoss"),
    ("llama", "Environment: ipython\n<|python_tag|>{{ call }}<|eom_id|>", "llama3_json", None),
    ("llama4", "<|python_start|>[f(a=1)]<|python_end|>", "llama4_pythonic", None),
    ("mistral", "[AVAILABLE_TOOLS]...[TOOL_CALLS]{{ name }}[ARGS]", "mistral", None),
    ("deepseek_v3", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>",
     "deepseek_v31", None),
    ("gemma4", "<|tool_call>call:{{ name }}{...}<tool_call|>", "gemma4", None),
    ("granite", "<|tool_call|>[{...}]", "granite", None),
    ("granitemoehybrid", "<tool_call>{...}</tool_call>", "granite4", None),
    ("glm4_moe", "<tool_call>{{ name }}<arg_key>k</arg_key><arg_value>", "glm45", None),
    ("kimi_k2", "<|tool_calls_section_begin|><|tool_call_begin|>", "kimi_k2", None),
]  # fmt: skip


@pytest.mark.parametrize(("model_type", "template", "tool_parser", "reasoning"), TEMPLATES)
def test_the_parser_follows_the_chat_templates_syntax(model_type, template, tool_parser, reasoning):
    chosen = choose(Target(model_type, template))
    assert (chosen.tool_call_parser, chosen.reasoning_parser) == (tool_parser, reasoning)
    assert repr(next(m for m in MARKERS_BY_PARSER[tool_parser] if m in template)) in chosen.because


def test_a_template_without_tool_syntax_gets_no_parser_and_says_why():
    chatml = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>"
    assert choose(Target("llama", chatml)).tool_call_parser is None
    assert "no chat template" in choose(Target("llama", None)).because


def model_dir(tmp_path: Path, template: str, model_type: str = "qwen2") -> Path:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": model_type}))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}))
    return tmp_path


HERMES = "{% if tools %}<tools>{{ tools }}</tools>{% endif %}<tool_call>\n"


def test_the_chosen_parser_turns_on_auto_tool_choice_with_schema_bound_arguments(tmp_path):
    problems: list[str] = []
    agents = agent_flags({}, model_dir(tmp_path, HERMES), problems)
    assert problems == []
    flags = list(agents.flags)
    assert flags[:3] == ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
    assert flags[flags.index("--tool-strict-level") + 1] == "parameter"
    outputs = json.loads(flags[flags.index("--structured-outputs-config") + 1])
    assert outputs == {"backend": "xgrammar", "max_whitespace_cnt": 16}
    assert "hermes" in agents.summary and "'<tool_call>'" in agents.summary


@pytest.mark.parametrize(
    ("environ", "absent"),
    [
        ({"SM_VLLM_TOOL_CALL_PARSER": "none"}, "--tool-call-parser"),
        ({"SM_VLLM_ENABLE_AUTO_TOOL_CHOICE": "false"}, "--tool-call-parser"),
        ({"SM_VLLM_TOOL_STRICT_LEVEL": "function"}, "--tool-strict-level"),
        ({"SM_VLLM_STRUCTURED_OUTPUTS_CONFIG": '{"backend": "xgrammar"}'},
         "--structured-outputs-config"),
    ],
)  # fmt: skip
def test_each_choice_can_be_turned_off_or_left_to_the_users_flag(tmp_path, environ, absent):
    problems: list[str] = []
    agents = agent_flags(environ, model_dir(tmp_path, HERMES), problems)
    assert problems == []
    assert absent not in agents.flags


def test_a_named_parser_wins_and_so_does_a_named_reasoning_parser(tmp_path):
    qwen3 = HERMES + "<think>"
    environ = {"SM_VLLM_REASONING_PARSER": "none"}
    flags = agent_flags(environ, model_dir(tmp_path, qwen3), []).flags
    assert "--reasoning-parser" not in flags
    environ = {"SM_VLLM_TOOL_CALL_PARSER": "qwen3_json", "SM_VLLM_REASONING_PARSER": "deepseek_r1"}
    flags = list(agent_flags(environ, model_dir(tmp_path, qwen3), []).flags)
    assert flags[flags.index("--tool-call-parser") + 1] == "qwen3_json"
    assert flags[flags.index("--reasoning-parser") + 1] == "deepseek_r1"


def test_a_parser_the_template_cannot_write_is_refused_with_the_fix(tmp_path):
    problems: list[str] = []
    agent_flags({"SM_VLLM_TOOL_CALL_PARSER": "mistral"}, model_dir(tmp_path, HERMES), problems)
    (problem,) = problems
    assert "SM_VLLM_TOOL_CALL_PARSER=mistral" in problem
    assert "Set it to hermes" in problem


@pytest.mark.parametrize(
    "config",
    ['{"disable_any_whitespace": true}', '{"backend": "guidance", "max_whitespace_cnt": 4}'],
)
def test_whitespace_control_without_its_backend_is_refused_before_the_engine(tmp_path, config):
    environ = {"SM_VLLM_STRUCTURED_OUTPUTS_CONFIG": config}
    problems: list[str] = []
    agent_flags(environ, model_dir(tmp_path, HERMES), problems)
    (problem,) = problems
    assert "SM_VLLM_STRUCTURED_OUTPUTS_CONFIG" in problem and '"backend": "xgrammar"' in problem


@pytest.mark.parametrize("bound", ["0", "-2", "2.5", '"16"', "true"])
def test_a_whitespace_bound_that_is_not_a_positive_count_is_refused(tmp_path, bound):
    config = f'{{"backend": "xgrammar", "max_whitespace_cnt": {bound}}}'
    environ = {"SM_VLLM_STRUCTURED_OUTPUTS_CONFIG": config}
    problems: list[str] = []
    agent_flags(environ, model_dir(tmp_path, HERMES), problems)
    (problem,) = problems
    assert "max_whitespace_cnt" in problem and "at least 1" in problem


def test_settings_carry_the_flags_and_refuse_a_bad_switch(tmp_path):
    root = tmp_path / "opt_ml"
    model_dir((root / "model").mkdir(parents=True) or root / "model", HERMES)
    settings = load_settings({"OPT_ML_ROOT": str(root)})
    assert "--tool-call-parser" in settings.agent_flags
    with pytest.raises(SettingsError) as refused:
        load_settings({"OPT_ML_ROOT": str(root), "SM_VLLM_ENABLE_AUTO_TOOL_CHOICE": "maybe"})
    assert "SM_VLLM_ENABLE_AUTO_TOOL_CHOICE='maybe' is not true or false" in str(refused.value)


REGISTRIES = """
import json
from vllm.reasoning import ReasoningParserManager
from vllm.tool_parsers import ToolParserManager
print(json.dumps([ToolParserManager.list_registered(), ReasoningParserManager.list_registered()]))
"""


def test_every_parser_named_here_is_registered_in_the_installed_vllm():
    out = subprocess.run(
        [sys.executable, "-c", REGISTRIES], capture_output=True, text=True, check=True
    ).stdout
    tool_parsers, reasoning_parsers = json.loads(out.splitlines()[-1])
    assert set(MARKERS_BY_PARSER) <= set(tool_parsers)
    reasoning = {family.reasoning_parser for family in FAMILIES} - {None}
    assert reasoning <= set(reasoning_parsers)


# A ChatML template with no tool syntax (the real pair's, shortened) and one that is not ChatML.
CHATML = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are SmolLM.<|im_end|>\\n' }}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
NOT_CHATML = (
    "{% for message in messages %}{{ message['role'] + ': ' + message['content'] + '\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ 'assistant: ' }}{% endif %}"
)


def test_chatml_without_tool_syntax_is_served_with_qwens_tools_section_and_hermes(tmp_path):
    problems: list[str] = []
    agents = agent_flags({}, model_dir(tmp_path, CHATML, "llama"), problems)
    assert problems == []
    assert list(agents.flags[:3]) == ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
    assert "--tool-strict-level" in agents.flags
    assert agents.chat_template is not None and "<tool_call>" in agents.chat_template
    assert agents.auto_tool_choice_refusal is None
    assert agents.summary.startswith(
        "agents: tool calls parsed by hermes: the chat template has no tool-call syntax, so "
        "the container serves it with the tools section and '<tool_call>' syntax that "
        "Qwen2.5's template adds to the same ChatML"
    )


def test_another_template_without_tool_syntax_serves_forced_calls_and_refuses_auto(tmp_path):
    agents = agent_flags({}, model_dir(tmp_path, NOT_CHATML, "llama"), [])
    assert list(agents.flags[:3]) == ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
    assert agents.chat_template is None
    assert "for named and required tool_choice only" in agents.summary
    assert "does not render plain ChatML" in agents.summary
    refusal = agents.auto_tool_choice_refusal
    assert refusal is not None and refusal.startswith('tool_choice "auto"')


def test_the_operators_chat_template_is_read_and_never_rewritten(tmp_path):
    operator = tmp_path / "operator.jinja"
    operator.write_text(CHATML)
    model = (tmp_path / "model").mkdir() or model_dir(tmp_path / "model", NOT_CHATML, "llama")
    agents = agent_flags({"SM_VLLM_CHAT_TEMPLATE": str(operator)}, model, [])
    assert agents.chat_template is None and agents.auto_tool_choice_refusal is not None
    assert "SM_VLLM_CHAT_TEMPLATE" in agents.summary
    # One that writes tool calls is chosen from, as the target's own would be.
    operator.write_text(HERMES)
    agents = agent_flags({"SM_VLLM_CHAT_TEMPLATE": str(operator)}, model, [])
    assert "'<tool_call>'" in agents.summary and agents.auto_tool_choice_refusal is None


def test_a_named_parser_on_a_template_without_tool_syntax(tmp_path):
    model = model_dir(tmp_path, CHATML, "llama")
    agents = agent_flags({"SM_VLLM_TOOL_CALL_PARSER": "hermes"}, model, [])
    assert agents.chat_template is not None
    problems: list[str] = []
    agent_flags({"SM_VLLM_TOOL_CALL_PARSER": "mistral"}, model, problems)
    (problem,) = problems
    assert "Set it to hermes" in problem
    agents = agent_flags({"SM_VLLM_TOOL_CALL_PARSER": "none"}, model, [])
    assert "--tool-call-parser" not in agents.flags and agents.chat_template is None


def test_the_engine_is_started_with_the_written_template_beside_its_socket(tmp_path):
    root = tmp_path / "opt_ml"
    model_dir((root / "model").mkdir(parents=True) or root / "model", CHATML, "llama")
    settings = load_settings({"OPT_ML_ROOT": str(root)})
    socket_path = tmp_path / "engine" / "engine.sock"
    socket_path.parent.mkdir()
    write_engine_files(settings, socket_path)
    argv = build_argv(settings, socket_path)
    written = Path(argv[argv.index("--chat-template") + 1])
    assert written.parent == socket_path.parent
    assert written.read_text() == settings.agent_chat_template
    # An operator's template wins: the container writes none.
    operator = tmp_path / "operator.jinja"
    operator.write_text(CHATML)
    settings = load_settings({"OPT_ML_ROOT": str(root), "SM_VLLM_CHAT_TEMPLATE": str(operator)})
    argv = build_argv(settings, socket_path)
    assert argv.count("--chat-template") == 1 and argv[-1] == str(operator)


AUTO_REFUSED = "tool_choice auto is not served here."


@pytest.mark.parametrize(
    ("fields", "refused"),
    [
        ({"tool_choice": "auto"}, True),
        ({}, True),
        ({"tool_choice": "required"}, False),
        ({"tool_choice": {"type": "function", "function": {"name": "f"}}}, False),
        ({"tool_choice": "none"}, False),
    ],
)
def test_the_front_refuses_auto_where_it_is_not_served_on_every_road(fields, refused):
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    payload = {"messages": [{"role": "user", "content": "Hi"}], "tools": tools, **fields}
    body = json.dumps(payload).encode()
    edit = plan(body, "m", AUTO_REFUSED)
    assert (edit.refusal == (400, AUTO_REFUSED)) is refused
    assert plan(body, "m").refusal is None
    if refused:
        with pytest.raises(RequestRefused, match=AUTO_REFUSED):
            check_relayed_chat(body, AUTO_REFUSED)
    else:
        check_relayed_chat(body, AUTO_REFUSED)
    check_relayed_chat(body, None)
