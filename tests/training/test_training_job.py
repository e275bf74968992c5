"""The head trainer as SageMaker Training runs it: channels under /opt/ml/input/data,
hyperparameters.json with string values, the head in /opt/ml/model, the reason for a failure
in /opt/ml/output/failure, and the checkpoint vLLM drafts best with. The real trainer
(speculators 0.9.0) on the quick demo target, in a tree of the test's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.locations import REPO_ROOT
from tests.support.training_jobs import code_chats, graphed_metrics, job_tree
from training.contract import ContractError, Hyperparameters
from training.hidden_states import aux_layer_ids
from training.job import train_argv


def test_hyperparameters_are_read_as_sagemaker_writes_them() -> None:
    parsed = Hyperparameters.parse(
        {
            "epochs": "3",
            "learning_rate": "0.001",
            "seed": 7,
            "loss": " ce ",
            "regenerate_max_tokens": "512",
            "keep_start_head": "0.3",
        }
    )
    assert (parsed.epochs, parsed.learning_rate, parsed.seed) == (3, 0.001, 7)
    assert (parsed.loss, parsed.regenerate_max_tokens) == ("ce", 512)
    assert parsed.keep_start_head == 0.3
    assert parsed.num_speculative_tokens == Hyperparameters().num_speculative_tokens


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"epoch": "3"}, "hyperparameters.json has epoch, which the trainer does not know"),
        ({"epochs": "three"}, "hyperparameter epochs='three' is not a whole number"),
        ({"num_speculative_tokens": "0"}, "num_speculative_tokens='0' is outside 1..32"),
        ({"held_out_fraction": "0.9"}, "held_out_fraction='0.9' is outside 0.01..0.5"),
        ({"loss": "mse"}, "loss='mse' is not one of kl_div, rkl, jsd, ce, tv, nla, lk_hybrid"),
        ({"keep_start_head": "1"}, "keep_start_head='1' is outside 0..0.95"),
    ],
)
def test_bad_hyperparameters_are_named(given, message) -> None:
    with pytest.raises(ContractError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Hyperparameters.parse(given)


def test_auxiliary_layers_are_eagle3s_or_spread_over_a_shallow_target() -> None:
    assert aux_layer_ids(32) == [2, 16, 29]
    assert aux_layer_ids(16) == [2, 8, 13]
    assert aux_layer_ids(4) == [1, 2, 3]  # the quick target: the layers its own head uses


def train(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SM_TRAINING_ROOT": str(root)}
    return subprocess.run(
        [sys.executable, "-m", "training", "train"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.engine  # the job's tree holds the demo pair's target
def test_a_train_channel_without_conversations_fails_with_the_reason(tmp_path) -> None:
    root = job_tree(tmp_path, [], {})
    (root / "input" / "data" / "train" / "train.openai.jsonl").unlink()

    finished = train(root)

    assert finished.returncode == 1
    failure = (root / "output" / "failure").read_text()
    assert "the train channel" in failure and "python -m capture export" in failure
    assert not (root / "model").exists()


def test_a_bad_hyperparameter_fails_before_any_work(tmp_path) -> None:
    root = job_tree(tmp_path, code_chats(4), {"epochs": "0"})

    finished = train(root)

    assert finished.returncode == 1
    assert (root / "output" / "failure").read_text() == (
        "hyperparameter epochs='0' is outside 1..1000."
    )
    assert not (root / "output" / "work").exists()


@pytest.mark.engine  # trains a head, then vLLM drafts with it
def test_the_job_writes_the_head_vllm_drafts_best_with(tmp_path) -> None:
    """A second start resuming from the checkpoints is the image suite's
    (tests/image/test_training_image.py): the same trainer, as SageMaker restarts it."""
    chats = code_chats(160)
    hyperparameters = {"epochs": "2", "num_speculative_tokens": "4", "held_out_prompts": "16"}
    root = job_tree(tmp_path, chats, hyperparameters)

    first = train(root)

    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    head = root / "model"
    config = json.loads((head / "config.json").read_text())
    assert config["speculators_model_type"] == "peagle"
    assert config["speculators_config"]["proposal_methods"][0]["speculative_tokens"] == 4
    assert config["eagle_aux_hidden_state_layer_ids"] == [1, 2, 3]
    # The verifier is named as an endpoint knows it, not by this machine's path.
    assert config["speculators_config"]["verifier"]["name_or_path"] == "/opt/ml/model"
    report = json.loads((head / "training-report.json").read_text())
    assert report["train_rows"] + report["held_out_conversations"] >= len(chats) // 2
    # vLLM drafted with the head on the held-out prompts and accepted some of its drafts.
    held_out = report["held_out"]
    assert held_out["prompts"] == 16 and held_out["drafts"] > 0
    assert held_out["mean_acceptance_length"] > 1.0
    # SageMaker graphs the validation figures and the held-out acceptance from the log.
    graphed = graphed_metrics(first.stdout)
    assert set(graphed) == {
        "validation:loss",
        "validation:full_accuracy",
        "held_out:acceptance_length",
    }
    assert graphed["held_out:acceptance_length"] == pytest.approx(
        held_out["mean_acceptance_length"], rel=1e-5
    )
    # Of the checkpoints tried (the lowest validation loss, and the last), the one vLLM
    # accepted most from is the one written.
    tried = {epoch: figures["train"] for epoch, figures in report["tried"].items()}
    assert tried[report["checkpoint"]] == held_out["mean_acceptance_length"] == max(tried.values())
    # No start head, no replay channel: nothing to guard.
    assert report["start_head"] is report["replay"] is report["replay_guard"] is None
    assert not (root / "output" / "failure").exists()


def test_an_eagle3_job_trains_over_its_k_steps_with_the_draft_vocabulary_asked_for() -> None:
    hp = Hyperparameters.parse(
        {"speculator_type": "eagle3", "num_speculative_tokens": "4", "draft_vocab_size": "256"}
    )
    argv = train_argv(Path("target"), [1, 2, 3], Path("data"), Path("save"), None, hp)
    assert argv[argv.index("--speculator-type") + 1] == "eagle3"
    assert argv[argv.index("--ttt-steps") + 1] == "4" and "--num-depths" not in argv
    assert argv[argv.index("--draft-vocab-size") + 1] == "256"
    assert "--no-embed-requires-grad" not in argv  # embeddings: train, the default


@pytest.mark.engine  # trains a head, then vLLM drafts with it
def test_a_peagle_head_on_the_targets_embeddings_ships_without_them_and_drafts(tmp_path) -> None:
    """embeddings=target: speculators' P-EAGLE would train its own copy regardless
    (training/peagle_embeddings.py); the head written has none, and vLLM drafts with it on
    the target's."""
    from safetensors import safe_open

    hyperparameters = {
        "epochs": "1",
        "num_speculative_tokens": "4",
        "held_out_prompts": "8",
        "embeddings": "target",
        "draft_vocab_size": "512",
    }
    root = job_tree(tmp_path, code_chats(80), hyperparameters)

    job = train(root)

    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    head = root / "model"
    config = json.loads((head / "config.json").read_text())
    assert config["embed_requires_grad"] is False and config["draft_vocab_size"] == 512
    with safe_open(head / "model.safetensors", "pt") as weights:
        names = set(weights.keys())
        assert weights.get_slice("lm_head.weight").get_shape()[0] == 512
    assert "embed_tokens.weight" not in names and {"d2t", "t2d", "mask_hidden"} <= names
    report = json.loads((head / "training-report.json").read_text())
    assert report["held_out"]["mean_acceptance_length"] > 1.0


