"""Environment in, one validated Settings object out, and the wording of its errors.

Every variable the container reads is a field here (its name in serving/variables.py when
other modules name it too); the SM_VLLM_* ones that become vLLM flags are translated by
serving/engine_args/. Problems are collected, not raised one by one, so a user fixes a bad
environment in one pass. An empty or blank value means unset.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BeforeValidator, Field, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from serving import cloudwatch, paths
from serving.engine_args.agents import agent_flags
from serving.engine_args.environment import (
    boolean,
    not_a_boolean,
    served_name,
    value_of,
    vllm_flags_from_env,
)
from serving.engine_args.speculative import parse_speculative_config
from serving.logs import LOG_FORMAT_VAR, LogFormat
from serving.secrets import redact_mapping
from serving.variables import (
    ENDPOINT_NAME_VAR,
    HEAD_VERSION_VAR,
    HF_MODEL_ID_VAR,
    MAX_PAYLOAD_VAR,
    MODEL_VAR,
    OPT_ML_ROOT_VAR,
    TENSOR_PARALLEL_SIZE_VAR,
    VARIANT_NAME_VAR,
)

BatchStrategy = Literal["MULTI_RECORD", "SINGLE_RECORD"]


class SettingsError(Exception):
    """One or more problems with the environment; each is a sentence a user can act on."""

    def __init__(self, problems: list[str], log_format: LogFormat = "plain"):
        self.problems = problems
        # The log format asked for, when it was a valid one: the problems are logged in it.
        self.log_format = log_format
        super().__init__("\n".join(problems))


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
    # What the container adds for agents (serving/engine_args/agents.py), and why.
    agent_flags: tuple[str, ...] = ()
    agent_summary: str = ""
    # The chat template the container writes for the engine, and the front's refusal of
    # tool_choice "auto" where it is not served (None: none).
    agent_chat_template: str | None = None
    auto_tool_choice_refusal: str | None = None
    tensor_parallel_size: Annotated[int | None, AfterValidator(zero_is_none)] = Field(
        None, validation_alias="SM_NUM_GPUS", ge=0, examples=[1]
    )
    host: str = "0.0.0.0"
    port: int = Field(paths.DEFAULT_PORT, validation_alias="SAGEMAKER_BIND_TO_PORT", ge=1, le=65535)
    max_payload_mb: float = Field(6.0, validation_alias=MAX_PAYLOAD_VAR, gt=0, examples=[6])
    # Batch Transform (serving/transform.py): the service sets these for a transform job.
    batch: Annotated[bool, BeforeValidator(boolean)] = Field(
        False, validation_alias="SAGEMAKER_BATCH"
    )
    batch_strategy: Annotated[BatchStrategy | None, BeforeValidator(str.upper)] = Field(
        None, validation_alias="SAGEMAKER_BATCH_STRATEGY"
    )
    max_concurrent_transforms: int | None = Field(
        None, validation_alias="SAGEMAKER_MAX_CONCURRENT_TRANSFORMS", ge=1, examples=[4]
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
    # Self-healing (serving/stall_watch.py, serving/lifecycle.py).
    engine_stall_seconds: float = Field(60.0, validation_alias="SERVING_ENGINE_STALL_SECONDS", ge=0)
    engine_restarts: int = Field(2, validation_alias="SERVING_ENGINE_RESTARTS", ge=0)
    engine_restart_window_seconds: float = Field(
        900.0, validation_alias="SERVING_ENGINE_RESTART_WINDOW_SECONDS", gt=0
    )
    log_format: Annotated[LogFormat, BeforeValidator(str.lower)] = Field(
        "plain", validation_alias=LOG_FORMAT_VAR
    )
    log_bodies: Annotated[bool, BeforeValidator(boolean)] = Field(
        False, validation_alias="SERVING_LOG_BODIES"
    )
    # CloudWatch metrics written to stdout (0: none), and the dimensions they carry.
    emf_interval_seconds: float = Field(
        60.0, validation_alias="SERVING_EMF_INTERVAL_SECONDS", ge=0, examples=[60]
    )
    endpoint_name: str | None = Field(None, validation_alias=ENDPOINT_NAME_VAR)
    # Capture of sampled requests and answers as JSON lines: off unless a directory is set.
    capture_dir: Path | None = Field(None, validation_alias="SERVING_CAPTURE_DIR")
    capture_sample: float = Field(1.0, validation_alias="SERVING_CAPTURE_SAMPLE", ge=0, le=1)
    capture_file_mb: float = Field(
        64.0, validation_alias="SERVING_CAPTURE_FILE_MB", gt=0, examples=[64]
    )
    variant_name: str | None = Field(None, validation_alias=VARIANT_NAME_VAR)
    head_version: str | None = Field(
        None, validation_alias=HEAD_VERSION_VAR, max_length=255, examples=["20260601120000"]
    )

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
        named = {
            cloudwatch.ENDPOINT_DIMENSION: self.endpoint_name,
            cloudwatch.VARIANT_DIMENSION: self.variant_name,
            cloudwatch.HEAD_VERSION_DIMENSION: self.head_version,
        }
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


def resolve_model(environ: Mapping[str, str], opt_ml_root: Path, problems: list[str]) -> str:
    local = paths.model_dir(opt_ml_root)
    if (local / "config.json").is_file():
        return str(local)
    for variable in (MODEL_VAR, HF_MODEL_ID_VAR):
        named = value_of(environ, variable)
        if named:
            return named
    problems.append(
        f"no target model: {local} has no config.json and neither SM_VLLM_MODEL nor HF_MODEL_ID "
        "is set. Put the model in S3 as the endpoint's ModelDataUrl (mounted there), or set one "
        "of the two variables."
    )
    return str(local)


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

    opt_ml_root = Path(value_of(env, OPT_ML_ROOT_VAR) or paths.DEFAULT_OPT_ML_ROOT).absolute()
    drafter_dir = paths.drafter_dir(opt_ml_root)
    model = resolve_model(env, opt_ml_root, problems)
    speculative_config = parse_speculative_config(
        env, drafter_dir, problems, paths.model_dir(opt_ml_root)
    )
    engine_flags = vllm_flags_from_env(env, problems)
    local_model = Path(model) if Path(model, "config.json").is_file() else None
    agents = agent_flags(env, local_model, problems)

    variables = {
        variable: value
        for variable in FIELDS_BY_VARIABLE
        if (value := value_of(env, variable)) is not None
    }
    if value_of(env, TENSOR_PARALLEL_SIZE_VAR) is not None:
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
            agent_flags=agents.flags,
            agent_summary=agents.summary,
            agent_chat_template=agents.chat_template,
            auto_tool_choice_refusal=agents.auto_tool_choice_refusal,
        )
    except ValidationError as invalid:
        problems += [explain(error) for error in invalid.errors()]

    if problems:
        requested = (value_of(env, LOG_FORMAT_VAR) or "").lower()
        raise SettingsError(problems, requested if requested in get_args(LogFormat) else "plain")
    return settings
