"""Environment in, one validated Settings object out.

Every variable the container reads is named here, and nowhere else. Problems are
collected, not raised one by one, so a user fixes a bad environment in one pass.
Rules that hold for every variable: an empty or blank value means unset, and a yes/no
value is spelled with the words in TRUE_WORDS and FALSE_WORDS.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from serving import paths
from serving.secrets import redact_mapping
from serving.vllm_flags import MULTI_VALUE_FLAGS, NEGATABLE_FLAGS, RESERVED_FLAGS, SWITCH_FLAGS

VLLM_PREFIX = "SM_VLLM_"
SPECULATIVE_CONFIG_VAR = "SM_VLLM_SPECULATIVE_CONFIG"
SERVED_MODEL_NAME_VAR = "SM_VLLM_SERVED_MODEL_NAME"
# SM_VLLM_* variables the settings consume themselves instead of passing on as flags.
CONSUMED_VLLM_VARS = {SPECULATIVE_CONFIG_VAR, "SM_VLLM_MODEL"}
# Speculative methods whose drafter is a model directory: only they get the eagle channel.
DRAFTER_CHANNEL_METHODS = frozenset({"eagle", "eagle3"})

TRUE_WORDS = frozenset({"true", "yes", "on", "1"})
FALSE_WORDS = frozenset({"false", "no", "off", "0"})


class SettingsError(Exception):
    """One or more problems with the environment; each is a sentence a user can act on."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


def boolean(word: str) -> bool:
    """true/yes/on/1 -> True, false/no/off/0 -> False, in any case; else ValueError."""
    word = word.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError(f"{word!r} is not a yes/no word")


def not_a_boolean(variable: str, value: str) -> str:
    return (
        f"{variable}={value!r} is not true or false; set it to true or false "
        "(yes/no, on/off and 1/0 work too)."
    )


def zero_is_none(gpus: int | None) -> int | None:
    # SageMaker sets SM_NUM_GPUS=0 on CPU instances: no tensor parallelism then.
    return gpus or None


class Settings(BaseSettings):
    """The container's configuration. Fields with a validation alias come straight from that
    environment variable; the others are derived from the environment by load_settings."""

    # load_settings hands the environment in (os.environ or a test's mapping), so the model
    # reads nothing by itself and both take one path. The defaults are ours, not validated.
    model_config = SettingsConfigDict(
        frozen=True, extra="forbid", allow_inf_nan=False, validate_default=False
    )

    opt_ml_root: Path
    model: str
    served_model_name: str
    drafter_dir: Path
    speculative_config: dict[str, Any] | None
    engine_flags: tuple[str, ...]
    tensor_parallel_size: Annotated[int | None, AfterValidator(zero_is_none)] = Field(
        None, validation_alias="SM_NUM_GPUS", ge=0, examples=[1]
    )
    host: str = "0.0.0.0"
    port: int = Field(paths.DEFAULT_PORT, validation_alias="SAGEMAKER_BIND_TO_PORT", ge=1, le=65535)
    max_payload_mb: float = Field(
        6.0, validation_alias="SAGEMAKER_MAX_PAYLOAD_IN_MB", gt=0, examples=[6]
    )
    max_concurrent_requests: int = Field(1000, validation_alias="MAX_CONCURRENT_REQUESTS", ge=1)
    # SageMaker kills 30 s after SIGTERM: drain + 2 s to close connections + engine stop fit.
    drain_seconds: float = Field(
        20.0, validation_alias="SERVING_DRAIN_SECONDS", ge=0, examples=[20]
    )
    engine_exit_seconds: float = Field(
        3.0, validation_alias="SERVING_ENGINE_EXIT_SECONDS", ge=0, examples=[3]
    )
    body_timeout_seconds: float = Field(
        30.0, validation_alias="SERVING_BODY_TIMEOUT_SECONDS", gt=0, examples=[30]
    )
    engine_niceness: int = Field(10, validation_alias="SERVING_ENGINE_NICE", ge=0, le=19)
    log_format: Annotated[Literal["plain", "json"], BeforeValidator(str.lower)] = Field(
        "plain", validation_alias="SERVING_LOG_FORMAT"
    )
    log_bodies: Annotated[bool, BeforeValidator(boolean)] = Field(
        False, validation_alias="SERVING_LOG_BODIES"
    )
    # CloudWatch metrics written to stdout (0: none), and the dimensions they carry.
    emf_interval_seconds: float = Field(
        60.0, validation_alias="SERVING_EMF_INTERVAL_SECONDS", ge=0, examples=[60]
    )
    endpoint_name: str | None = Field(None, validation_alias="SERVING_ENDPOINT_NAME")
    # Capture of sampled requests and answers as JSON lines: off unless a directory is set.
    capture_dir: Path | None = Field(None, validation_alias="SERVING_CAPTURE_DIR")
    capture_sample: float = Field(1.0, validation_alias="SERVING_CAPTURE_SAMPLE", ge=0, le=1)
    capture_file_mb: float = Field(
        64.0, validation_alias="SERVING_CAPTURE_FILE_MB", gt=0, examples=[64]
    )
    variant_name: str | None = Field(None, validation_alias="SERVING_VARIANT_NAME")

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource, **_: Any
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)

    @property
    def max_payload_bytes(self) -> int:
        return int(self.max_payload_mb * 1024 * 1024)

    @property
    def metric_dimensions(self) -> dict[str, str]:
        named = {"EndpointName": self.endpoint_name, "VariantName": self.variant_name}
        return {name: value for name, value in named.items() if value}

    def __repr_args__(self):
        # The engine flags may carry --api-key; a logged Settings must not.
        return redact_mapping(dict(super().__repr_args__())).items()