def test_a_job_trains_in_the_precision_asked_for_and_checkpoints_within_epochs() -> None:
    hp = Hyperparameters.parse({"precision": "float32", "checkpoints_per_epoch": "4"})
    argv = train_argv(Path("target"), [1, 2, 3], Path("data"), Path("save"), None, hp)
    assert argv[argv.index("--hidden-states-dtype") + 1] == "float32"
    assert argv[argv.index("--checkpoint-freq") + 1] == "0.25"
    hp = Hyperparameters.parse({"precision": "bfloat16"})
    argv = train_argv(Path("target"), [1, 2, 3], Path("data"), Path("save"), None, hp)
    assert argv[argv.index("--hidden-states-dtype") + 1] == "bfloat16"
    assert argv[argv.index("--checkpoint-freq") + 1] == "1"
    with pytest.raises(ContractError, match="precision='fp16' is not one of auto, bfloat16"):
        Hyperparameters.parse({"precision": "fp16"})


@pytest.mark.parametrize("capability", ["avx2", None])
def test_auto_precision_is_bfloat16_only_where_the_cpu_computes_in_it(capability) -> None:
    """Where torch may not use AVX512 (ATEN_CPU_CAPABILITY=avx2, as the suite's limited-ISA
    runs set), bfloat16 would be emulated: the job trains in float32 there."""
    probe = "from training import precision; print(precision.resolve('auto'))"
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    if capability:
        env["ATEN_CPU_CAPABILITY"] = capability
    resolved = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO_ROOT, env=env, capture_output=True, text=True
    ).stdout.strip()
    cpu_flags = Path("/proc/cpuinfo").read_text().split()
    native = capability is None and ("avx512_bf16" in cpu_flags or "amx_bf16" in cpu_flags)
    assert resolved == ("bfloat16" if native else "float32")
