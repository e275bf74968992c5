"""A head in the `eagle` channel is where the job starts: a head in vLLM's native layout (as
this project, and heads converted for vLLM, store them) is rewritten in speculators' P-EAGLE
format without changing what it drafts, and a head that cannot be continued is refused with
the reason before any work."""

from __future__ import annotations

import json
import shutil

from harness.paths import QUICK_DEMO_ROOT
from serving import paths
from tests.support.training_jobs import code_chats, job_tree
from tests.training.test_training_job import train
from training import job, start_head

K = 4


def held_out_prompts(count: int) -> list[list[dict]]:
    return [chat["messages"][:1] for chat in code_chats(count)]


def test_a_vllm_native_head_drafts_the_same_once_rewritten_for_speculators(tmp_path) -> None:
    target, head = paths.model_dir(QUICK_DEMO_ROOT), paths.channel_dir(QUICK_DEMO_ROOT)
    assert not start_head.is_speculators_format(start_head.read_config(head))

    rewritten = start_head.prepare(head, target, K, tmp_path / "start")

    config = json.loads((rewritten / "config.json").read_text())
    assert config["speculators_model_type"] == "peagle"
    assert config["mask_token_id"] == start_head.read_config(head)["ptd_token_id"]
    assert config["eagle_aux_hidden_state_layer_ids"] == [1, 2, 3]
    # vLLM drafts exactly the same tokens, and accepts exactly as many, with either file.
    prompts = held_out_prompts(8)
    before = job.measure_acceptance(target, head, K, prompts, tmp_path)
    after = job.measure_acceptance(target, rewritten, K, prompts, tmp_path)
    assert before["drafts"] > 0 and before["mean_acceptance_length"] > 2
    assert after == before
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


def test_the_job_continues_the_head_on_the_targets_own_answers(tmp_path) -> None:
    """The train channel holds people's answers (the corpus's, not the target's); the job has
    the target answer again (regenerate_max_tokens), learns from those rows, and continues
    the head in the eagle channel: what the head knew is kept."""
    hyperparameters = {
        "epochs": "1",
        "num_speculative_tokens": str(K),
        "learning_rate": "0.0001",
        "regenerate_max_tokens": "64",
        "held_out_fraction": "0.2",
        "held_out_prompts": "8",
    }
    root = job_tree(tmp_path / "job", code_chats(48), hyperparameters)
    shutil.copytree(paths.channel_dir(QUICK_DEMO_ROOT), root / "input" / "data" / "eagle")

    finished = train(root)

    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    assert "regenerate-responses: " in finished.stdout
    assert "starting from the head in the eagle channel" in finished.stdout
    regenerated = (root / "output" / "work" / "regenerate" / "regenerated.jsonl").read_text()
    report = json.loads((root / "model" / "training-report.json").read_text())
    assert report["train_rows"] == len(regenerated.splitlines()) > 0
    continued = report["held_out"]
    prompts = [
        json.loads(line)
        for line in (root / "output" / "work" / "held_out_prompts.jsonl").read_text().splitlines()
    ]
    start = job.measure_acceptance(
        paths.model_dir(QUICK_DEMO_ROOT), paths.channel_dir(QUICK_DEMO_ROOT), K, prompts, tmp_path
    )
    assert continued["prompts"] == start["prompts"] == len(prompts) > 0
    assert continued["mean_acceptance_length"] >= 0.9 * start["mean_acceptance_length"]
