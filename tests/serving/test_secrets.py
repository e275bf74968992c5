"""Secrets: what is secret, as a table, and argv and mappings made fit to log."""

from __future__ import annotations

import json

import pytest

from serving.secrets import is_secret_name, redact_argv, redact_mapping

NAME_CASES = [
    # (name, secret?)
    ("--api-key", True),
    ("--hf-token", True),
    ("HF_TOKEN", True),
    ("HUGGING_FACE_HUB_TOKEN", True),
    ("SM_VLLM_API_KEY", True),
    ("AWS_SECRET_ACCESS_KEY", True),
    ("AWS_SESSION_TOKEN", True),
    ("client_secret", True),
    ("db_password", True),
    ("password_file", True),
    ("apiKey", True),
    ("accessToken", True),
    ("api_keys", True),
    # Readable: token counts, tokenizers, key files, token ids.
    ("--max-num-batched-tokens", False),
    ("num_speculative_tokens", False),
    ("--tokenizer", False),
    ("--skip-tokenizer-init", False),
    ("--ssl-keyfile", False),
    ("mask_token_id", False),
    ("maxTokens", False),
    ("--model", False),
    ("", False),
]


@pytest.mark.parametrize(("name", "secret"), NAME_CASES)
def test_is_secret_name(name: str, secret: bool):
    assert is_secret_name(name) is secret


ARGV_CASES = [
    # (argv, redacted)
    (["--api-key", "sk-1"], ["--api-key", "***"]),
    (["--api-key=sk-1"], ["--api-key=***"]),
    # vLLM's --api-key takes several keys: all are hidden, up to the next flag.
    (["--api-key", "k1", "k2", "--port", "80"], ["--api-key", "***", "***", "--port", "80"]),
    (["--hf-token", "hf_abc", "--model", "m"], ["--hf-token", "***", "--model", "m"]),
    # Bare --hf-token (use the cached token) has no value to hide.
    (["--hf-token", "--enforce-eager"], ["--hf-token", "--enforce-eager"]),
    (["--max-num-batched-tokens", "8192"], ["--max-num-batched-tokens", "8192"]),
    (["--tokenizer", "org/tok"], ["--tokenizer", "org/tok"]),
    (["--seed", "-1", "--api-key", "k"], ["--seed", "-1", "--api-key", "***"]),
    (
        ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/opt/ml/model"],
        ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/opt/ml/model"],
    ),
    # Secret keys inside JSON-valued flags; JSON without them keeps its spelling.
    (
        ["--model-loader-extra-config", '{"hf_token": "x", "n": 1}'],
        ["--model-loader-extra-config", '{"hf_token": "***", "n": 1}'],
    ),
    (
        ['--kv-transfer-config={"auth": {"apiKey": "x"}}'],
        ['--kv-transfer-config={"auth": {"apiKey": "***"}}'],
    ),
    (
        ["--speculative-config", '{"method":"eagle3","num_speculative_tokens":7}'],
        ["--speculative-config", '{"method":"eagle3","num_speculative_tokens":7}'],
    ),
    (["--compilation-config", "{not json"], ["--compilation-config", "{not json"]),
    ([], []),
]


@pytest.mark.parametrize(("argv", "redacted"), ARGV_CASES)
def test_redact_argv(argv: list[str], redacted: list[str]):
    assert redact_argv(argv) == redacted


def test_redact_argv_leaves_its_input_alone():
    argv = ("--api-key", "sk-1")
    assert redact_argv(argv) == ["--api-key", "***"]
    assert argv == ("--api-key", "sk-1")


def test_redact_mapping():
    environ = {
        "HF_TOKEN": "hf_abc",
        "SM_VLLM_API_KEY": "sk-1",
        "SM_VLLM_MAX_NUM_BATCHED_TOKENS": "8192",
        "SM_VLLM_HF_OVERRIDES": json.dumps({"hub_token": "x", "max_position_embeddings": 8}),
        "AWS_SESSION_TOKEN": "",
        "engine_flags": ("--api-key", "sk-2", "--dtype", "half"),
        "speculative_config": {"method": "eagle3", "auth": {"password": "p"}},
        "port": 8080,
    }
    # Only the secrets change; the rest, an unset secret ("") among it, stays as it was.
    assert redact_mapping(environ) == {
        **environ,
        "HF_TOKEN": "***",
        "SM_VLLM_API_KEY": "***",
        "SM_VLLM_HF_OVERRIDES": json.dumps({"hub_token": "***", "max_position_embeddings": 8}),
        "engine_flags": ("--api-key", "***", "--dtype", "half"),
        "speculative_config": {"method": "eagle3", "auth": {"password": "***"}},
    }
