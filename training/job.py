"""One training job, start to end: captured conversations in, a P-EAGLE head for the target out.

1. Rows: each assistant turn of the train channel's conversations (and the replay channel's,
   when given), tokenized with the target's chat template (rows.py); a stable share of each
   channel's conversations is held out.
2. speculators prepare-data packs them; hidden_states.py writes the target's hidden states.
3. speculators train --speculator-type peagle, saving to /opt/ml/checkpoints (a spot job that
   starts again resumes from there).
4. choice.py writes the checkpoints worth trying as heads, checks them with the container's
   preflight, measures them with vLLM on each channel's held-out prompts beside the start
   head, and the one it chooses goes to /opt/ml/model.
5. A report next to the head, and the figures as log lines for MetricDefinitions.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from training import choice, cpu_shims, hidden_states, precision, regenerate, rows, start_head
from training.chat_render import serving_tokenizer
from training.contract import (
    HEAD_CHANNEL,
    HEAD_CONFIG,
    REPLAY_CHANNEL,
    TARGET_CHANNEL,
    TRAIN_CHANNEL,
    ContractError,
    Hyperparameters,
    Layout,
)
from training.steps import log, metric, run_step

# Where the head's verifier is on an endpoint: the target's mount in the serving container.
SERVED_TARGET = "/opt/ml/model"
REPORT_FILE = "training-report.json"


def require_target(layout: Layout) -> Path:
    target = layout.channel(TARGET_CHANNEL)
    if not (target / "config.json").is_file():
        raise ContractError(
            f"the target channel ({target}) has no config.json; give it the Hugging Face "
            "checkpoint the head will draft for (the folder deploy uploads as model/)."
        )
    return target


def prepare_data(target: Path, rows_file: Path, data_dir: Path, max_length: int) -> None:
    run_step(
        [
            sys.executable, "-m", "speculators", "prepare-data",
            "--model", str(target),
            "--data", str(rows_file),
            "--output", str(data_dir),
            "--seq-length", str(max_length),
            "--num-preprocessing-workers", "1",
            # The token frequencies a draft vocabulary (draft_vocab_size) is chosen from.
            "--no-skip-token-freq",
            "--overwrite",
        ],
        "prepare-data",
    )  # fmt: skip


def train_argv(
    target: Path,
    aux_ids: list[int],
    data_dir: Path,
    save_dir: Path,
    start_from: Path | None,
    hp: Hyperparameters,
) -> list[str]:
    # P-EAGLE learns K parallel depths; EAGLE-3 is unrolled over K steps of its own drafts.
    depth_flag = "--num-depths" if hp.speculator_type == "peagle" else "--ttt-steps"
    argv = [
        sys.executable, "-m", "training.speculators_train",
        "--speculator-type", hp.speculator_type,
        "--verifier-name-or-path", str(target),
        "--data-path", str(data_dir),
        "--save-path", str(save_dir),
        "--epochs", str(hp.epochs),
        "--lr", str(hp.learning_rate),
        depth_flag, str(hp.num_speculative_tokens),
        "--total-seq-len", str(hp.max_length),
        "--seed", str(hp.seed),
        "--loss-fn", hp.loss,
        # The same layers hidden_states.py wrote (speculators' default fails below 8 layers).
        "--target-layer-ids", *[str(i) for i in aux_ids],
        # speculators' autocast dtype, and the dtype the hidden states are read in.
        "--hidden-states-dtype", precision.resolve(hp.precision),
        "--checkpoint-freq", f"{1 / hp.checkpoints_per_epoch:.6g}",
    ]  # fmt: skip
    if hp.draft_vocab_size:
        argv += ["--draft-vocab-size", str(hp.draft_vocab_size)]
    if hp.embeddings == "target":
        argv += ["--no-embed-requires-grad"]
    if start_from is not None:
        argv += ["--from-pretrained", str(start_from)]
    else:
        argv += [
            "--draft-arch", "llama",
            "--num-layers", str(hp.num_layers),
            "--full-attention-indices", *[str(i) for i in range(hp.num_layers)],
            "--no-norm-before-residual",
        ]  # fmt: skip
    if cpu_shims.needed():
        argv += cpu_shims.TRAIN_FLAGS
    return argv


@dataclass(frozen=True)
class Report:
    train_rows: int
    held_out_conversations: int  # of the train channel
    replay_conversations: int  # in the replay channel, held out or not
    num_speculative_tokens: int
    epochs: int
    keep_start_head: float
    seconds: float
    validation: dict[str, Any]
    held_out: dict[str, Any] | None  # the head written, on the train channel's prompts
    replay: dict[str, Any] | None  # the head written, on the replay channel's prompts
    start_head: dict[str, Any] | None  # the start head on each channel's prompts
    # The replay acceptance the head had to keep, and whether it did (None: no guard).
    replay_guard: dict[str, Any] | None
    checkpoint: str  # the epoch written
    # Each epoch tried: its held-out acceptance length on each channel's prompts.
    tried: dict[str, dict[str, float | None]]


def channel_split(layout: Layout, name: str, hp: Hyperparameters) -> rows.Split:
    """A channel's conversations to learn from and to hold out; none for an absent channel."""
    folder = layout.channel(name)
    if name != TRAIN_CHANNEL and not folder.is_dir():
        return rows.Split([], [])
    return rows.split(folder, hp.held_out_fraction, hp.seed)


