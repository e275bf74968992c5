"""The engine under the container against the release it maintains P-EAGLE on
(serving/preflight/vllm_release.py): at the image build, which runs the file alone, and at
start-up, before any weights load. Another vLLM is given to Python the way pip installs one: a
distribution's metadata first on the path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from deps import pins
from harness.locations import REPO_ROOT
from serving.preflight import vllm_release
from tests.support.preflight import PEAGLE, assert_fails, assert_passes, assert_warns, run_check

RELEASE_FILE = REPO_ROOT / "serving" / "preflight" / "vllm_release.py"


def installed_as(tmp_path: Path, version: str) -> str:
    """A folder that, first on PYTHONPATH, makes importlib.metadata see vLLM `version`."""
    metadata = tmp_path / "site" / f"vllm-{version}.dist-info"
    metadata.mkdir(parents=True)
    (metadata / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n")
    return str(metadata.parent)


def test_the_release_maintained_is_the_one_the_set_up_pins() -> None:
    assert vllm_release.MAINTAINED == pins.VLLM_VERSION
    assert vllm_release.BASE == pins.VLLM_IMAGE


@pytest.mark.parametrize(
    ("version", "runs"),
    [("0.15.1", False), ("0.16.0", True), ("0.32.0+cpu", True), ("0.33.0", True),
     ("0.34.0", False), ("0.34.1rc1", False), ("1.0.0", False)],
)  # fmt: skip
def test_which_releases_run_p_eagle(version, runs) -> None:
    assert vllm_release.runs_p_eagle(version) is runs


def build(tmp_path: Path, version: str) -> subprocess.CompletedProcess:
    """The image build's step: the file alone, run by a Python whose only vLLM is `version`
    (-S: none of this venv's packages)."""
    return subprocess.run(
        [sys.executable, "-S", str(RELEASE_FILE)],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": installed_as(tmp_path, version)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_gpu_image_built_on_vllm_034_fails_at_its_first_step_with_one_sentence(tmp_path):
    finished = build(tmp_path, "0.34.0")
    assert finished.returncode == 1
    message = finished.stderr.strip()
    assert message.count("\n") == 0
    assert "the base image (BASE_IMAGE) holds vLLM 0.34.0" in message
    assert "vLLM removed P-EAGLE in 0.34" in message
    assert "Build on vllm/vllm-openai:v0.32.0, the default BASE_IMAGE" in message


def test_a_base_with_a_release_that_runs_p_eagle_unpatched_is_refused_too(tmp_path):
    finished = build(tmp_path, "0.33.0")
    assert finished.returncode == 1
    assert "holds vLLM 0.33.0" in finished.stderr
    assert "its patches (vllm_patches/) are written for 0.32.0 alone" in finished.stderr


def test_the_maintained_release_builds(tmp_path):
    finished = build(tmp_path, "0.32.0")
    assert finished.returncode == 0, finished.stderr
    assert "0.32.0, the one this image maintains P-EAGLE on" in finished.stdout


def test_the_dockerfile_checks_the_base_before_any_other_step() -> None:
    """Both stages built on the base (training, serving) run the check before their first
    install (the training stage's deps, the serving stage's apt-get)."""
    text = (REPO_ROOT / "Dockerfile").read_text()
    for stage in text.split("\nFROM ")[1:]:
        steps = [line for line in stage.splitlines() if line.startswith("RUN ")]
        assert steps[0] == "RUN python3 /tmp/vllm_release.py && rm /tmp/vllm_release.py", stage[:80]


def test_a_start_on_vllm_034_with_parallel_drafting_stops_before_the_engine(demo_pair, tmp_path):
    result = run_check(demo_pair, PEAGLE, PYTHONPATH=installed_as(tmp_path, "0.34.0"))
    assert_fails(
        result,
        'SM_VLLM_SPECULATIVE_CONFIG asks for "parallel_drafting" (P-EAGLE)',
        "the vLLM here is 0.34.0: vLLM removed P-EAGLE in 0.34",
        'leave "parallel_drafting" out',
    )


def test_a_start_on_another_release_that_drafts_singly_is_warned_not_stopped(demo_pair, tmp_path):
    spec = {"method": "eagle3", "num_speculative_tokens": 3}
    result = run_check(demo_pair, spec, PYTHONPATH=installed_as(tmp_path, "0.34.0"))
    assert_warns(result, "the vLLM here is 0.34.0, not 0.32.0", "not in this engine")


def test_the_maintained_release_starts_without_a_word(demo_pair) -> None:
    result = run_check(demo_pair)
    assert_passes(result)
    assert "the vLLM here" not in result.stdout + result.stderr
