"""A head in the `eagle` channel is where the job starts: a head in vLLM's native layout (as
this project, and heads converted for vLLM, store them) is rewritten in speculators' P-EAGLE
format without changing what it drafts, and a head that cannot be continued is refused with
the reason before any work."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file

from harness.locations import QUICK_DEMO_ROOT
from serving import paths
from tests.support.training_jobs import code_chats, graphed_metrics, job_tree
from tests.training.test_training_job import train
from training import choice, start_head

# vLLM drafts with the heads these tests write.
pytestmark = pytest.mark.engine

K = 4


@pytest.fixture(scope="module")
def continued(tmp_path_factory):
    """The job continuing the quick pair's head (vLLM's native layout) in the eagle channel,
    with half of it kept and a replay channel: its tree and its run, shared by the tests that
    read them (each vLLM start costs about 35 s)."""
    hyperparameters = {
        "epochs": "1",
        "num_speculative_tokens": str(K),
        "learning_rate": "0.0001",
        "keep_start_head": "0.5",
        "held_out_fraction": "0.2",
        "held_out_prompts": "8",
    }
    chats = code_chats(96)
    root = job_tree(tmp_path_factory.mktemp("continued") / "job", chats[:48], hyperparameters)
    data = root / "input" / "data"
    shutil.copytree(paths.channel_dir(QUICK_DEMO_ROOT), data / "eagle")
    (data / "replay").mkdir()
    lines = "".join(json.dumps(chat) + "\n" for chat in chats[48:])
    (data / "replay" / "earlier.jsonl").write_text(lines)
    return root, train(root)


def test_a_vllm_native_head_drafts_the_same_once_rewritten_for_speculators(
    continued, tmp_path
) -> None:
    target, head = paths.model_dir(QUICK_DEMO_ROOT), paths.channel_dir(QUICK_DEMO_ROOT)
    assert not start_head.is_speculators_format(start_head.read_config(head))

    rewritten = start_head.prepare(head, target, K, tmp_path / "start")

    config = json.loads((rewritten / "config.json").read_text())
    assert config["speculators_model_type"] == "peagle"
    assert config["mask_token_id"] == start_head.read_config(head)["ptd_token_id"]
    assert config["eagle_aux_hidden_state_layer_ids"] == [1, 2, 3]
    # vLLM drafts exactly the same tokens, and accepts exactly as many, with either file: the
    # job measured the native head on its held-out prompts, this measures the rewritten one.
    root, finished = continued
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    before = json.loads((root / "model" / "training-report.json").read_text())["start_head"]
    held_out = root / "output" / "work" / "held_out" / "train.jsonl"
    prompts = [json.loads(line) for line in held_out.read_text().splitlines()]
    after = choice.measure_acceptance(target, rewritten, K, {"train": prompts}, tmp_path)
    assert before["train"]["drafts"] > 0 and before["train"]["mean_acceptance_length"] > 2
    assert after["train"] == before["train"]
    # A head already in speculators' format is passed on as it is.
    assert start_head.prepare(rewritten, target, K, tmp_path / "again") == rewritten


def test_an_eagle3_head_without_a_mask_token_is_refused_with_the_reason(tmp_path) -> None:
    root = job_tree(tmp_path / "job", code_chats(8), {"num_speculative_tokens": str(K)})
    eagle = root / "input" / "data" / "eagle"
    shutil.copytree(paths.channel_dir(QUICK_DEMO_ROOT), eagle)
    config = json.loads((eagle / "config.json").read_text())
    del config["ptd_token_id"]
    (eagle / "config.json").write_text(json.dumps(config))

    finished = train(root)

    assert finished.returncode == 1
    failure = (root / "output" / "failure").read_text()
    assert "names no mask token" in failure and "EAGLE-3 head, not a P-EAGLE one" in failure
    assert not (root / "output" / "work" / "data").exists()  # refused before any work


def test_keeping_a_share_of_the_start_head_needs_one(tmp_path) -> None:
    root = job_tree(tmp_path / "job", code_chats(8), {"keep_start_head": "0.5"})

    finished = train(root)

    assert finished.returncode == 1
    assert (
        (root / "output" / "failure")
        .read_text()
        .startswith(
            "hyperparameter keep_start_head=0.5 keeps a share of the head the job starts from, "
            "and the eagle channel has none"
        )
    )
    assert not (root / "output" / "work").exists()  # refused before any work


def test_the_job_continues_the_head_keeps_the_share_asked_for_and_guards_replay(
    continued,
) -> None:
    """The job continues the head in the eagle channel; with keep_start_head the head it
    writes is that share of the start head and the rest of the trained one. vLLM measures the
    start head and the written one on each channel's held-out prompts, and the replay
    channel's figure is checked against the start head's. (Regenerated answers: the training
    image test.)"""
    root, finished = continued

    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    assert "starting from the head in the eagle channel" in finished.stdout
    report = json.loads((root / "model" / "training-report.json").read_text())
    # SageMaker graphs the replay channel's acceptance too, read from the log.
    assert graphed_metrics(finished.stdout)["replay:acceptance_length"] == pytest.approx(
        report["replay"]["mean_acceptance_length"], rel=1e-5
    )
    assert report["keep_start_head"] == 0.5
    assert report["replay_conversations"] == 48
    # Every tensor that training moved is halfway between the start head and the trained one.
    written = load_file(str(root / "model" / "model.safetensors"))
    trained = load_file(
        str(root / "checkpoints" / "speculators" / report["checkpoint"] / "model.safetensors")
    )
    start = load_file(str(root / "output" / "work" / "start_head" / "model.safetensors"))
    moved = [name for name in trained if not torch.equal(trained[name], start[name])]
    assert "fc.weight" in moved and "mask_hidden" in moved
    # The start head drafted with the target's embeddings; the job kept them frozen
    # (training/peagle_embeddings.py) and the written head leaves them out: vLLM shares the
    # target's.
    embeddings = trained["embed_tokens.weight"]
    assert torch.equal(embeddings, start["embed_tokens.weight"].to(embeddings.dtype))
    assert "embed_tokens.weight" not in written
    for name in trained:
        if name == "embed_tokens.weight":
            continue
        halfway = (start[name].float() + trained[name].float()) / 2
        torch.testing.assert_close(written[name], halfway.to(trained[name].dtype))
    # vLLM drafted with the start head and the written one on the same held-out prompts of
    # each channel, and accepts at least nine tenths as much from the written one.
    for channel, written_figures in (("train", report["held_out"]), ("replay", report["replay"])):
        before = report["start_head"][channel]
        assert written_figures["prompts"] == before["prompts"] > 0
        assert before["drafts"] > 0 and written_figures["drafts"] > 0
        assert written_figures["mean_acceptance_length"] >= 0.9 * before["mean_acceptance_length"]
        assert (
            report["tried"][report["checkpoint"]][channel]
            == (written_figures["mean_acceptance_length"])
        )
    # The guard: the replay figure it had to keep, and whether the written head kept it.
    guard, replay = report["replay_guard"], report["replay"]["mean_acceptance_length"]
    floor = 0.95 * report["start_head"]["replay"]["mean_acceptance_length"]
    assert guard["floor"] == pytest.approx(floor) and guard["met"] == (replay >= guard["floor"])
    assert f"peagle_replay_acceptance_length={replay:.6g}" in finished.stdout