# Environment variable -> the field it fills.
FIELDS_BY_VARIABLE: dict[str, tuple[str, FieldInfo]] = {
    field.validation_alias: (name, field)
    for name, field in Settings.model_fields.items()
    if isinstance(field.validation_alias, str)
}


def value_of(environ: Mapping[str, str], variable: str) -> str | None:
    """The variable's value without surrounding blanks; None when unset, empty or blank."""
    return environ.get(variable, "").strip() or None


def flag_name(variable: str) -> str:
    """SM_VLLM_MAX_MODEL_LEN -> max-model-len."""
    return variable[len(VLLM_PREFIX) :].lower().replace("_", "-")


def looks_like_json(value: str) -> bool:
    return value[:1] in ("{", "[")


def env_to_flags(variable: str, value: str) -> list[str]:
    """One SM_VLLM_* variable as vLLM argv entries.

    Empty -> nothing. A boolean flag takes a yes/no word: true -> `--flag`; false ->
    `--no-flag` where vLLM has that form, else nothing. A JSON object or array -> one
    argument, except that a flag taking several values gets each array item as its own.
    A flag taking several values splits a plain value at whitespace. Anything else ->
    `--flag value`. Raises ValueError with a user-facing sentence on a value that cannot
    be right.
    """
    name = flag_name(variable)
    if not name:
        raise ValueError(f"{variable} names no vLLM flag; remove it.")
    value = value.strip()
    if not value:
        return []
    negated = name.removeprefix("no-")
    if name in NEGATABLE_FLAGS or name in SWITCH_FLAGS or negated in NEGATABLE_FLAGS:
        try:
            wanted = boolean(value)
        except ValueError:
            raise ValueError(not_a_boolean(variable, value)) from None
        if wanted:
            return [f"--{name}"]
        if negated != name:
            return [f"--{negated}"]
        return [f"--no-{name}"] if name in NEGATABLE_FLAGS else []
    if looks_like_json(value):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as error:
            raise ValueError(
                f"{variable} starts like JSON but is not valid JSON ({error.msg} at "
                f"character {error.pos}); fix the JSON or quote it as a plain string."
            ) from None
        if name in MULTI_VALUE_FLAGS and isinstance(parsed, list):
            items = [item if isinstance(item, str) else json.dumps(item) for item in parsed]
            return [f"--{name}", *items] if items else []
        return [f"--{name}", value]
    if name in MULTI_VALUE_FLAGS:
        return [f"--{name}", *value.split()]
    return [f"--{name}", value]


def vllm_flags_from_env(environ: Mapping[str, str], problems: list[str]) -> list[str]:
    flags: list[str] = []
    for variable in sorted(environ):
        if not variable.startswith(VLLM_PREFIX) or variable in CONSUMED_VLLM_VARS:
            continue
        name = flag_name(variable)
        reason = RESERVED_FLAGS.get(name.removeprefix("no-"))
        if reason:
            problems.append(f"{variable} cannot be set: {reason}. Remove it.")
            continue
        try:
            flags += env_to_flags(variable, environ[variable])
        except ValueError as error:
            problems.append(str(error))
    return flags


def parse_speculative_config(
    environ: Mapping[str, str], drafter_dir: Path, problems: list[str]
) -> dict[str, Any] | None:
    raw = value_of(environ, SPECULATIVE_CONFIG_VAR)
    if raw is None:
        return None
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as error:
        problems.append(
            f"{SPECULATIVE_CONFIG_VAR} is not valid JSON ({error.msg} at character {error.pos}); "
            'set it to a JSON object such as {"method": "eagle3", "num_speculative_tokens": 3, '
            '"parallel_drafting": true}.'
        )
        return None
    if not isinstance(config, dict):
        problems.append(
            f"{SPECULATIVE_CONFIG_VAR} is JSON but a {type(config).__name__}, not an object; "
            'set it to an object such as {"method": "eagle3", "num_speculative_tokens": 3}.'
        )
        return None
    if (
        "model" not in config
        and config.get("method") in DRAFTER_CHANNEL_METHODS
        and drafter_dir.is_dir()
    ):
        config = {"model": str(drafter_dir), **config}
    return config


