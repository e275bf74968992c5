"""The host's NVIDIA driver against the image's CUDA release, before anything loads. There
is no GPU here: the driver query is faked at its one seam (`read_driver`), and the file it
reads is written as the NVIDIA kernel module writes it."""

from __future__ import annotations

from pathlib import Path

from serving.preflight.cuda_driver import check_cuda_driver, host_driver_version

CUDA_13 = {"SERVING_CUDA_VERSION": "13.0.1"}


def check(environ: dict, driver: tuple[int, ...] | None) -> list[str]:
    errors: list[str] = []
    check_cuda_driver(environ, errors, read_driver=lambda: driver)
    return errors


def test_a_driver_too_old_for_the_image_stops_the_start_naming_both_and_the_fix():
    (error,) = check(CUDA_13, (535, 183, 1))
    assert "CUDA 13.0.1" in error and "580.65.6" in error and "535.183.1" in error
    assert "al2023-ami-sagemaker-inference-gpu-4-1" in error
    assert "vllm/vllm-openai:v0.32.0-cu129" in error


def test_new_enough_drivers_and_hosts_without_one_pass():
    assert check(CUDA_13, (580, 82, 7)) == []
    assert check({"SERVING_CUDA_VERSION": "12.9.1"}, (535, 183, 1)) == []
    assert check(CUDA_13, None) == []  # no NVIDIA driver: a CPU host
    assert check({}, (470, 0)) == []  # the CPU image records no CUDA
    assert check({"SERVING_CUDA_VERSION": ""}, (470, 0)) == []


def test_the_driver_version_is_read_as_the_kernel_module_writes_it(tmp_path: Path):
    version = tmp_path / "version"
    version.write_text(
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build  "
        "(dvs-builder@U16-I3-B03-4-3)  Thu Mar 13 02:33:43 UTC 2025\n"
        "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"
    )
    assert host_driver_version(version) == (570, 133, 20)
    version.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12\n")
    assert host_driver_version(version) == (535, 183, 1)
    assert host_driver_version(tmp_path / "missing") is None


def test_the_image_records_its_cuda_release():
    dockerfile = (Path(__file__).parents[2] / "Dockerfile").read_text()
    assert "SERVING_CUDA_VERSION=${CUDA_VERSION}" in dockerfile
    assert 'cuda-version="${CUDA_VERSION}"' in dockerfile
