"""The training image as SageMaker Training runs it (`make image-test`): `docker run IMAGE
train` with the job's tree at /opt/ml, no network. The channels and hyperparameters go in, the
head (or the reason for a failure) comes out, and a second start resumes from the checkpoints.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.locations import QUICK_DEMO_ROOT
from image_build.docker_daemon import ensure_engine
from serving import paths
from tests.support.training_jobs import code_chats, job_tree, write_hyperparameters


@pytest.fixture(scope="module")
def docker() -> str:
    return ensure_engine()


def run_job(docker: str, image: str, root: Path) -> subprocess.CompletedProcess:
    argv = [
        docker, "run", "--rm", "--network", "none", "--shm-size", "1g",
        "--volume", f"{root}:/opt/ml", image, "train",
    ]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=900)


def test_the_training_image_writes_a_head_and_resumes(docker, training_image, tmp_path) -> None:
    """The first start continues the quick head (the eagle channel, in vLLM's layout) on
    answers the target gives again (a vLLM server on the container's loopback)."""
    hyperparameters = {
        "epochs": "1",
        "num_speculative_tokens": "4",
        "held_out_prompts": "4",
        "regenerate_max_tokens": "32",
    }
    root = job_tree(tmp_path, code_chats(48), hyperparameters, True)
    shutil.copytree(paths.channel_dir(QUICK_DEMO_ROOT), root / "input" / "data" / "eagle")

    first = run_job(docker, training_image, root)

    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert "starting from the head in the eagle channel" in first.stdout
    assert "regenerate-responses: " in first.stdout
    config = json.loads((root / "model" / "config.json").read_text())
    assert config["speculators_model_type"] == "peagle"
    assert (root / "model" / "model.safetensors").stat().st_size > 0
    assert "peagle_validation_loss_epoch=" in first.stdout
    # The image's own vLLM drafted with the head (no network: everything it needs is inside).
    report = json.loads((root / "model" / "training-report.json").read_text())
    assert report["held_out"]["drafts"] > 0

    write_hyperparameters(
        root, {"epochs": "2", "num_speculative_tokens": "4", "held_out_prompts": "0"}
    )
    second = run_job(docker, training_image, root)

    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert "Resuming training on epoch 1" in second.stdout + second.stderr
    # It trained only what was left: one checkpoint per epoch, none twice.
    saved = root / "checkpoints" / "speculators"
    assert sorted(p.name for p in saved.iterdir() if p.name.isdigit()) == list("01")


def test_the_training_image_says_why_it_failed(docker, training_image, tmp_path) -> None:
    root = job_tree(tmp_path, code_chats(4), {"num_speculative_tokens": "64"}, True)

    finished = run_job(docker, training_image, root)

    assert finished.returncode == 1
    failure = (root / "output" / "failure").read_text()
    assert failure == "hyperparameter num_speculative_tokens='64' is outside 1..32."
