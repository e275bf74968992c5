"""The demo target's chat template."""

# ChatML, the template most chat models on the Hub use, with the tool syntax Qwen2.5 and
# Qwen3 write (Hermes style): the tools in a system turn, each call as
# `<tool_call>{json}</tool_call>`, each result back in a user turn as `<tool_response>`. The
# instructions in the system turn are shorter than Qwen's: a tool-use conversation must fit
# the demo target's 256-token training window. A chat
# without tools renders exactly as plain ChatML. The corpus renders its tool-use conversations
# with it (model_data_sources/tool_use.py), and the container chooses vLLM's `hermes` parser
# from it.
CHAT_TEMPLATE = (
    "{%- if tools %}"
    "{{ '<|im_start|>system\\n' }}"
    "{%- if messages[0]['role'] == 'system' %}{{ messages[0]['content'] + '\\n\\n' }}{% endif %}"
    "{{ '# Tools\\n<tools>' }}"
    "{%- for tool in tools %}{{ '\\n' + (tool | tojson) }}{% endfor %}"
    '{{ \'\\n</tools>\\nTo call a function, write <tool_call>\\n{"name": <function-name>, '
    '"arguments": <args-json-object>}\\n</tool_call><|im_end|>\\n\' }}'
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message['role'] == 'system' and tools %}"
    "{%- elif message['role'] == 'assistant' and message.get('tool_calls') %}"
    "{{ '<|im_start|>assistant\\n' }}"
    "{%- if message['content'] %}{{ message['content'] + '\\n' }}{% endif %}"
    "{%- for call in message['tool_calls'] %}"
    "{%- set arguments = call['function']['arguments'] %}"
    "{%- if not loop.first %}{{ '\\n' }}{% endif %}"
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
