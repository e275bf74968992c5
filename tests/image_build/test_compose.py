"""docker-compose.yml: the compose spec's schema, the GPU service and the CPU profile."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import jsonschema
import pytest

from image_build.docker_daemon import compose_cli
from serving import paths
from tests.support.image_files import COMPOSE_FILE, GPU_DOCKERFILE, ROOT, compose

# Vendored from compose-spec/compose-spec, schema/compose-spec.json at 170098ba (Apache-2.0).
COMPOSE_SCHEMA = Path(__file__).parents[1] / "data" / "compose-spec.json"
MODEL_DIR = str(paths.model_dir(paths.DEFAULT_OPT_ML_ROOT))
DRAFTER_DIR = str(paths.channel_dir(paths.DEFAULT_OPT_ML_ROOT))


def test_compose_file_follows_the_compose_spec():
    schema = json.loads(COMPOSE_SCHEMA.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(compose()), key=str)
    assert not errors, "\n".join(f"{list(error.path)}: {error.message}" for error in errors)


def mounts(service: dict) -> dict[str, bool]:
    """Container path -> read-only, for short and long volume syntax."""
    result = {}
    for volume in service.get("volumes", []):
        if isinstance(volume, str):
            _, target, *mode = volume.split(":")
            result[target] = "ro" in "".join(mode).split(",")
        else:
            result[volume["target"]] = bool(volume.get("read_only"))
    return result


def container_ports(service: dict) -> set[str]:
    return {str(port).split(":")[-1].split("/")[0] for port in service["ports"]}


def test_compose_gpu_service():
    service = compose()["services"]["serving"]
    assert "profiles" not in service, "`docker compose up` must start the GPU service"
    devices = service["deploy"]["resources"]["reservations"]["devices"]
    assert any(d.get("driver") == "nvidia" and "gpu" in d["capabilities"] for d in devices)
    assert str(paths.DEFAULT_PORT) in container_ports(service)
    assert service.get("ipc") == "host" or service.get("shm_size")
    assert mounts(service) == {MODEL_DIR: True, DRAFTER_DIR: True}
    speculative_config = json.loads(service["environment"]["SM_VLLM_SPECULATIVE_CONFIG"])
    assert speculative_config == {
        "model": DRAFTER_DIR,
        "method": "eagle3",
        "num_speculative_tokens": 3,
        "parallel_drafting": True,
    }
    assert service["healthcheck"]["start_period"]
    # SageMaker's grace between SIGTERM and SIGKILL; compose's default is 10 s.
    assert service["stop_grace_period"] == "30s"
    assert service["build"]["dockerfile"] == GPU_DOCKERFILE.name


def test_compose_cpu_profile_runs_the_cpu_image():
    service = compose()["services"]["serving-cpu"]
    assert service["profiles"] == ["cpu"]
    assert service["image"].rstrip("}").endswith("sagemaker-vllm-peagle:cpu")
    assert service["shm_size"]
    assert mounts(service) == {MODEL_DIR: True, DRAFTER_DIR: True}
    assert json.loads(service["environment"]["SM_VLLM_SPECULATIVE_CONFIG"])["parallel_drafting"]
    assert str(paths.DEFAULT_PORT) in container_ports(service)
    assert "deploy" not in service
    assert service["healthcheck"]["start_period"]


def test_compose_cli_accepts_the_file(tmp_path: Path):
    """A second opinion when a compose CLI is installed (it needs no engine for `config`)."""
    cli = compose_cli()
    if cli is None:
        pytest.skip("no docker compose CLI here; the schema test covers the file")
    env = {**os.environ, "MODEL_DIR": str(tmp_path), "DRAFTER_DIR": str(tmp_path)}
    for profile in ([], ["--profile", "cpu"]):
        result = subprocess.run(
            [*cli, "-f", str(COMPOSE_FILE), *profile, "config", "--quiet"],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
        )
        assert result.returncode == 0, result.stderr
