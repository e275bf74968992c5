"""Settings: the environment read into the container's settings, its defaults, and the
values it refuses. The SM_VLLM_* -> flag rules themselves are tests/serving/test_env_flags.py's."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from serving.settings import SettingsError, load_settings

DRAFTER_CHANNEL_PATH = Path("additional-model-data-sources") / "eagle"


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


def test_a_pretty_printed_speculative_config_is_read_as_its_json(opt_ml: Path):
    """As users paste it from docs: indented with tabs and spaces, over lines, a newline at
    the end (the image's own run of it: tests/image/test_image.py)."""
    spec = {"method": "eagle3", "num_speculative_tokens": 5, "parallel_drafting": True}
    for text in (json.dumps(spec, indent="\t") + "\n", "\n  " + json.dumps(spec, indent=4) + " \n"):
        settings = load_settings({"OPT_ML_ROOT": str(opt_ml), "SM_VLLM_SPECULATIVE_CONFIG": text})
        assert {key: settings.speculative_config[key] for key in spec} == spec


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


def test_defaults(opt_ml: Path):
    settings = load_settings({"OPT_ML_ROOT": str(opt_ml)})
    assert settings.port == 8080
    assert settings.max_payload_bytes == 6 * 1024 * 1024
    assert settings.max_concurrent_requests == 1000
    # Drain + 2 s connection close + engine stop stay under SageMaker's 30 s SIGKILL.
    assert settings.drain_seconds == 20
    assert settings.engine_exit_seconds == 3
    assert settings.drain_seconds + 2 + settings.engine_exit_seconds <= 28
    assert settings.body_timeout_seconds == 30
    assert settings.engine_niceness == 10
    assert settings.log_format == "plain"
    assert settings.log_bodies is False
    assert settings.served_model_name == str(opt_ml / "model")


def test_settings_do_not_open_sockets(opt_ml: Path, monkeypatch: pytest.MonkeyPatch):
    def no_sockets(*args, **kwargs):
        raise AssertionError("settings opened a socket")

    monkeypatch.setattr(socket, "socket", no_sockets)
    load_settings({"OPT_ML_ROOT": str(opt_ml)})


def test_a_given_mapping_is_the_whole_environment(opt_ml: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SERVING_DRAIN_SECONDS", "5")
    assert load_settings({"OPT_ML_ROOT": str(opt_ml)}).drain_seconds == 20


SCALAR_CASES = [
    # (variable, value, field, expected)
    ("SERVING_DRAIN_SECONDS", "0", "drain_seconds", 0.0),
    ("SERVING_DRAIN_SECONDS", " 12.5 ", "drain_seconds", 12.5),
    ("SERVING_DRAIN_SECONDS", "", "drain_seconds", 20.0),
    ("SERVING_ENGINE_EXIT_SECONDS", "0", "engine_exit_seconds", 0.0),
    ("SERVING_BODY_TIMEOUT_SECONDS", "2.5", "body_timeout_seconds", 2.5),
    ("SAGEMAKER_MAX_PAYLOAD_IN_MB", "1", "max_payload_bytes", 1024 * 1024),
    ("SAGEMAKER_MAX_PAYLOAD_IN_MB", "0.5", "max_payload_bytes", 512 * 1024),
    ("MAX_CONCURRENT_REQUESTS", "8", "max_concurrent_requests", 8),
    ("SERVING_ENGINE_NICE", "0", "engine_niceness", 0),
    ("SERVING_ENGINE_NICE", "19", "engine_niceness", 19),
    ("SERVING_LOG_FORMAT", "JSON", "log_format", "json"),
    ("SERVING_LOG_FORMAT", "  ", "log_format", "plain"),
    # The same yes/no words as SM_VLLM_* boolean flags.
    ("SERVING_LOG_BODIES", "true", "log_bodies", True),
    ("SERVING_LOG_BODIES", "Yes", "log_bodies", True),
    ("SERVING_LOG_BODIES", "ON", "log_bodies", True),
    ("SERVING_LOG_BODIES", "1", "log_bodies", True),
    ("SERVING_LOG_BODIES", "False", "log_bodies", False),
    ("SERVING_LOG_BODIES", "no", "log_bodies", False),
    ("SERVING_LOG_BODIES", "off", "log_bodies", False),
    ("SERVING_LOG_BODIES", "0", "log_bodies", False),
    ("SERVING_LOG_BODIES", "", "log_bodies", False),
]


@pytest.mark.parametrize(("variable", "value", "field", "expected"), SCALAR_CASES)
def test_scalar_settings(opt_ml: Path, variable, value, field, expected):
    settings = load_settings({"OPT_ML_ROOT": str(opt_ml), variable: value})
    assert getattr(settings, field) == expected


REFUSED_CASES = [
    # (variable, value, the whole sentence)
    (
        "SERVING_DRAIN_SECONDS",
        "inf",
        "SERVING_DRAIN_SECONDS='inf' is not a finite number of seconds; "
        "set it to a number such as 20.",
    ),
    (
        "SERVING_DRAIN_SECONDS",
        "-1",
        "SERVING_DRAIN_SECONDS='-1' is out of range: it must be 0 or more; "
        "set it to a number such as 20.",
    ),
    (
        "SERVING_ENGINE_EXIT_SECONDS",
        "NaN",
        "SERVING_ENGINE_EXIT_SECONDS='NaN' is not a finite number of seconds; "
        "set it to a number such as 3.",
    ),
    (
        "SERVING_ENGINE_EXIT_SECONDS",
        "soon",
        "SERVING_ENGINE_EXIT_SECONDS='soon' is not a number of seconds; "
        "set it to a number such as 3.",
    ),
    (
        "SERVING_BODY_TIMEOUT_SECONDS",
        "0",
        "SERVING_BODY_TIMEOUT_SECONDS='0' is out of range: it must be more than 0; "
        "set it to a number such as 30.",
    ),
    (
        "SERVING_BODY_TIMEOUT_SECONDS",
        "-inf",
        "SERVING_BODY_TIMEOUT_SECONDS='-inf' is not a finite number of seconds; "
        "set it to a number such as 30.",
    ),
    (
        "SAGEMAKER_MAX_PAYLOAD_IN_MB",
        "infinity",
        "SAGEMAKER_MAX_PAYLOAD_IN_MB='infinity' is not a finite number of megabytes; "
        "set it to a number such as 6.",
    ),
    (
        "SAGEMAKER_MAX_PAYLOAD_IN_MB",
        "0",
        "SAGEMAKER_MAX_PAYLOAD_IN_MB='0' is out of range: it must be more than 0; "
        "set it to a number such as 6.",
    ),
    (
        "SAGEMAKER_BIND_TO_PORT",
        "70000",
        "SAGEMAKER_BIND_TO_PORT='70000' is out of range: it must be between 1 and 65535; "
        "set it to a whole number such as 8080.",
    ),
    (
        "SAGEMAKER_BIND_TO_PORT",
        "http",
        "SAGEMAKER_BIND_TO_PORT='http' is not a whole number; "
        "set it to a whole number such as 8080.",
    ),
    (
        "MAX_CONCURRENT_REQUESTS",
        "0",
        "MAX_CONCURRENT_REQUESTS='0' is out of range: it must be 1 or more; "
        "set it to a whole number such as 1000.",
    ),
    (
        "MAX_CONCURRENT_REQUESTS",
        "inf",
        "MAX_CONCURRENT_REQUESTS='inf' is not a whole number; "
        "set it to a whole number such as 1000.",
    ),
    (
        "SERVING_ENGINE_NICE",
        "-5",
        "SERVING_ENGINE_NICE='-5' is out of range: it must be between 0 and 19; "
        "set it to a whole number such as 10.",
    ),
    (
        "SM_NUM_GPUS",
        "-1",
        "SM_NUM_GPUS='-1' is out of range: it must be 0 or more; "
        "set it to a whole number such as 1.",
    ),
    (
        "SERVING_LOG_FORMAT",
        "xml",
        "SERVING_LOG_FORMAT='xml' is not 'plain' or 'json'; set it to one of those.",
    ),
    (
        "SERVING_LOG_BODIES",
        "maybe",
        "SERVING_LOG_BODIES='maybe' is not true or false; "
        "set it to true or false (yes/no, on/off and 1/0 work too).",
    ),
]


@pytest.mark.parametrize(("variable", "value", "sentence"), REFUSED_CASES)
def test_bad_values_are_refused_with_a_sentence(opt_ml: Path, variable, value, sentence):
    with pytest.raises(SettingsError) as raised:
        load_settings({"OPT_ML_ROOT": str(opt_ml), variable: value})
    assert raised.value.problems == [sentence]


RESERVED_VARIABLES = [
    "SM_VLLM_HOST",
    "SM_VLLM_PORT",
    "SM_VLLM_UDS",
    "SM_VLLM_SSL_CERTFILE",
    "SM_VLLM_ENABLE_SSL_REFRESH",
    "SM_VLLM_NO_ENABLE_SSL_REFRESH",
    "SM_VLLM_HEADLESS",
    "SM_VLLM_GRPC",
]


@pytest.mark.parametrize("variable", RESERVED_VARIABLES)
def test_reserved_flags_are_refused(opt_ml: Path, variable: str):
    with pytest.raises(SettingsError, match=f"{variable} cannot be set: .*Remove it"):
        load_settings({"OPT_ML_ROOT": str(opt_ml), variable: "true"})


def test_several_served_names_reach_vllm_and_the_first_is_the_default(opt_ml: Path):
    settings = load_settings({"OPT_ML_ROOT": str(opt_ml), "SM_VLLM_SERVED_MODEL_NAME": " a b "})
    assert settings.engine_flags == ("--served-model-name", "a", "b")
    assert settings.served_model_name == "a"


@pytest.mark.parametrize("method", ["eagle", "eagle3"])
def test_eagle_methods_get_the_channel(opt_ml: Path, method: str):
    spec = json.dumps({"method": method, "num_speculative_tokens": 3})
    settings = load_settings({"OPT_ML_ROOT": str(opt_ml), "SM_VLLM_SPECULATIVE_CONFIG": spec})
    assert settings.speculative_config["model"] == str(opt_ml / DRAFTER_CHANNEL_PATH)


@pytest.mark.parametrize("method", ["ngram", "suffix", None])
def test_other_methods_get_no_drafter_model(opt_ml: Path, method: str | None):
    spec = {"method": method, "num_speculative_tokens": 3, "prompt_lookup_max": 4}
    settings = load_settings(
        {"OPT_ML_ROOT": str(opt_ml), "SM_VLLM_SPECULATIVE_CONFIG": json.dumps(spec)}
    )
    assert settings.speculative_config == spec


def test_logged_settings_hide_secrets(opt_ml: Path):
    settings = load_settings({"OPT_ML_ROOT": str(opt_ml), "SM_VLLM_API_KEY": "sk-live-123"})
    assert settings.engine_flags == ("--api-key", "sk-live-123")
    assert "sk-live-123" not in repr(settings)
    assert "sk-live-123" not in str(settings)