def resolve_model(environ: Mapping[str, str], opt_ml_root: Path, problems: list[str]) -> str:
    local = paths.model_dir(opt_ml_root)
    if (local / "config.json").is_file():
        return str(local)
    for variable in ("SM_VLLM_MODEL", "HF_MODEL_ID"):
        named = value_of(environ, variable)
        if named:
            return named
    problems.append(
        f"no target model: {local} has no config.json and neither SM_VLLM_MODEL nor HF_MODEL_ID "
        "is set. Put the model in S3 as the endpoint's ModelDataUrl (mounted there), or set one "
        "of the two variables."
    )
    return str(local)


def served_name(environ: Mapping[str, str], model: str) -> str:
    """The name vLLM reports first: the first of SM_VLLM_SERVED_MODEL_NAME's names."""
    try:
        names = env_to_flags(SERVED_MODEL_NAME_VAR, environ.get(SERVED_MODEL_NAME_VAR, ""))[1:]
    except ValueError:  # reported by vllm_flags_from_env
        names = []
    return names[0] if names else model


def allowed_range(field: FieldInfo) -> str:
    limits = {
        bound: getattr(constraint, bound)
        for constraint in field.metadata
        for bound in ("ge", "gt", "le", "lt")
        if hasattr(constraint, bound)
    }
    if "ge" in limits and "le" in limits:
        return f"between {limits['ge']} and {limits['le']}"
    if "ge" in limits:
        return f"{limits['ge']} or more"
    if "gt" in limits:
        return f"more than {limits['gt']}"
    return f"{limits.get('le', limits.get('lt'))} or less"


def explain(error: ErrorDetails) -> str:
    """A pydantic error on one environment variable as a sentence: the variable, what is wrong,
    and the fix."""
    variable = str(error["loc"][0]) if error["loc"] else "settings"
    if variable not in FIELDS_BY_VARIABLE:
        return f"{variable}: {error['msg']}."
    name, field = FIELDS_BY_VARIABLE[variable]
    raw = error["input"]
    if field.annotation is bool:
        return not_a_boolean(variable, raw)
    if error["type"] == "literal_error":
        return f"{variable}={raw!r} is not {error['ctx']['expected']}; set it to one of those."
    whole = field.annotation in (int, int | None)
    kind = "whole number" if whole else "number"
    units = {"_seconds": " of seconds", "_mb": " of megabytes"}
    unit = next((text for suffix, text in units.items() if name.endswith(suffix)), "")
    example = field.examples[0] if field.examples else field.default
    fix = f"set it to a {kind} such as {example}."
    if error["type"] == "finite_number":
        return f"{variable}={raw!r} is not a finite {kind}{unit}; {fix}"
    if error["type"] in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        return f"{variable}={raw!r} is out of range: it must be {allowed_range(field)}; {fix}"
    if error["type"] in ("int_parsing", "int_from_float", "float_parsing"):
        return f"{variable}={raw!r} is not a {kind}{unit}; {fix}"
    return f"{variable}={raw!r}: {error['msg']}; {fix}"


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Read and validate the environment; raise SettingsError listing every problem."""
    env = os.environ if environ is None else environ
    problems: list[str] = []

    opt_ml_root = Path(value_of(env, "OPT_ML_ROOT") or paths.DEFAULT_OPT_ML_ROOT).absolute()
    drafter_dir = paths.channel_dir(opt_ml_root)
    model = resolve_model(env, opt_ml_root, problems)
    speculative_config = parse_speculative_config(env, drafter_dir, problems)
    engine_flags = vllm_flags_from_env(env, problems)

    variables = {
        variable: value
        for variable in FIELDS_BY_VARIABLE
        if (value := value_of(env, variable)) is not None
    }
    if value_of(env, "SM_VLLM_TENSOR_PARALLEL_SIZE") is not None:
        variables.pop("SM_NUM_GPUS", None)  # the user's flag wins over the GPU count
    try:
        settings = Settings(
            **variables,
            opt_ml_root=opt_ml_root,
            model=model,
            served_model_name=served_name(env, model),
            drafter_dir=drafter_dir,
            speculative_config=speculative_config,
            engine_flags=tuple(engine_flags),
        )
    except ValidationError as invalid:
        problems += [explain(error) for error in invalid.errors()]

    if problems:
        raise SettingsError(problems)
    return settings
