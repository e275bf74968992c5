"""Environment in, one validated Settings object out.

Every variable the container reads is named here, and nowhere else. Problems are
collected, not raised one by one, so a user fixes a bad environment in one pass.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from serving import paths
from serving.vllm_flags import NEGATABLE_FLAGS, RESERVED_FLAGS

VLLM_PREFIX = "SM_VLLM_"
SPECULATIVE_CONFIG_VAR = "SM_VLLM_SPECULATIVE_CONFIG"
# SM_VLLM_* variables the settings consume themselves instead of passing on as flags.
CONSUMED_VLLM_VARS = {SPECULATIVE_CONFIG_VAR, "SM_VLLM_MODEL"}

TRUE_WORDS = {"true", "yes", "on", "1"}
FALSE_WORDS = {"false", "no", "off", "0"}


class SettingsError(Exception):
    """One or more problems with the environment; each is a sentence a user can act on."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True)

    opt_ml_root: Path
    model: str
    served_model_name: str
    drafter_dir: Path
    speculative_config: dict[str, Any] | None
    engine_flags: tuple[str, ...]
    tensor_parallel_size: int | None
    host: str = "0.0.0.0"
    port: int = paths.DEFAULT_PORT
    engine_host: str = paths.ENGINE_HOST
    engine_port: int
    max_payload_bytes: int
    max_concurrent_requests: int
    drain_seconds: float
    engine_exit_seconds: float
    engine_niceness: int
    log_format: Literal["plain", "json"]
    log_bodies: bool

    @property
    def engine_url(self) -> str:
        return f"http://{self.engine_host}:{self.engine_port}"

    @property
    def parallel_drafting(self) -> bool:
        return (
            bool(self.speculative_config)
            and self.speculative_config.get("parallel_drafting") is True
        )


def flag_name(variable: str) -> str:
    """SM_VLLM_MAX_MODEL_LEN -> max-model-len."""
    return variable[len(VLLM_PREFIX) :].lower().replace("_", "-")


def looks_like_json(value: str) -> bool:
    return value[:1] in "{["


def env_to_flags(variable: str, value: str) -> list[str]:
    """One SM_VLLM_* variable as vLLM argv entries.

    `true` or empty -> bare flag; `false` -> `--no-flag` where vLLM has that form, else
    nothing; a JSON object or array -> one argument; anything else -> `--flag value`.
    Raises ValueError with a user-facing sentence on a value that cannot be right.
    """
    name = flag_name(variable)
    if not name:
        raise ValueError(f"{variable} names no vLLM flag; remove it.")
    stripped = value.strip()
    word = stripped.lower()
    if word in ("", "true"):
        return [f"--{name}"]
    if word == "false":
        return [f"--no-{name}"] if name in NEGATABLE_FLAGS else []
    if looks_like_json(stripped):
        try:
            json.loads(stripped)
        except json.JSONDecodeError as error:
            raise ValueError(
                f"{variable} starts like JSON but is not valid JSON ({error.msg} at "
                f"character {error.pos}); fix the JSON or quote it as a plain string."
            ) from None
        return [f"--{name}", stripped]
    return [f"--{name}", stripped]


def vllm_flags_from_env(environ: Mapping[str, str], problems: list[str]) -> list[str]:
    flags: list[str] = []
    for variable in sorted(environ):
        if not variable.startswith(VLLM_PREFIX) or variable in CONSUMED_VLLM_VARS:
            continue
        name = flag_name(variable)
        if name in RESERVED_FLAGS:
            problems.append(f"{variable} cannot be set: {RESERVED_FLAGS[name]}. Remove it.")
            continue
        try:
            flags += env_to_flags(variable, environ[variable])
        except ValueError as error:
            problems.append(str(error))
    return flags


def parse_int(
    environ: Mapping[str, str],
    variable: str,
    default: int | None,
    problems: list[str],
    minimum: int = 0,
    maximum: int | None = None,
) -> int | None:
    raw = environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        problems.append(f"{variable}={raw!r} is not a whole number; set it to one, e.g. {default}.")
        return default
    if value < minimum or (maximum is not None and value > maximum):
        bound = f"between {minimum} and {maximum}" if maximum is not None else f">= {minimum}"
        problems.append(f"{variable}={value} is out of range; it must be {bound}.")
        return default
    return value


def parse_float(
    environ: Mapping[str, str], variable: str, default: float, problems: list[str]
) -> float:
    raw = environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        problems.append(
            f"{variable}={raw!r} is not a number of seconds; set it to one, e.g. {default}."
        )
        return default
    if value < 0:
        problems.append(f"{variable}={value} is negative; it must be 0 or more seconds.")
        return default
    return value


