"""/dev/shm against what vLLM's executor will ask of it. The real small /dev/shm (Docker's
64 MiB) is tests/image's: `docker run --shm-size 64m IMAGE serve`."""

from __future__ import annotations

from pathlib import Path

from serving.preflight.shared_memory import check_shared_memory, required_mib, worker_count
from serving.settings import load_settings


def settings(tmp_path: Path, **env: str):
    (tmp_path / "model").mkdir(exist_ok=True)
    (tmp_path / "model" / "config.json").write_text("{}")
    return load_settings({"OPT_ML_ROOT": str(tmp_path), **env})


def test_workers_come_from_the_flags_or_the_gpu_count(tmp_path: Path):
    assert worker_count(settings(tmp_path)) == 1
    assert worker_count(settings(tmp_path, SM_NUM_GPUS="4")) == 4
    assert worker_count(settings(tmp_path, SM_VLLM_TENSOR_PARALLEL_SIZE="2")) == 2
    both = settings(tmp_path, SM_VLLM_TENSOR_PARALLEL_SIZE="2", SM_VLLM_PIPELINE_PARALLEL_SIZE="2")
    assert worker_count(both) == 4


def test_the_largest_queue_sets_the_need():
    assert required_mib({}) == 256  # ten 24 MiB response chunks, and headroom
    assert required_mib({"VLLM_MQ_MAX_CHUNK_BYTES_MB": "64"}) == 656


def test_one_gpu_needs_no_shared_memory(tmp_path: Path):
    errors: list[str] = []
    check_shared_memory(settings(tmp_path), {}, errors, tmp_path / "absent", cpu_build=False)
    assert errors == []


def test_several_gpus_without_shared_memory_are_told_the_fix(tmp_path: Path):
    errors: list[str] = []
    many = settings(tmp_path, SM_NUM_GPUS="2")
    check_shared_memory(many, {}, errors, tmp_path / "absent", cpu_build=False)
    (error,) = errors
    assert "2 GPU workers" in error and "--shm-size" in error and "SM_NUM_GPUS=1" in error


def test_the_cpu_build_with_enough_room_passes(tmp_path: Path):
    errors: list[str] = []
    check_shared_memory(settings(tmp_path), {}, errors, Path("/dev/shm"), cpu_build=True)
    assert errors == []
