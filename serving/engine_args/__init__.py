"""The one owner of the engine's command line.

- `environment`: SM_VLLM_* variables -> vLLM flags (booleans, lists, JSON, reserved flags).
- `flags`: facts about vLLM's flags (checked against the installed vLLM by the tests), and
  the lookup of a flag's value among the engine flags.
- `speculative`: SM_VLLM_SPECULATIVE_CONFIG parsed, its drafter filled in from the channel.
- `tool_parsers`: which of vLLM's tool-call and reasoning parsers fits the target.
- `chatml_tools`: the chat template with Qwen2.5's tools section for a ChatML target that
  teaches no tool syntax.
- `agents`: the flags for agents (parsers, strict tool arguments, structured outputs).
- `cpu_block_size`: the CPU build's KV cache block size (a CPU-only workaround).
- `argv`: the whole command line the front starts vLLM with.

The variable names are in serving/variables.py, which imports nothing, for the laptop tools.
"""
