"""The real target's two heads, trained here by the product's own trainer (training/, on
speculators), on the same data, so that P-EAGLE and EAGLE-3 compare fairly:

1. prompts: prompts.py's conversations, split by conversation (training/rows.py's stable hash);
2. answers: the target answers every conversation itself, greedy (training/regenerate.py);
3. data: the training conversations' rows, packed by speculators' prepare-data (with the token
   frequencies the reduced draft vocabulary is chosen from);
4. hidden states: the target's, at the heads' auxiliary layers (training/hidden_states.py);
5. the P-EAGLE head, then the EAGLE-3 head (speculators' trainer, as the training job runs it);
6. each head exported as vLLM loads it, checked by the container's preflight and measured by
   vLLM on the held-out conversations of each kind.

Every step keeps what it wrote under `work` and is skipped when that is there; the trainer
resumes from its last checkpoint (one per epoch). So the recipe runs in parts: stop it
(Ctrl-C) and run it again. On two cores it takes about two hours (docs/real-model.md has the
times of the shipped heads).
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from model_data_sources.smollm2 import prompts

# The shipped heads' recipe; changing it means training and shipping them again.
HELD_OUT_FRACTION = 0.12
SPLIT_SEED = 0
MAX_ANSWER_TOKENS = 256
MAX_LENGTH = 1024  # tokens per packed training sequence
# Tokens of each held-out answer vLLM drafts while measuring a head.
MEASURE_TOKENS = 96


@dataclass(frozen=True)
class Head:
    channel: str  # where it ships: additional-model-data-sources/<channel>
    speculator_type: str
    k: int  # trained depth: P-EAGLE's parallel depths, EAGLE-3's unrolled steps
    measured_k: tuple[int, ...]  # the K its held-out acceptance is measured at


HEADS = (
    Head("eagle", "peagle", 8, (5, 7)),
    Head("eagle3", "eagle3", 4, (3,)),
)


def hyperparameters(head: Head):
    """The training job's own hyperparameters, one set for both heads but the method and K."""
    from training.contract import Hyperparameters

    return replace(
        Hyperparameters(),
        speculator_type=head.speculator_type,
        num_speculative_tokens=head.k,
        num_layers=1,
        epochs=3,
        learning_rate=2e-3,
        max_length=MAX_LENGTH,
        draft_vocab_size=8192,
        embeddings="target",
        seed=0,
    )


def native_bf16() -> bool:
    import torch

    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def dtype() -> str:
    """What the target computes in while answering and while its hidden states are taken:
    bfloat16, as served, where the CPU has bf16 instructions (emulated, it is slower)."""
    return "bfloat16" if native_bf16() else "float32"


def log(message: str) -> None:
    print(f"[smollm2 heads] {message}", flush=True)


@dataclass
class Split:
    conversations: list[dict[str, Any]]
    held_out: list[int]  # indices into conversations

    @property
    def train(self) -> list[int]:
        held_out = set(self.held_out)
        return [i for i in range(len(self.conversations)) if i not in held_out]


def split() -> Split:
    from training.rows import is_held_out

    conversations = prompts.conversations()
    held_out = [
        index
        for index, chat in enumerate(conversations)
        if is_held_out(chat, HELD_OUT_FRACTION, SPLIT_SEED)
    ]
    return Split(conversations, held_out)


def answer_all(target: Path, data: Split, work: Path) -> list[tuple[int, Any]]:
    """Every conversation answered by the target: (its index, a row) for each answer (a
    multi-turn conversation has one row per answer)."""
    from training.regenerate import answers

    return answers(
        target,
        data.conversations,
        work / "regenerate",
        MAX_ANSWER_TOKENS,
        MAX_LENGTH,
        resume=True,
        dtype=dtype(),
    )


def prepare(target: Path, rows: list[Any], work: Path) -> Path:
    """speculators' prepare-data on the training rows, with token frequencies."""
    import subprocess
    import sys

    from training.rows import write_rows

    data_dir = work / "data"
    done = data_dir / ".prepared"
    if done.is_file():
        return data_dir
    rows_file = write_rows(rows, work / "rows.jsonl")
    subprocess.run(
        [
            sys.executable, "-m", "speculators", "prepare-data",
            "--model", str(target), "--data", str(rows_file), "--output", str(data_dir),
            "--seq-length", str(MAX_LENGTH), "--num-preprocessing-workers", "1",
            "--no-skip-token-freq", "--overwrite",
        ],
        check=True,
    )  # fmt: skip
    done.write_text("")
    return data_dir


def hidden(target: Path, data_dir: Path, aux_ids: list[int]) -> None:
    from training import hidden_states

    done = data_dir / ".hidden_states"
    if done.is_file():
        return
    hidden_states.extract(target, data_dir, data_dir / "hidden_states", aux_ids, dtype())
    done.write_text("")


