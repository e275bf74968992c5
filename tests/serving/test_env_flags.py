"""The SM_VLLM_* rules as a table: each variable and value to the vLLM flags it becomes
(serving/engine_args/environment.py)."""

from __future__ import annotations

import pytest

from serving.engine_args.environment import env_to_flags

FLAG_CASES = [
    # (variable, value, expected argv)
    ("SM_VLLM_MAX_MODEL_LEN", "4096", ["--max-model-len", "4096"]),
    ("SM_VLLM_ENFORCE_EAGER", "true", ["--enforce-eager"]),
    ("SM_VLLM_ENFORCE_EAGER", "True", ["--enforce-eager"]),
    # The same yes/no words as SERVING_* booleans, in any case.
    ("SM_VLLM_ENFORCE_EAGER", "YES", ["--enforce-eager"]),
    ("SM_VLLM_ENFORCE_EAGER", "on", ["--enforce-eager"]),
    ("SM_VLLM_ENFORCE_EAGER", "1", ["--enforce-eager"]),
    ("SM_VLLM_ENFORCE_EAGER", "false", ["--no-enforce-eager"]),
    ("SM_VLLM_ENFORCE_EAGER", "Off", ["--no-enforce-eager"]),
    ("SM_VLLM_ENFORCE_EAGER", "0", ["--no-enforce-eager"]),
    ("SM_VLLM_ENABLE_PREFIX_CACHING", "FALSE", ["--no-enable-prefix-caching"]),
    # Empty or blank is unset, not a bare flag missing its value.
    ("SM_VLLM_ENFORCE_EAGER", "", []),
    ("SM_VLLM_MAX_MODEL_LEN", "  ", []),
    # The --no- form named directly.
    ("SM_VLLM_NO_ENABLE_PREFIX_CACHING", "true", ["--no-enable-prefix-caching"]),
    ("SM_VLLM_NO_ENABLE_PREFIX_CACHING", "no", ["--enable-prefix-caching"]),
    # No --no- form in vLLM: false means leave the flag out.
    ("SM_VLLM_DISABLE_LOG_STATS", "false", []),
    ("SM_VLLM_DISABLE_LOG_STATS", "true", ["--disable-log-stats"]),
    ("SM_VLLM_DISABLE_LOG_STATS", "yes", ["--disable-log-stats"]),
    # 1 and 0 are yes/no only for boolean flags; elsewhere they are values.
    ("SM_VLLM_SEED", "0", ["--seed", "0"]),
    ("SM_VLLM_TENSOR_PARALLEL_SIZE", "1", ["--tensor-parallel-size", "1"]),
    ("SM_VLLM_DTYPE", "bfloat16", ["--dtype", "bfloat16"]),
    ("SM_VLLM_GPU_MEMORY_UTILIZATION", " 0.85 ", ["--gpu-memory-utilization", "0.85"]),
    (
        "SM_VLLM_COMPILATION_CONFIG",
        '{"cudagraph_capture_sizes": [1, 2, 4]}',
        ["--compilation-config", '{"cudagraph_capture_sizes": [1, 2, 4]}'],
    ),
    # One value that vLLM reads as JSON: the array stays one argument.
    (
        "SM_VLLM_ALLOWED_ORIGINS",
        '["https://a.example"]',
        ["--allowed-origins", '["https://a.example"]'],
    ),
    ("SM_VLLM_SERVED_MODEL_NAME", "my-model", ["--served-model-name", "my-model"]),
    # Flags taking several values: one argv item per word, or per JSON array item.
    ("SM_VLLM_SERVED_MODEL_NAME", "a  b", ["--served-model-name", "a", "b"]),
    ("SM_VLLM_SERVED_MODEL_NAME", '["a b", "c"]', ["--served-model-name", "a b", "c"]),
    ("SM_VLLM_CUDAGRAPH_CAPTURE_SIZES", "1 2 4", ["--cudagraph-capture-sizes", "1", "2", "4"]),
    ("SM_VLLM_CUDAGRAPH_CAPTURE_SIZES", "[1, 2]", ["--cudagraph-capture-sizes", "1", "2"]),
    ("SM_VLLM_API_KEY", "k1 k2", ["--api-key", "k1", "k2"]),
    (
        "SM_VLLM_LORA_MODULES",
        '{"name": "a", "path": "/a"}',
        ["--lora-modules", '{"name": "a", "path": "/a"}'],
    ),
    (
        "SM_VLLM_LORA_MODULES",
        '[{"name": "a", "path": "/a"}, "b=/b"]',
        ["--lora-modules", '{"name": "a", "path": "/a"}', "b=/b"],
    ),
    ("SM_VLLM_LORA_MODULES", "[]", []),
    # Pretty-printed, as pasted from docs: one argument still, or one per list item.
    (
        "SM_VLLM_OVERRIDE_GENERATION_CONFIG",
        '{\n\t"top_k": -1,\n    "repetition_penalty": 1.0\n}\n',
        ["--override-generation-config", '{\n\t"top_k": -1,\n    "repetition_penalty": 1.0\n}'],
    ),
    (
        "SM_VLLM_SERVED_MODEL_NAME",
        '[\n  "demo",\n  "my-endpoint"\n]\n',
        ["--served-model-name", "demo", "my-endpoint"],
    ),
]


@pytest.mark.parametrize(("variable", "value", "expected"), FLAG_CASES)
def test_env_to_flags(variable, value, expected):
    assert env_to_flags(variable, value) == expected


def test_broken_json_value_is_an_error_naming_the_variable():
    with pytest.raises(ValueError, match="SM_VLLM_COMPILATION_CONFIG.*not valid JSON"):
        env_to_flags("SM_VLLM_COMPILATION_CONFIG", '{"level": 3')


@pytest.mark.parametrize("value", ["maybe", "2", "enabled"])
def test_boolean_flag_refuses_other_words(value: str):
    with pytest.raises(ValueError, match=f"SM_VLLM_ENFORCE_EAGER='{value}' is not true or false"):
        env_to_flags("SM_VLLM_ENFORCE_EAGER", value)
