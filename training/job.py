"""One training job, start to end: captured conversations in, a P-EAGLE head for the target out.

1. Rows: each assistant turn, tokenized with the target's chat template (rows.py); a stable
   share of the conversations is held out.
2. speculators prepare-data packs them; hidden_states.py writes the target's hidden states.
3. speculators train --speculator-type peagle, saving to /opt/ml/checkpoints (a spot job that
   starts again resumes from there).
4. The checkpoint with the lowest validation loss, and the last one if it is another, are
   each written as vLLM loads them, with a verifier path that means something on an endpoint,
   keeping a share of the start head when asked (keep_start.py); the container's own
   preflight checks each against the target at the trained K, and vLLM measures each on the
   held-out prompts. The one that drafts best goes to /opt/ml/model.
5. A report next to the head, and the figures as log lines for MetricDefinitions.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from training import cpu_shims, hidden_states, keep_start, regenerate, rows, start_head
from training.contract import (
    HEAD_CHANNEL,
    HEAD_CONFIG,
    HEAD_WEIGHTS,
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
HEAD_FILES = (HEAD_CONFIG, HEAD_WEIGHTS)


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
    argv = [
        sys.executable, "-m", "training.speculators_train",
        "--speculator-type", "peagle",
        "--verifier-name-or-path", str(target),
        "--data-path", str(data_dir),
        "--save-path", str(save_dir),
        "--epochs", str(hp.epochs),
        "--lr", str(hp.learning_rate),
        "--num-depths", str(hp.num_speculative_tokens),
        "--total-seq-len", str(hp.max_length),
        "--seed", str(hp.seed),
        "--loss-fn", hp.loss,
        # The same layers hidden_states.py wrote (speculators' default fails below 8 layers).
        "--target-layer-ids", *[str(i) for i in aux_ids],
    ]  # fmt: skip
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


def checkpoints_to_try(save_dir: Path) -> list[Path]:
    """speculators' checkpoint with the lowest validation loss, and the last one if it is
    another: teacher-forced loss is not acceptance (the held-out check chooses)."""
    epochs = sorted((p for p in save_dir.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    if not epochs:
        raise RuntimeError(f"training wrote no checkpoint under {save_dir}")
    last = epochs[-1].resolve()
    best = save_dir / "checkpoint_best"
    best = best.resolve() if best.exists() else last
    return [best] if best == last else [best, last]


def copy_head(source: Path, destination: Path) -> None:
    destination.mkdir(parents=True, exist_ok=True)
    for name in HEAD_FILES:
        shutil.copy2(source / name, destination / name)


def export_head(checkpoint: Path, model_dir: Path, verifier: str) -> dict[str, Any]:
    """The head as vLLM loads it: config.json (verifier made portable) and the weights."""
    copy_head(checkpoint, model_dir)
    config = json.loads((model_dir / HEAD_CONFIG).read_text())
    config["speculators_config"]["verifier"]["name_or_path"] = verifier
    (model_dir / HEAD_CONFIG).write_text(json.dumps(config, indent=2) + "\n")
    metrics_file = checkpoint / "val_metrics.json"
    return json.loads(metrics_file.read_text()) if metrics_file.is_file() else {}


def held_out_prompts(conversations: list[list[dict[str, Any]]], count: int) -> list[list[dict]]:
    """Each held-out conversation up to its first assistant answer: what a user sent."""
    prompts = []
    for messages in conversations[:count]:
        for turn, message in enumerate(messages):
            if message.get("role") == "assistant" and turn > 0:
                prompts.append(messages[:turn])
                break
    return prompts


def measure_acceptance(
    target: Path, head: Path, k: int, prompts: list[list[dict]], work: Path
) -> dict[str, Any] | None:
    """vLLM drafting with the head on the held-out prompts (training/acceptance.py)."""
    if not prompts:
        log("no held-out conversation with an answer: acceptance not measured")
        return None
    prompts_file = work / "held_out_prompts.jsonl"
    prompts_file.write_text("".join(json.dumps(prompt) + "\n" for prompt in prompts))
    argv = [
        sys.executable, "-m", "training.acceptance", str(target), str(head), str(k),
        str(prompts_file),
    ]  # fmt: skip
    log(f"held-out acceptance: {' '.join(argv)}")
    finished = subprocess.run(argv, check=False, capture_output=True, text=True)
    lines = [line for line in finished.stdout.splitlines() if line.startswith("ACCEPTANCE ")]
    if finished.returncode != 0 or not lines:
        sys.stdout.write(finished.stdout[-4000:] + finished.stderr[-4000:])
        raise RuntimeError(f"vLLM could not serve the trained head (exit {finished.returncode}).")
    return json.loads(lines[-1].removeprefix("ACCEPTANCE "))


def check_head(target: Path, head: Path, k: int) -> None:
    from serving.preflight.pair import speculation_problems

    config = {"method": "eagle3", "num_speculative_tokens": k, "parallel_drafting": True}
    problems = speculation_problems(target, head, config, {})
    if problems:
        raise RuntimeError(
            "the trained head fails the container's preflight: " + " ".join(problems)
        )


@dataclass(frozen=True)
class Report:
    train_rows: int
    held_out_conversations: int
    num_speculative_tokens: int
    epochs: int
    keep_start_head: float
    seconds: float
    validation: dict[str, Any]
    held_out: dict[str, Any] | None
    checkpoint: str  # the epoch written
    # Each epoch tried, and its held-out acceptance length.
    tried: dict[str, float | None]


@dataclass(frozen=True)
class Candidate:
    checkpoint: Path
    head: Path
    validation: dict[str, Any]
    held_out: dict[str, Any] | None

    @property
    def acceptance(self) -> float:
        figure = (self.held_out or {}).get("mean_acceptance_length")
        return -1.0 if figure is None else float(figure)


def try_checkpoint(
    checkpoint: Path,
    target: Path,
    start_from: Path | None,
    verifier: str,
    prompts: list[list[dict]],
    hp: Hyperparameters,
    work: Path,
) -> Candidate:
    """The checkpoint as the head it would be written: exported, mixed with the start head
    when asked, checked by preflight, and measured on the held-out prompts."""
    head = work / "heads" / checkpoint.name
    validation = export_head(checkpoint, head, verifier)
    if start_from is not None and hp.keep_start_head:
        mixed = keep_start.mix(head, start_from, hp.keep_start_head)
        log(f"kept {hp.keep_start_head:g} of the start head in {mixed} tensors of the head")
    check_head(target, head, hp.num_speculative_tokens)
    held_out = measure_acceptance(target, head, hp.num_speculative_tokens, prompts, work)
    return Candidate(checkpoint, head, validation, held_out)


def run(layout: Layout, hp: Hyperparameters) -> Report:
    from transformers import AutoTokenizer

    started = time.monotonic()
    target = require_target(layout)
    start_from = layout.channel(HEAD_CHANNEL)
    start_from = start_from if (start_from / HEAD_CONFIG).is_file() else None
    if hp.keep_start_head and start_from is None:
        raise ContractError(
            f"hyperparameter keep_start_head={hp.keep_start_head:g} keeps a share of the head "
            f"the job starts from, and the {HEAD_CHANNEL} channel has none; give the channel "
            "that head, or leave keep_start_head out."
        )
    train_dir = layout.channel(TRAIN_CHANNEL)
    split = rows.split(train_dir, hp.held_out_fraction, hp.seed)
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
    if hp.regenerate_max_tokens:
        train_rows = regenerate.regenerate(
            target, split.train, work / "regenerate", hp.regenerate_max_tokens, hp.max_length
        )
    else:
        tokenizer = AutoTokenizer.from_pretrained(target)
        train_rows = rows.tokenized(tokenizer, split.train, hp.max_length)
    if not train_rows:
        raise rows.no_rows(train_dir)
    log(f"{len(train_rows)} training rows, {len(split.held_out)} conversations held out")
    data_dir = work / "data"
    prepare_data(target, rows.write_rows(train_rows, work / "rows.jsonl"), data_dir, hp.max_length)
    written = hidden_states.extract(target, data_dir, data_dir / "hidden_states", aux_ids)
    log(f"hidden states for {written} rows")
    save_dir = layout.checkpoints / "speculators"
    run_step(train_argv(target, aux_ids, data_dir, save_dir, start_from, hp), "train")
    verifier = target_config.get("_name_or_path") or SERVED_TARGET
    prompts = held_out_prompts(split.held_out, hp.held_out_prompts)
    tried = [
        try_checkpoint(checkpoint, target, start_from, verifier, prompts, hp, work)
        for checkpoint in checkpoints_to_try(save_dir)[: None if prompts else 1]
    ]
    chosen = max(tried, key=lambda candidate: candidate.acceptance)  # the first of equals
    if len(tried) > 1:
        log(
            "held-out acceptance by epoch: "
            + ", ".join(f"{c.checkpoint.name} {c.acceptance:.3f}" for c in tried)
            + f"; writing epoch {chosen.checkpoint.name}"
        )
    copy_head(chosen.head, layout.model_dir)
    validation, held_out = chosen.validation, chosen.held_out
    report = Report(
        len(train_rows),
        len(split.held_out),
        hp.num_speculative_tokens,
        hp.epochs,
        hp.keep_start_head,
        round(time.monotonic() - started, 1),
        validation,
        held_out,
        chosen.checkpoint.name,
        {c.checkpoint.name: c.held_out and c.held_out["mean_acceptance_length"] for c in tried},
    )
    (layout.model_dir / REPORT_FILE).write_text(json.dumps(asdict(report), indent=2) + "\n")
    for name, value in validation.items():
        if isinstance(value, int | float):
            metric(f"validation_{name}", value)
    if held_out and held_out["mean_acceptance_length"] is not None:
        metric("held_out_acceptance_length", held_out["mean_acceptance_length"])
    return report