def train(target: Path, head: Head, data_dir: Path, aux_ids: list[int], work: Path) -> Path:
    from training.job import train_argv
    from training.steps import run_step

    save_dir = work / "checkpoints" / head.speculator_type
    hp = hyperparameters(head)
    finished = save_dir / str(hp.epochs - 1)
    if not (finished / "model.safetensors").is_file():
        run_step(train_argv(target, aux_ids, data_dir, save_dir, None, hp), head.speculator_type)
    return save_dir


def export(target: Path, head: Head, save_dir: Path, work: Path) -> tuple[Path, dict]:
    """The checkpoint with the best validation loss as the head vLLM loads, preflighted."""
    from training import choice

    checkpoint = choice.checkpoints_to_try(save_dir)[0]
    out = work / "heads" / head.channel
    shutil.rmtree(out, ignore_errors=True)
    validation = choice.export_head(checkpoint, out, "/opt/ml/model")
    for k in head.measured_k:
        choice.check_head(target, out, k)
    return out, {"checkpoint": checkpoint.name, "validation": validation}


def held_out_sets(data: Split) -> dict[str, list[dict[str, Any]]]:
    """The held-out conversations by kind, each as its first user turn: what vLLM drafts the
    answer to."""
    sets: dict[str, list[dict[str, Any]]] = {}
    for index in data.held_out:
        chat = data.conversations[index]
        messages = [m for m in chat["messages"] if m["role"] != "assistant"][:1]
        sets.setdefault(chat["kind"], []).append({"messages": messages})
    return sets


def measure(target: Path, head: Path, k: int, sets: dict, work: Path) -> dict:
    from training.choice import measure_acceptance

    options = (f"--max-tokens={MEASURE_TOKENS}", f"--dtype={dtype()}")
    return measure_acceptance(target, head, k, sets, work / "measure", options)


def run(target: Path, work: Path) -> dict[str, Any]:
    """Every step, each skipped when done; the report (also in work/report.json)."""
    from training.hidden_states import aux_layer_ids

    started = time.monotonic()
    work.mkdir(parents=True, exist_ok=True)
    report_file = work / "report.json"
    report: dict[str, Any] = json.loads(report_file.read_text()) if report_file.is_file() else {}
    seconds = report.setdefault("seconds", {})

    def lap(name: str, clock: float) -> None:
        seconds[name] = seconds.get(name, 0.0) + round(time.monotonic() - clock, 1)
        report_file.write_text(json.dumps(report, indent=2) + "\n")

    data = split()
    clock = time.monotonic()
    log(f"answers: {len(data.conversations)} conversations ({len(data.held_out)} held out)")
    answered = answer_all(target, data, work)
    lap("answers", clock)
    learn_from = set(data.train)
    train_rows = [row for index, row in answered if index in learn_from]
    clock = time.monotonic()
    data_dir = prepare(target, train_rows, work)
    config = json.loads((target / "config.json").read_text())
    aux_ids = aux_layer_ids(int(config["num_hidden_layers"]))
    log(f"hidden states of {len(train_rows)} rows at layers {aux_ids}")
    hidden(target, data_dir, aux_ids)
    lap("data", clock)
    report["data"] = data_manifest(data, answered, train_rows)
    sets = held_out_sets(data)
    report.setdefault("heads", {})
    for head in HEADS:
        clock = time.monotonic()
        log(f"training the {head.speculator_type} head")
        save_dir = train(target, head, data_dir, aux_ids, work)
        lap(f"train_{head.speculator_type}", clock)
        clock = time.monotonic()
        out, figures = export(target, head, save_dir, work)
        figures["hyperparameters"] = asdict(hyperparameters(head))
        figures["held_out"] = {str(k): measure(target, out, k, sets, work) for k in head.measured_k}
        report["heads"][head.channel] = figures
        lap(f"measure_{head.speculator_type}", clock)
        log(f"{head.speculator_type}: {summary(figures)}")
    report["total_seconds"] = round(sum(seconds.values()), 1)
    report_file.write_text(json.dumps(report, indent=2) + "\n")
    log(f"done in {time.monotonic() - started:.0f} s this run; report in {report_file}")
    return report


def data_manifest(data: Split, answered: list[tuple[int, Any]], train_rows: list[Any]) -> dict:
    import hashlib

    kinds: dict[str, dict[str, int]] = {}
    for index, chat in enumerate(data.conversations):
        side = "held_out" if index in set(data.held_out) else "train"
        kinds.setdefault(chat["kind"], {"train": 0, "held_out": 0})[side] += 1
    text = "".join(json.dumps(chat) + "\n" for chat in data.conversations)
    return {
        "conversations": len(data.conversations),
        "kinds": kinds,
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
        "train_rows": len(train_rows),
        "answer_tokens": sum(sum(row.loss_mask) for row in train_rows),
        "answered": len({index for index, _ in answered}),
    }


def summary(figures: dict) -> str:
    parts = []
    for k, sets in figures["held_out"].items():
        by_kind = ", ".join(
            f"{name} {value['mean_acceptance_length']:.2f}"
            for name, value in sets.items()
            if value.get("mean_acceptance_length")
        )
        parts.append(f"K={k}: {by_kind}")
    return "; ".join(parts)
