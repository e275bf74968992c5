"""`docker build` of the CPU base and of the serving image, with this machine's pip settings
as secrets when it has any."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from deps import pins
from image_build.base_images import DEBIAN_IMAGE, ensure_base_image
from image_build.docker_daemon import EngineError, ensure_engine
from image_build.pip_settings import read_settings, served

REPO_ROOT = Path(__file__).resolve().parents[1]
CPU_BASE_DIR = REPO_ROOT / "docker" / "cpu-base"
CPU_BASE_IMAGE = "sagemaker-vllm-peagle-base:cpu"
# The locked layers the CPU base installs (deps/), put beside its Dockerfile for the build.
DEPS_DIR = REPO_ROOT / "deps"
CPU_BASE_LOCKS = ("bootstrap.lock", "torch.lock", "engine.lock")
# The GPU base's stand-in (docker/gpu-standin-base): vLLM's CUDA wheel on Debian, for
# building the Dockerfile's GPU stages where Docker Hub cannot be reached.
STANDIN_BASE_DIR = REPO_ROOT / "docker" / "gpu-standin-base"
STANDIN_BASE_IMAGE = "sagemaker-vllm-peagle-base:gpu-standin"
STANDIN_IMAGE = "sagemaker-vllm-peagle:standin"
STANDIN_TRAINING_IMAGE = "sagemaker-vllm-peagle:training-standin"
CPU_IMAGE = "sagemaker-vllm-peagle:cpu"
GPU_IMAGE = "sagemaker-vllm-peagle:latest"
CPU_TRAINING_IMAGE = "sagemaker-vllm-peagle:training-cpu"
GPU_TRAINING_IMAGE = "sagemaker-vllm-peagle:training"


def docker_build(client: str, context: Path, tag: str, *extra: str) -> float:
    """BuildKit build on the host network (it reaches loopback wheel servers); seconds taken."""
    argv = [client, "build", "--network", "host", "--tag", tag, *extra, str(context)]
    began = time.monotonic()
    result = subprocess.run(argv, env={**os.environ, "DOCKER_BUILDKIT": "1"})
    if result.returncode != 0:
        raise EngineError(f"building {tag} failed (exit {result.returncode}); its output is above.")
    return time.monotonic() - began


@contextlib.contextmanager
def pip_secrets(local_folders: bool = True) -> Iterator[list[str]]:
    """`--secret` arguments with this machine's pip settings and CA bundle (none without);
    `local_folders` False leaves this machine's own wheel folders and indexes out."""
    with (
        served(read_settings(), local_folders) as settings,
        tempfile.TemporaryDirectory() as scratch,
    ):
        secrets: list[str] = []
        if settings.pip_conf:
            pip_conf = Path(scratch) / "pip.conf"
            pip_conf.write_text(settings.pip_conf)
            secrets += ["--secret", f"id=pip.conf,src={pip_conf}"]
        if settings.ca_bundle is not None:
            secrets += ["--secret", f"id=ca.pem,src={settings.ca_bundle}"]
        yield secrets


def build_base(client: str, context: Path, tag: str) -> float:
    """A base made here from Debian (the CPU base, or the GPU base's stand-in). The
    stand-in takes vLLM and torch from the package index, as vLLM's image carries them: a
    local torch 2.13.0+cpu would satisfy torch==2.13.0 and outrank PyPI's CUDA build."""
    ensure_base_image(client, DEBIAN_IMAGE)
    with (
        pip_secrets(local_folders=context != STANDIN_BASE_DIR) as secrets,
        base_context(context) as prepared,
    ):
        return docker_build(client, prepared, tag, *secrets, *base_pins(context))


def base_pins(context: Path) -> list[str]:
    """The stand-in's versions, from versions.env (the CPU base installs the lock)."""
    if context != STANDIN_BASE_DIR:
        return []
    versions = {
        "VLLM_VERSION": pins.VLLM_VERSION,
        "TORCH_VERSION": pins.TORCH_CUDA_VERSION,
        "UV_VERSION": pins.UV_VERSION,
    }
    return [part for key, value in versions.items() for part in ("--build-arg", f"{key}={value}")]


@contextlib.contextmanager
def base_context(context: Path) -> Iterator[Path]:
    """The base's folder as it is, or for the CPU base a copy with the locked layers beside
    its Dockerfile (a build context holds only its own folder)."""
    if context != CPU_BASE_DIR:
        yield context
        return
    with tempfile.TemporaryDirectory() as scratch:
        prepared = Path(scratch)
        shutil.copy2(context / "Dockerfile", prepared / "Dockerfile")
        for name in CPU_BASE_LOCKS:
            shutil.copy2(DEPS_DIR / name, prepared / name)
        yield prepared


def base_argument(base_image: str | None) -> list[str]:
    """The Dockerfile's base: one made here, or vLLM's CUDA image of the pinned release."""
    return ["--build-arg", f"BASE_IMAGE={base_image or pins.VLLM_IMAGE}"]


def build_image(client: str, tag: str, base_image: str | None = None) -> float:
    args = base_argument(base_image)
    return docker_build(client, REPO_ROOT, tag, *args, "--target", "serving")


def build_training_image(client: str, tag: str, base_image: str | None = None) -> float:
    """The Dockerfile's training target; it installs speculators, so it gets the pip settings."""
    args = base_argument(base_image)
    with pip_secrets() as secrets:
        return docker_build(client, REPO_ROOT, tag, *args, *secrets, "--target", "training")


def image_size_mb(client: str, tag: str) -> float:
    argv = [client, "image", "inspect", "--format", "{{.Size}}", tag]
    return int(subprocess.run(argv, capture_output=True, text=True).stdout.strip()) / 2**20


# target -> (the base made here and its folder, or None for vLLM's image; serving tag;
# training tag)
BASES: dict[str, tuple[tuple[str, Path] | None, str, str]] = {
    "cpu": ((CPU_BASE_IMAGE, CPU_BASE_DIR), CPU_IMAGE, CPU_TRAINING_IMAGE),
    "gpu": (None, GPU_IMAGE, GPU_TRAINING_IMAGE),
    "standin": ((STANDIN_BASE_IMAGE, STANDIN_BASE_DIR), STANDIN_IMAGE, STANDIN_TRAINING_IMAGE),
}


def build(target: str, tag: str | None = None) -> str:
    """Build `target` (cpu: the CPU base, then the serving image on it; gpu: the serving
    image on vLLM's CUDA image; standin: the GPU base's stand-in, then the serving image on
    it; training-*: the training image on each) and print the times and size; returns the
    image's tag."""
    client = ensure_engine()
    training = target.startswith("training-")
    made_base, serving_tag, training_tag = BASES[target.removeprefix("training-")]
    base = None
    if made_base is not None:
        base, context = made_base
        base_seconds = build_base(client, context, base)
        print(f"{base}: built in {base_seconds:.0f} s", flush=True)
    if training:
        tag = tag or training_tag
        seconds = build_training_image(client, tag, base)
    else:
        tag = tag or serving_tag
        seconds = build_image(client, tag, base)
    print(f"{tag}: built in {seconds:.0f} s, {image_size_mb(client, tag):,.0f} MB", flush=True)
    return tag
