"""The names of the environment variables the container reads, and nothing else.

No imports: the laptop tools (deploy, bench) and the preflight name a variable without
pulling in pydantic or the settings model. What each variable means is in settings.py
(the container's own) and engine_args/ (the SM_VLLM_* ones that become vLLM flags).
"""

# Every SM_VLLM_<NAME> becomes vLLM's --<name> flag, except those consumed below.
VLLM_PREFIX = "SM_VLLM_"
SPECULATIVE_CONFIG_VAR = "SM_VLLM_SPECULATIVE_CONFIG"
SERVED_MODEL_NAME_VAR = "SM_VLLM_SERVED_MODEL_NAME"
TENSOR_PARALLEL_SIZE_VAR = "SM_VLLM_TENSOR_PARALLEL_SIZE"
MAX_NUM_SEQS_VAR = "SM_VLLM_MAX_NUM_SEQS"
DATA_PARALLEL_SIZE_VAR = "SM_VLLM_DATA_PARALLEL_SIZE"
# The key of SM_VLLM_SPECULATIVE_CONFIG that sets K by batch size (preflight/batch_schedule.py).
BATCH_SCHEDULE_KEY = "num_speculative_tokens_per_batch_size"
# The target by name when /opt/ml/model holds none.
MODEL_VAR = "SM_VLLM_MODEL"
HF_MODEL_ID_VAR = "HF_MODEL_ID"
# Where the /opt/ml tree is (tests and `make serve` point it at a demo tree).
OPT_ML_ROOT_VAR = "OPT_ML_ROOT"
# SageMaker does not tell a container its endpoint, variant or head: deploy sets these, and the
# CloudWatch metrics carry them as dimensions.
ENDPOINT_NAME_VAR = "SERVING_ENDPOINT_NAME"
VARIANT_NAME_VAR = "SERVING_VARIANT_NAME"
HEAD_VERSION_VAR = "SERVING_HEAD_VERSION"
# The body limit, which a transform job sets and an asynchronous endpoint raises.
MAX_PAYLOAD_VAR = "SAGEMAKER_MAX_PAYLOAD_IN_MB"
# Agents (serving/engine_args/agents.py): the container chooses these unless they are set.
TOOL_CALL_PARSER_VAR = "SM_VLLM_TOOL_CALL_PARSER"
REASONING_PARSER_VAR = "SM_VLLM_REASONING_PARSER"
AUTO_TOOL_CHOICE_VAR = "SM_VLLM_ENABLE_AUTO_TOOL_CHOICE"
TOOL_STRICT_LEVEL_VAR = "SM_VLLM_TOOL_STRICT_LEVEL"
STRUCTURED_OUTPUTS_CONFIG_VAR = "SM_VLLM_STRUCTURED_OUTPUTS_CONFIG"
# An operator's chat template (vLLM's --chat-template): the tool-call parser is chosen from it.
CHAT_TEMPLATE_VAR = "SM_VLLM_CHAT_TEMPLATE"
# SM_VLLM_* variables the settings consume themselves instead of passing on as flags.
CONSUMED_VLLM_VARS = frozenset(
    {SPECULATIVE_CONFIG_VAR, MODEL_VAR, TOOL_CALL_PARSER_VAR, REASONING_PARSER_VAR}
    | {AUTO_TOOL_CHOICE_VAR}
)
