"""Which head the job writes.

Teacher-forced validation loss is not acceptance, so the job tries more than one checkpoint:
speculators' checkpoint with the lowest validation loss, and the last one when that is another.
Each is written as the head it would be (config.json with a verifier path that means something
on an endpoint, the weights, and keep_start.py's share of the start head when asked), checked
by the container's own preflight against the target at the trained K, and measured by vLLM on
the held-out prompts of each training set (acceptance.py).

The head written is the one that drafts the train channel's held-out prompts best among those
that keep the replay channel's acceptance within `replay_max_loss` of the start head's: the
new traffic learnt, the old traffic kept. When none keeps it, the one that loses least there
is written, and the report and the log say so.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training import keep_start
from training.chat_render import Chat
from training.contract import (
    HEAD_CONFIG,
    HEAD_WEIGHTS,
    REPLAY_CHANNEL,
    TRAIN_CHANNEL,
    Hyperparameters,
)
from training.held_out_acceptance import speculative_config
from training.steps import log

HEAD_FILES = (HEAD_CONFIG, HEAD_WEIGHTS)
Prompts = list[Chat]  # each cut before its first answer


def checkpoints_to_try(save_dir: Path) -> list[Path]:
    """speculators' checkpoint with the lowest validation loss, and the last one if it is
    another."""
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


EMBEDDINGS = "embed_tokens.weight"


def export_head(checkpoint: Path, head: Path, verifier: str) -> dict[str, Any]:
    """The head as vLLM loads it: config.json (verifier made portable) and the weights; the
    checkpoint's validation figures. A head trained with the target's embeddings frozen
    ships without them: vLLM shares the target's with a head that has none."""
    copy_head(checkpoint, head)
    config = json.loads((head / HEAD_CONFIG).read_text())
    config["speculators_config"]["verifier"]["name_or_path"] = verifier
    (head / HEAD_CONFIG).write_text(json.dumps(config, indent=2) + "\n")
    if config.get("embed_requires_grad") is False:
        from safetensors.torch import load_file, save_file

        weights = load_file(head / HEAD_WEIGHTS)
        if weights.pop(EMBEDDINGS, None) is not None:
            save_file(weights, str(head / HEAD_WEIGHTS), {"format": "pt"})
    metrics_file = checkpoint / "val_metrics.json"
    return json.loads(metrics_file.read_text()) if metrics_file.is_file() else {}


def held_out_prompts(conversations: list[Chat], count: int) -> Prompts:
    """Each held-out conversation up to its first assistant answer, with its tools: what a
    user sent."""
    prompts = []
    for chat in conversations[:count]:
        for turn, message in enumerate(chat["messages"]):
            if message.get("role") == "assistant" and turn > 0:
                prompts.append({**chat, "messages": chat["messages"][:turn]})
                break
    return prompts


def measure_acceptance(
    target: Path,
    head: Path,
    k: int,
    prompt_sets: dict[str, Prompts],
    work: Path,
    options: tuple[str, ...] = (),
) -> dict[str, dict[str, Any]]:
    """vLLM drafting with the head on each set of prompts (acceptance.py): set -> figures.
    Empty sets are left out; with none left, nothing runs."""
    prompt_sets = {name: prompts for name, prompts in prompt_sets.items() if prompts}
    if not prompt_sets:
        return {}
    folder = work / "held_out"
    folder.mkdir(parents=True, exist_ok=True)
    named = []
    for name, prompts in prompt_sets.items():
        path = folder / f"{name}.jsonl"
        path.write_text("".join(json.dumps(prompt) + "\n" for prompt in prompts))
        named.append(f"{name}={path}")
    argv = [sys.executable, "-m", "training.held_out_acceptance", str(target), str(head), str(k)]
    argv += [*options, *named]  # options: --max-tokens=N, engine settings (--dtype=D)
    log(f"held-out acceptance: {' '.join(argv)}")
    finished = subprocess.run(argv, check=False, capture_output=True, text=True)
    lines = [line for line in finished.stdout.splitlines() if line.startswith("ACCEPTANCE ")]
    if finished.returncode != 0 or not lines:
        sys.stdout.write(finished.stdout[-4000:] + finished.stderr[-4000:])
        raise RuntimeError(f"vLLM could not serve the head {head} (exit {finished.returncode}).")
    return json.loads(lines[-1].removeprefix("ACCEPTANCE "))


def check_head(target: Path, head: Path, k: int) -> None:
    from serving.preflight.pair import speculation_problems

    config = speculative_config(head, k)
    config.pop("model")
    problems = speculation_problems(target, head, config, {})
    if problems:
        raise RuntimeError(
            "the trained head fails the container's preflight: " + " ".join(problems)
        )


