"""A demo tree whose target thinks, for the tests of reasoning: the demo target with Qwen3's
thinking syntax, so vLLM's `qwen3` reasoning parser runs on a real engine.

The toy's tokenizer has no `<think>` or `</think>`, and the parser looks both up in the
vocabulary. Two byte tokens that UTF-8 text never holds (0xFE, 0xFF) are renamed to them, so
the model, its P-EAGLE head and every other token are the demo's own. The chat template is
the demo's ChatML with Qwen3's thinking: the generation prompt opens `<think>`, and an
assistant turn after the last user message writes its reasoning back inside `<think>` (with
`reasoning_content.strip(...)`, as Qwen3's first templates do). The toy never writes
`</think>`, so every answer is reasoning.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

# Token -> the byte token it replaces, written as byte-level BPE writes bytes 0xFE and 0xFF.
THINKING_TOKENS = {"<think>": "þ", "</think>": "ÿ"}
CHAT_TEMPLATE = """\
{%- set ns = namespace(last_user=-1) %}
{%- for message in messages %}{%- if message['role'] == 'user' %}\
{%- set ns.last_user = loop.index0 %}{%- endif %}{%- endfor %}
{%- for message in messages %}
{%- if message['role'] == 'assistant' %}
{%- set content = message['content'] or '' %}
{%- if message.reasoning_content is defined and message.reasoning_content is not none \
and loop.index0 > ns.last_user %}
{{- '<|im_start|>assistant\\n<think>\\n' + message.reasoning_content.strip('\\n') \
+ '\\n</think>\\n\\n' + content + '<|im_end|>\\n' }}
{%- else %}
{{- '<|im_start|>assistant\\n' + content + '<|im_end|>\\n' }}
{%- endif %}
{%- else %}
{{- '<|im_start|>' + message['role'] + '\\n' + (message['content'] or '') + '<|im_end|>\\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n<think>\\n' }}{%- endif %}
"""


def with_thinking_tokens(tokenizer: dict) -> dict:
    """The tokenizer.json with `<think>` and `</think>` in the place of two byte tokens."""
    vocab = tokenizer["model"]["vocab"]
    for token, byte_token in THINKING_TOKENS.items():
        token_id = vocab.pop(byte_token)
        vocab[token] = token_id
        tokenizer["added_tokens"].append(
            {"id": token_id, "content": token, "single_word": False, "lstrip": False,
             "rstrip": False, "normalized": False, "special": False}
        )  # fmt: skip
    return tokenizer


def build_thinking_tree(demo_root: Path, root: Path) -> Path:
    """The tree at `root`: the thinking target, and the demo's P-EAGLE head beside it."""
    model = root / "model"
    shutil.copytree(demo_root / "model", model)
    tokenizer = json.loads((model / "tokenizer.json").read_text())
    (model / "tokenizer.json").write_text(json.dumps(with_thinking_tokens(tokenizer)))
    (model / "chat_template.jinja").write_text(CHAT_TEMPLATE)
    (root / "additional-model-data-sources").symlink_to(demo_root / "additional-model-data-sources")
    return root