def run(layout: Layout, hp: Hyperparameters) -> Report:
    started = time.monotonic()
    target = require_target(layout)
    channel_head = layout.channel(HEAD_CHANNEL)
    start_from = channel_head if (channel_head / HEAD_CONFIG).is_file() else None
    if hp.keep_start_head and start_from is None:
        raise ContractError(
            f"hyperparameter keep_start_head={hp.keep_start_head:g} keeps a share of the head "
            f"the job starts from, and the {HEAD_CHANNEL} channel has none; give the channel "
            "that head, or leave keep_start_head out."
        )
    train_dir = layout.channel(TRAIN_CHANNEL)
    split = channel_split(layout, TRAIN_CHANNEL, hp)
    replay = channel_split(layout, REPLAY_CHANNEL, hp)
    work = layout.work_dir
    shutil.rmtree(work, ignore_errors=True)  # scratch: a restarted job prepares it again
    target_config = json.loads((target / "config.json").read_text())
    aux_ids = hidden_states.aux_layer_ids(int(target_config["num_hidden_layers"]))
    if start_from is not None:
        aux_ids = start_head.aux_layer_ids(start_from) or aux_ids
        start_from = start_head.prepare(
            start_from, target, hp.num_speculative_tokens, work / "start_head"
        )
        log(f"starting from the head in the eagle channel, as {start_from}")
    if not split.train:
        raise rows.no_rows(train_dir)
    learn_from = split.train + replay.train
    if hp.regenerate_max_tokens:
        answered = regenerate.answers(
            target, learn_from, work / "regenerate", hp.regenerate_max_tokens, hp.max_length
        )
        train_rows = [row for _, row in answered]
    else:
        train_rows = rows.tokenized(serving_tokenizer(target), learn_from, hp.max_length)
    if not train_rows:
        raise rows.no_rows(train_dir)
    log(
        f"{len(train_rows)} training rows; held out: {len(split.held_out)} conversations of "
        f"the train channel, {len(replay.held_out)} of the replay channel"
    )
    data_dir = work / "data"
    prepare_data(target, rows.write_rows(train_rows, work / "rows.jsonl"), data_dir, hp.max_length)
    written = hidden_states.extract(target, data_dir, data_dir / "hidden_states", aux_ids)
    log(f"hidden states for {written} rows")
    save_dir = layout.checkpoints / "speculators"
    run_step(train_argv(target, aux_ids, data_dir, save_dir, start_from, hp), "train")

    prompt_sets = {
        TRAIN_CHANNEL: choice.held_out_prompts(split.held_out, hp.held_out_prompts),
        REPLAY_CHANNEL: choice.held_out_prompts(replay.held_out, hp.held_out_prompts),
    }
    verifier = target_config.get("_name_or_path") or SERVED_TARGET
    start = channel_head if start_from is not None else None
    decision = choice.decide(target, start, start_from, save_dir, prompt_sets, verifier, hp, work)
    chosen = decision.chosen
    choice.copy_head(chosen.head, layout.model_dir)
    report = report_of(
        decision, len(train_rows), split, replay, prompt_sets, hp, time.monotonic() - started
    )
    (layout.model_dir / REPORT_FILE).write_text(json.dumps(asdict(report), indent=2) + "\n")
    publish_metrics(chosen)
    return report


def report_of(
    decision: choice.Decision,
    train_rows: int,
    split: rows.Split,
    replay: rows.Split,
    prompt_sets: dict[str, choice.Prompts],
    hp: Hyperparameters,
    seconds: float,
) -> Report:
    """What the job did and what it chose, as report.json records it."""
    return Report(
        train_rows=train_rows,
        held_out_conversations=len(split.held_out),
        replay_conversations=len(replay.train) + len(replay.held_out),
        num_speculative_tokens=hp.num_speculative_tokens,
        epochs=hp.epochs,
        keep_start_head=hp.keep_start_head,
        seconds=round(seconds, 1),
        validation=decision.chosen.validation,
        held_out=decision.chosen.measured.get(TRAIN_CHANNEL),
        replay=decision.chosen.measured.get(REPLAY_CHANNEL),
        start_head=decision.start or None,
        replay_guard=(
            None
            if decision.guard.floor is None
            else {
                "max_loss": decision.guard.max_loss,
                "floor": decision.guard.floor,
                "met": decision.kept,
            }
        ),
        checkpoint=decision.chosen.checkpoint.name,
        tried={
            c.checkpoint.name: {
                name: choice.acceptance_of(c.measured, name) for name in prompt_sets
            }
            for c in decision.tried
        },
    )


def publish_metrics(chosen: choice.Candidate) -> None:
    """The chosen head's figures as the training job's metrics (SageMaker's regexes read them)."""
    for name, value in chosen.validation.items():
        if isinstance(value, int | float):
            metric(f"validation_{name}", value)
    for name, channel in (("held_out", TRAIN_CHANNEL), ("replay", REPLAY_CHANNEL)):
        figure = choice.acceptance_of(chosen.measured, channel)
        if figure is not None:
            metric(f"{name}_acceptance_length", figure)