def acceptance_of(measured: dict[str, dict[str, Any]], name: str) -> float | None:
    figure = measured.get(name, {}).get("mean_acceptance_length")
    return None if figure is None else float(figure)


@dataclass(frozen=True)
class Candidate:
    checkpoint: Path
    head: Path
    validation: dict[str, Any]
    measured: dict[str, dict[str, Any]]  # prompt set -> vLLM's figures

    def acceptance(self, name: str) -> float:
        """For sorting: a set not measured counts below any measured one."""
        figure = acceptance_of(self.measured, name)
        return -1.0 if figure is None else figure


@dataclass(frozen=True)
class Guard:
    """The replay set's acceptance a head must keep: (1 - max_loss) of the start head's."""

    start: float | None  # the start head's acceptance on the replay prompts
    max_loss: float

    @property
    def floor(self) -> float | None:
        return None if self.start is None else self.start * (1 - self.max_loss)

    def keeps(self, candidate: Candidate) -> bool:
        return self.floor is None or candidate.acceptance(REPLAY_CHANNEL) >= self.floor


def try_checkpoint(
    checkpoint: Path,
    target: Path,
    start_from: Path | None,
    keep_start_head: float,
    verifier: str,
    k: int,
    prompt_sets: dict[str, Prompts],
    work: Path,
) -> Candidate:
    """The checkpoint as the head it would be written: exported, mixed with the start head
    when asked, checked by preflight, and measured on the held-out prompts."""
    head = work / "heads" / checkpoint.name
    validation = export_head(checkpoint, head, verifier)
    if start_from is not None and keep_start_head:
        mixed = keep_start.mix(head, start_from, keep_start_head)
        log(f"kept {keep_start_head:g} of the start head in {mixed} tensors of the head")
    check_head(target, head, k)
    return Candidate(
        checkpoint, head, validation, measure_acceptance(target, head, k, prompt_sets, work)
    )


def choose(candidates: list[Candidate], guard: Guard) -> tuple[Candidate, bool]:
    """The head to write, and whether it keeps the replay set (the first of equals wins)."""
    kept = [candidate for candidate in candidates if guard.keeps(candidate)]
    if kept:
        return max(kept, key=lambda candidate: candidate.acceptance(TRAIN_CHANNEL)), True
    return max(candidates, key=lambda candidate: candidate.acceptance(REPLAY_CHANNEL)), False


@dataclass(frozen=True)
class Decision:
    chosen: Candidate
    tried: list[Candidate]
    start: dict[str, dict[str, Any]]  # the start head's figures on each set of prompts
    guard: Guard
    kept: bool  # whether the head chosen keeps the replay set


def decide(
    target: Path,
    start: Path | None,
    start_from: Path | None,
    save_dir: Path,
    prompt_sets: dict[str, Prompts],
    verifier: str,
    hp: Hyperparameters,
    work: Path,
) -> Decision:
    """The start head (`start`, as its channel holds it) measured on the held-out prompts,
    each checkpoint worth trying made into a head (`start_from` is the start head as the
    trainer read it, for keep_start_head) and measured the same way, and the choice."""
    k = hp.num_speculative_tokens
    measuring = any(prompt_sets.values())
    if not measuring:
        log("no held-out conversation with an answer: acceptance not measured")
    measured = measure_acceptance(target, start, k, prompt_sets, work) if start else {}
    guard = Guard(acceptance_of(measured, REPLAY_CHANNEL), hp.replay_max_loss)
    tried = [
        try_checkpoint(
            checkpoint, target, start_from, hp.keep_start_head, verifier, k, prompt_sets, work
        )
        for checkpoint in checkpoints_to_try(save_dir)[: None if measuring else 1]
    ]
    chosen, kept = choose(tried, guard)
    if measuring:
        log(
            "held-out acceptance length (train / replay channel): "
            + ", ".join(
                f"epoch {c.checkpoint.name} {c.acceptance(TRAIN_CHANNEL):.3f} / "
                f"{c.acceptance(REPLAY_CHANNEL):.3f}"
                for c in tried
            )
            + (f"; the start head's on replay {guard.start:.3f}" if guard.start else "")
            + f"; writing epoch {chosen.checkpoint.name}"
        )
    if not kept:
        log(
            "warning: no checkpoint kept the replay channel's acceptance within "
            f"replay_max_loss={guard.max_loss:g} of the start head's (at least "
            f"{guard.floor:.3f}); writing the one that lost least. A larger keep_start_head, "
            "fewer epochs or a lower learning rate keeps more of it."
        )
    return Decision(chosen, tried, measured, guard, kept)
