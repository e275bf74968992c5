"""The demo pair with a chat template that writes tool calls, for the agent tests.

The demo target's own template is plain ChatML, with no tool syntax, so the container turns
tool calling off for it. This tree is the demo tree (hard links: no copy of the weights,
and a bind mount sees real files) whose tokenizer carries a Hermes-style template, as Qwen2.5
and Qwen3 ship: the tools in a system turn, each call as `<tool_call>{json}</tool_call>`,
each result back as `<tool_response>`. A chat without tools renders exactly as ChatML, so
the target answers those as it always has. The container must then choose the `hermes`
parser by itself, and constrained decoding writes the calls the untrained model would not.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
from pathlib import Path

from harness.paths import REPO_ROOT
from tests.support.containers import DEMO_ROOT

AGENTS_ROOT = REPO_ROOT / "build" / "opt_ml_agents"

HERMES_TEMPLATE = (
    "{%- if tools %}"
    "{{ '<|im_start|>system\\n' }}"
    "{%- if messages[0]['role'] == 'system' %}{{ messages[0]['content'] + '\\n\\n' }}{% endif %}"
    "{{ '# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}"
    "{%- for tool in tools %}{{ '\\n' + (tool | tojson) }}{% endfor %}"
    "{{ '\\n</tools>\\n\\nFor each function call, return a json object with function name and "
    'arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{"name": '
    '<function-name>, "arguments": <args-json-object>}\\n</tool_call><|im_end|>\\n\' }}'
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message['role'] == 'system' and tools %}"
    "{%- elif message['role'] == 'assistant' and message.get('tool_calls') %}"
    "{{ '<|im_start|>assistant\\n' }}"
    "{%- if message['content'] %}{{ message['content'] + '\\n' }}{% endif %}"
    "{%- for call in message['tool_calls'] %}"
    "{%- set arguments = call['function']['arguments'] %}"
    "{{ '<tool_call>\\n{\"name\": \"' + call['function']['name'] + '\", \"arguments\": ' }}"
    "{{- arguments if arguments is string else (arguments | tojson) }}"
    "{{- '}\\n</tool_call>' }}"
    "{%- endfor %}"
    "{{ '<|im_end|>\\n' }}"
    "{%- elif message['role'] == 'tool' %}"
    "{{ '<|im_start|>user\\n<tool_response>\\n' + message['content'] + "
    "'\\n</tool_response><|im_end|>\\n' }}"
    "{%- else %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


@functools.cache
def agents_tree() -> Path:
    """The demo tree with the Hermes template, made again from DEMO_ROOT once per session."""
    staging = AGENTS_ROOT.with_name(AGENTS_ROOT.name + f".{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(DEMO_ROOT, staging, copy_function=os.link)
    # Unlinked first: a hard link, and the demo tree's own file stays as it is.
    template = staging / "model" / "chat_template.jinja"
    template.unlink(missing_ok=True)
    template.write_text(HERMES_TEMPLATE)
    config_path = staging / "model" / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    if config.pop("chat_template", None) is not None:
        config_path.unlink()
        config_path.write_text(json.dumps(config, indent=2))
    shutil.rmtree(AGENTS_ROOT, ignore_errors=True)
    staging.rename(AGENTS_ROOT)
    return AGENTS_ROOT
