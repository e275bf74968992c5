"""The GPU image, as `make image` builds it, on the stand-in for vLLM's CUDA image (PyPI's
CUDA wheel of vLLM 0.32.0 and its torch; docker/gpu-standin-base), on a machine with no
GPU: everything up to the GPU itself. `make image-standin-test` runs these.

The image carries the CUDA build with our patches applied to it; the front imports and
starts its checks; `check` judges model data sources (the demo pair, and the real-shaped
public pairs) and warns that there is no GPU; `serve` stops at once with one sentence that
says so and what to do, and no stack.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from model_data_sources import public_shapes
from serving import exit_codes
from tests.support.containers import DEMO_ROOT, PEAGLE_CONFIG
from tests.support.image_runs import image_json, run_image
from vllm_patches import patches, state

# tool-call parser, reasoning parser (None: none), per public pair
PARSERS = {
    "qwen3-coder-30b-a3b-fp8": ("qwen3_coder", None),
    "gpt-oss-20b": ("openai", "openai_gptoss"),
    "gemma-4-31b-it": ("gemma4", "gemma4"),
}


SOURCES = "additional-model-data-sources"


def mounted(root: Path, config: dict) -> tuple[str, ...]:
    return (
        "--volume", f"{root / 'model'}:/opt/ml/model:ro",
        "--volume", f"{root / SOURCES}:/opt/ml/{SOURCES}:ro",
        "--env", f"SM_VLLM_SPECULATIVE_CONFIG={json.dumps(config)}",
    )  # fmt: skip


def test_the_image_runs_vllms_cuda_build_with_our_fixes(docker, image):
    paths = sorted({patch.path for patch in patches()})
    vllm_version, torch_version, cuda, texts = image_json(
        docker, image,
        "import importlib.metadata as m, json, pathlib, sys, torch, vllm; "
        "root = pathlib.Path(vllm.__file__).parent; "
        "print(json.dumps([m.version('vllm'), torch.__version__, torch.version.cuda, "
        "{path: (root / path).read_text() for path in sys.argv[1:]}]))",
        *paths,
    )  # fmt: skip
    assert vllm_version == "0.32.0" and torch_version.startswith("2.13.0") and cuda
    assert "+cpu" not in torch_version
    states = {patch.name: state(patch, texts[patch.path]) for patch in patches()}
    assert set(states.values()) == {"applied"}, states


def test_the_image_holds_the_front_only_and_records_its_cuda(docker, image):
    found = run_image(
        docker, image, "python3", "-c",
        "import importlib.util as u, os; import serving.server; "
        "print([bool(u.find_spec(m)) for m in ('bench', 'model_data_sources', 'gpu_check')], "
        "os.environ['SERVING_CUDA_VERSION'])",
    )  # fmt: skip
    assert found.returncode == 0, found.stderr[-2000:]
    assert found.stdout.strip() == "[False, False, False] 13.0.3"


def test_check_judges_the_demo_pair_without_a_gpu(docker, image):
    checked = run_image(docker, image, "check", options=mounted(DEMO_ROOT, PEAGLE_CONFIG))
    output = checked.stdout + checked.stderr
    assert checked.returncode == 0, output
    assert "No NVIDIA GPU is visible here" in output and "`serve` needs a GPU" in output
    assert "speculation: method=eagle3 p-eagle=on" in output
    assert "Traceback" not in output


def test_serve_without_a_gpu_stops_at_once_with_the_fix(docker, image):
    began = time.monotonic()
    served = run_image(docker, image, "serve", options=mounted(DEMO_ROOT, PEAGLE_CONFIG))
    output = served.stdout + served.stderr
    assert served.returncode == exit_codes.BAD_CONFIG, output
    assert time.monotonic() - began < 60
    assert "No NVIDIA GPU is visible to this container" in output
    assert "docker run --gpus all" in output
    assert "Traceback" not in output


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_check_judges_a_real_shaped_public_pair(docker, image, name, tmp_path):
    (folder,) = [f for f in public_shapes.write(tmp_path) if f.name == name]
    config = json.loads((folder / "speculative-config.json").read_text())
    checked = run_image(docker, image, "check", options=mounted(folder, config))
    output = checked.stdout + checked.stderr
    assert checked.returncode == 0, output
    tool_parser, reasoning_parser = PARSERS[name]
    assert f"tool calls parsed by {tool_parser}:" in output
    if reasoning_parser:
        assert f"reasoning parsed by {reasoning_parser}" in output
    assert "K=7" in output and "No NVIDIA GPU is visible here" in output


def test_check_of_a_public_pair_with_a_wrong_head_names_the_tensor(docker, image, tmp_path):
    (folder,) = [f for f in public_shapes.write(tmp_path) if f.name == "gpt-oss-20b"]
    head = folder / "additional-model-data-sources" / public_shapes.CHANNEL
    tensors = next(p for p in public_shapes.pairs() if p["name"] == "gpt-oss-20b")["head_tensors"]
    tensors = {**tensors, "fc.weight": ["BF16", [2880, 5760]]}  # two aux layers, not three
    public_shapes.header_only_safetensors(head / "model.safetensors", tensors)
    config = json.loads((folder / "speculative-config.json").read_text())
    checked = run_image(docker, image, "check", options=mounted(folder, config))
    output = checked.stdout + checked.stderr
    assert checked.returncode == exit_codes.BAD_CONFIG, output
    assert "fc.weight" in output and "Traceback" not in output


def test_the_training_image_has_the_trainer_on_the_cuda_build(docker, training_image):
    script = (
        "import importlib.metadata as m, speculators.train.cli, training.job, torch; "
        "print(m.version('vllm'), torch.version.cuda is not None)"
    )
    options = ("--entrypoint", "python3")
    found = run_image(docker, training_image, "-c", script, options=options)
    assert found.returncode == 0, found.stderr[-2000:]
    assert found.stdout.split() == ["0.32.0", "True"]
