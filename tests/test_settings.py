"""Settings: the SM_VLLM_* rules as a table, and the rest of the environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from serving.settings import SettingsError, env_to_flags, load_settings

FLAG_CASES = [
    # (variable, value, expected argv)
    ("SM_VLLM_MAX_MODEL_LEN", "4096", ["--max-model-len", "4096"]),
    ("SM_VLLM_ENFORCE_EAGER", "true", ["--enforce-eager"]),
    ("SM_VLLM_ENFORCE_EAGER", "True", ["--enforce-eager"]),
    ("SM_VLLM_ENFORCE_EAGER", "", ["--enforce-eager"]),
    ("SM_VLLM_ENFORCE_EAGER", "false", ["--no-enforce-eager"]),
    ("SM_VLLM_ENABLE_PREFIX_CACHING", "FALSE", ["--no-enable-prefix-caching"]),
    # No --no- form in vLLM: false means leave the flag out.
    ("SM_VLLM_DISABLE_LOG_STATS", "false", []),
    ("SM_VLLM_DISABLE_LOG_STATS", "true", ["--disable-log-stats"]),
    ("SM_VLLM_DTYPE", "bfloat16", ["--dtype", "bfloat16"]),
    ("SM_VLLM_GPU_MEMORY_UTILIZATION", " 0.85 ", ["--gpu-memory-utilization", "0.85"]),
    (
        "SM_VLLM_COMPILATION_CONFIG",
        '{"cudagraph_capture_sizes": [1, 2, 4]}',
        ["--compilation-config", '{"cudagraph_capture_sizes": [1, 2, 4]}'],
    ),
    (
        "SM_VLLM_ALLOWED_ORIGINS",
        '["https://a.example"]',
        ["--allowed-origins", '["https://a.example"]'],
    ),
    ("SM_VLLM_SERVED_MODEL_NAME", "my-model", ["--served-model-name", "my-model"]),
]


@pytest.mark.parametrize(("variable", "value", "expected"), FLAG_CASES)
def test_env_to_flags(variable, value, expected):
    assert env_to_flags(variable, value) == expected


def test_broken_json_value_is_an_error_naming_the_variable():
    with pytest.raises(ValueError, match="SM_VLLM_COMPILATION_CONFIG.*not valid JSON"):
        env_to_flags("SM_VLLM_COMPILATION_CONFIG", '{"level": 3')


@pytest.fixture()
def opt_ml(tmp_path: Path) -> Path:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    (tmp_path / "additional-model-data-sources" / "eagle").mkdir(parents=True)
    return tmp_path


def test_speculative_config_gets_the_eagle_channel_as_model(opt_ml: Path):
    spec = {"method": "eagle3", "num_speculative_tokens": 5, "parallel_drafting": True}
    settings = load_settings(
        {"OPT_ML_ROOT": str(opt_ml), "SM_VLLM_SPECULATIVE_CONFIG": json.dumps(spec)}
    )
    assert settings.speculative_config == {
        "model": str(opt_ml / "additional-model-data-sources" / "eagle"),
        **spec,
    }
    assert settings.model == str(opt_ml / "model")
    # Consumed by the settings, not passed on as a second --speculative-config.
    assert not any("speculative" in flag for flag in settings.engine_flags)


def test_explicit_drafter_model_is_kept(opt_ml: Path):
    spec = {"model": "/elsewhere", "method": "eagle3", "num_speculative_tokens": 3}
    settings = load_settings(
        {"OPT_ML_ROOT": str(opt_ml), "SM_VLLM_SPECULATIVE_CONFIG": json.dumps(spec)}
    )
    assert settings.speculative_config["model"] == "/elsewhere"


def test_target_falls_back_to_hub_id_when_opt_ml_model_is_empty(tmp_path: Path):
    settings = load_settings({"OPT_ML_ROOT": str(tmp_path), "HF_MODEL_ID": "org/model"})
    assert settings.model == "org/model"
    settings = load_settings(
        {"OPT_ML_ROOT": str(tmp_path), "HF_MODEL_ID": "org/model", "SM_VLLM_MODEL": "org/other"}
    )
    assert settings.model == "org/other"
    assert "--model" not in settings.engine_flags


def test_no_model_anywhere_is_an_error_naming_the_fix(tmp_path: Path):
    with pytest.raises(SettingsError, match="no target model.*SM_VLLM_MODEL"):
        load_settings({"OPT_ML_ROOT": str(tmp_path)})


def test_gpus_become_tensor_parallel_size_unless_set(opt_ml: Path):
    base = {"OPT_ML_ROOT": str(opt_ml)}
    assert load_settings({**base, "SM_NUM_GPUS": "4"}).tensor_parallel_size == 4
    assert load_settings({**base, "SM_NUM_GPUS": "0"}).tensor_parallel_size is None
    explicit = load_settings({**base, "SM_NUM_GPUS": "4", "SM_VLLM_TENSOR_PARALLEL_SIZE": "2"})
    assert explicit.tensor_parallel_size is None
    assert explicit.engine_flags == ("--tensor-parallel-size", "2")


def test_port_from_sagemaker_bind_to_port(opt_ml: Path):
    assert load_settings({"OPT_ML_ROOT": str(opt_ml)}).port == 8080
    assert (
        load_settings({"OPT_ML_ROOT": str(opt_ml), "SAGEMAKER_BIND_TO_PORT": "9000"}).port == 9000
    )


def test_every_problem_is_reported_at_once(opt_ml: Path):
    env = {
        "OPT_ML_ROOT": str(opt_ml),
        "SAGEMAKER_BIND_TO_PORT": "http",
        "SM_NUM_GPUS": "-1",
        "SM_VLLM_SPECULATIVE_CONFIG": "{method: eagle3}",
        "SM_VLLM_PORT": "9000",
        "MAX_CONCURRENT_REQUESTS": "0",
    }
    with pytest.raises(SettingsError) as raised:
        load_settings(env)
    text = "\n".join(raised.value.problems)
    assert len(raised.value.problems) == 5
    for variable in (
        "SAGEMAKER_BIND_TO_PORT",
        "SM_NUM_GPUS",
        "SM_VLLM_SPECULATIVE_CONFIG",
        "SM_VLLM_PORT",
        "MAX_CONCURRENT_REQUESTS",
    ):
        assert variable in text


@pytest.mark.parametrize("value", ["[1, 2]", '"eagle3"', "3"])
def test_speculative_config_must_be_an_object(opt_ml: Path, value: str):
    with pytest.raises(SettingsError, match="SM_VLLM_SPECULATIVE_CONFIG.*not an object"):
        load_settings({"OPT_ML_ROOT": str(opt_ml), "SM_VLLM_SPECULATIVE_CONFIG": value})