def parse_bool(environ: Mapping[str, str], variable: str, problems: list[str]) -> bool:
    raw = environ.get(variable, "").strip().lower()
    if raw in TRUE_WORDS:
        return True
    if raw in FALSE_WORDS or not raw:
        return False
    problems.append(f"{variable}={raw!r} is not a boolean; set it to true or false.")
    return False


def parse_speculative_config(
    environ: Mapping[str, str], drafter_dir: Path, problems: list[str]
) -> dict[str, Any] | None:
    raw = environ.get(SPECULATIVE_CONFIG_VAR, "").strip()
    if not raw:
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
    if "model" not in config and drafter_dir.is_dir():
        config = {"model": str(drafter_dir), **config}
    return config


def resolve_model(environ: Mapping[str, str], opt_ml_root: Path, problems: list[str]) -> str:
    local = paths.model_dir(opt_ml_root)
    if (local / "config.json").is_file():
        return str(local)
    for variable in ("SM_VLLM_MODEL", "HF_MODEL_ID"):
        if environ.get(variable, "").strip():
            return environ[variable].strip()
    problems.append(
        f"no target model: {local} has no config.json and neither SM_VLLM_MODEL nor HF_MODEL_ID "
        "is set. Put the model in S3 as the endpoint's ModelDataUrl (mounted there), or set one "
        "of the two variables."
    )
    return str(local)


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def served_name(environ: Mapping[str, str], model: str) -> str:
    # vLLM takes several space-separated names; the first is the one it reports.
    names = environ.get("SM_VLLM_SERVED_MODEL_NAME", "").split()
    return names[0] if names else model


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Read and validate the environment; raise SettingsError listing every problem."""
    env = os.environ if environ is None else environ
    problems: list[str] = []

    opt_ml_root = Path(env.get("OPT_ML_ROOT", "").strip() or paths.DEFAULT_OPT_ML_ROOT).absolute()
    drafter_dir = paths.channel_dir(opt_ml_root)
    model = resolve_model(env, opt_ml_root, problems)
    speculative_config = parse_speculative_config(env, drafter_dir, problems)
    engine_flags = vllm_flags_from_env(env, problems)

    tensor_parallel_size = None
    if not env.get("SM_VLLM_TENSOR_PARALLEL_SIZE", "").strip():
        # SageMaker sets SM_NUM_GPUS=0 on CPU instances: no tensor parallelism then.
        tensor_parallel_size = parse_int(env, "SM_NUM_GPUS", None, problems) or None

    port = parse_int(env, "SAGEMAKER_BIND_TO_PORT", paths.DEFAULT_PORT, problems, 1, 65535)
    engine_port = parse_int(env, "SERVING_ENGINE_PORT", 0, problems, 0, 65535) or free_port(
        paths.ENGINE_HOST
    )
    if engine_port == port:
        problems.append(
            f"SERVING_ENGINE_PORT={engine_port} is the front's port too; pick another port or "
            "leave it unset for a free one."
        )
    payload_mb = parse_float(env, "SAGEMAKER_MAX_PAYLOAD_IN_MB", 6.0, problems)
    max_concurrent = parse_int(env, "MAX_CONCURRENT_REQUESTS", 1000, problems, minimum=1)
    drain_seconds = parse_float(env, "SERVING_DRAIN_SECONDS", 25.0, problems)
    engine_exit_seconds = parse_float(env, "SERVING_ENGINE_EXIT_SECONDS", 3.0, problems)
    engine_niceness = parse_int(env, "SERVING_ENGINE_NICE", 10, problems, 0, 19)
    log_format = env.get("SERVING_LOG_FORMAT", "plain").strip().lower() or "plain"
    if log_format not in ("plain", "json"):
        problems.append(f"SERVING_LOG_FORMAT={log_format!r} is not known; set it to plain or json.")
        log_format = "plain"
    log_bodies = parse_bool(env, "SERVING_LOG_BODIES", problems)

    if problems:
        raise SettingsError(problems)
    return Settings(
        opt_ml_root=opt_ml_root,
        model=model,
        served_model_name=served_name(env, model),
        drafter_dir=drafter_dir,
        speculative_config=speculative_config,
        engine_flags=tuple(engine_flags),
        tensor_parallel_size=tensor_parallel_size,
        port=port,
        engine_port=engine_port,
        max_payload_bytes=int(payload_mb * 1024 * 1024),
        max_concurrent_requests=max_concurrent,
        drain_seconds=drain_seconds,
        engine_exit_seconds=engine_exit_seconds,
        engine_niceness=engine_niceness,
        log_format=log_format,
        log_bodies=log_bodies,
    )
