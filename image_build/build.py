"""`docker build` of the CPU base and of the serving image, with this machine's pip settings
as secrets when it has any."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

from image_build.base_images import DEBIAN_IMAGE, ensure_base_image
from image_build.engine import EngineError, ensure_engine
from image_build.pip_settings import read_settings, served

REPO_ROOT = Path(__file__).resolve().parents[1]
CPU_BASE_DIR = REPO_ROOT / "docker" / "cpu-base"
CPU_BASE_IMAGE = "sagemaker-vllm-peagle-base:cpu"
CPU_IMAGE = "sagemaker-vllm-peagle:cpu"
GPU_IMAGE = "sagemaker-vllm-peagle:latest"


def docker_build(client: str, context: Path, tag: str, *extra: str) -> float:
    """BuildKit build on the host network (it reaches loopback wheel servers); seconds taken."""
    argv = [client, "build", "--network", "host", "--tag", tag, *extra, str(context)]
    began = time.monotonic()
    result = subprocess.run(argv, env={**os.environ, "DOCKER_BUILDKIT": "1"})
    if result.returncode != 0:
        raise EngineError(f"building {tag} failed (exit {result.returncode}); its output is above.")
    return time.monotonic() - began


def build_cpu_base(client: str, tag: str = CPU_BASE_IMAGE) -> float:
    ensure_base_image(client, DEBIAN_IMAGE)
    with served(read_settings()) as settings, tempfile.TemporaryDirectory() as scratch:
        secrets: list[str] = []
        if settings.pip_conf:
            pip_conf = Path(scratch) / "pip.conf"
            pip_conf.write_text(settings.pip_conf)
            secrets += ["--secret", f"id=pip.conf,src={pip_conf}"]
        if settings.ca_bundle is not None:
            secrets += ["--secret", f"id=ca.pem,src={settings.ca_bundle}"]
        return docker_build(client, CPU_BASE_DIR, tag, *secrets)


def build_image(client: str, tag: str, base_image: str | None = None) -> float:
    args = ["--build-arg", f"BASE_IMAGE={base_image}"] if base_image else []
    return docker_build(client, REPO_ROOT, tag, *args)


def image_size_mb(client: str, tag: str) -> float:
    argv = [client, "image", "inspect", "--format", "{{.Size}}", tag]
    return int(subprocess.run(argv, capture_output=True, text=True).stdout.strip()) / 2**20


def build(target: str, tag: str | None = None) -> str:
    """Build `target` (cpu: the base, then the image on it; gpu: the image on vLLM's CUDA
    image) and print the times and size; returns the image's tag."""
    client = ensure_engine()
    if target == "cpu":
        tag = tag or CPU_IMAGE
        base_seconds = build_cpu_base(client)
        print(f"{CPU_BASE_IMAGE}: built in {base_seconds:.0f} s", flush=True)
        seconds = build_image(client, tag, CPU_BASE_IMAGE)
    else:
        tag = tag or GPU_IMAGE
        seconds = build_image(client, tag)
    print(f"{tag}: built in {seconds:.0f} s, {image_size_mb(client, tag):,.0f} MB", flush=True)
    return tag
