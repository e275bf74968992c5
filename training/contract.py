"""SageMaker's training contract: where the job's inputs and outputs are, and its
hyperparameters as one checked object.

The image is started with `train`. Each channel of the job is a folder under
/opt/ml/input/data/<channel>; the hyperparameters are /opt/ml/input/config/hyperparameters.json,
every value a string; what is written to /opt/ml/model is uploaded as the result; the reason
for a failure goes to /opt/ml/output/failure; /opt/ml/checkpoints is synced to S3, so a spot
job that is interrupted starts again from what it left there.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields
from pathlib import Path

from training.precision import CHOICES as PRECISIONS

# Tests and `make train-head-demo` on the host point this at a tree of their own.
ROOT_VAR = "SM_TRAINING_ROOT"
DEFAULT_ROOT = Path("/opt/ml")
TARGET_CHANNEL = "target"  # the HF checkpoint the head drafts for
TRAIN_CHANNEL = "train"  # capture export's JSONL (train.openai.jsonl)
HEAD_CHANNEL = "eagle"  # optional: a head to start from
# Optional: conversations of the traffic the start head drafts, learnt alongside the train
# channel's so that the head keeps them, and its guard (replay_max_loss).
REPLAY_CHANNEL = "replay"
# A head folder, as vLLM and speculators read it.
HEAD_CONFIG = "config.json"
HEAD_WEIGHTS = "model.safetensors"


class ContractError(Exception):
    """An input the job cannot use; the message names it and says what to do."""


@dataclass(frozen=True)
class Layout:
    root: Path

    @classmethod
    def from_environment(cls) -> Layout:
        return cls(Path(os.environ.get(ROOT_VAR, str(DEFAULT_ROOT))))

    def channel(self, name: str) -> Path:
        return self.root / "input" / "data" / name

    @property
    def hyperparameters_file(self) -> Path:
        return self.root / "input" / "config" / "hyperparameters.json"

    @property
    def model_dir(self) -> Path:
        return self.root / "model"

    @property
    def failure_file(self) -> Path:
        return self.root / "output" / "failure"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def work_dir(self) -> Path:
        """Scratch: the prepared data and hidden states (not uploaded, not synced)."""
        return self.root / "output" / "work"


@dataclass(frozen=True)
class Hyperparameters:
    """What a job may set (SageMaker's hyperparameters), with the demo's defaults."""

    num_speculative_tokens: int = 7  # the parallel depth the head is trained for
    num_layers: int = 2  # draft decoder layers
    epochs: int = 20  # speculators' own default
    learning_rate: float = 1e-3  # speculators' own default (Muon)
    max_length: int = 1024  # tokens per conversation row
    held_out_fraction: float = 0.1  # conversations kept aside to measure acceptance
    # Of those, how many of each channel's vLLM answers with the head (0: none).
    held_out_prompts: int = 32
    # > 0: the target answers the training conversations again, up to this many tokens per
    # answer (regenerate.py); 0: learn from the answers the conversations hold.
    regenerate_max_tokens: int = 0
    # speculators' --loss-fn: kl_div (its default) matches the target's whole distribution;
    # ce learns the target's greedy token, which is what greedy decoding accepts.
    loss: str = "kl_div"
    # With a head in the eagle channel: the share of its weights the written head keeps
    # (keep_start.py); 0 writes the trained head as it is.
    keep_start_head: float = 0.0
    # With a start head and a replay channel: of the checkpoints tried, the job writes the
    # best on the train channel's held-out prompts among those whose acceptance on the replay
    # channel's stays within this share of the start head's.
    replay_max_loss: float = 0.05
    seed: int = 0
    # peagle: all K drafted in one pass (parallel drafting); eagle3: one pass per draft token,
    # trained over num_speculative_tokens unrolled steps. Both are served as `eagle3`.
    speculator_type: str = "peagle"
    # > 0: the head predicts only the training answers' most frequent tokens (speculators'
    # --draft-vocab-size): a smaller output layer, cheaper to train and to draft with. A token
    # outside it is never drafted. 0: the target's whole vocabulary.
    draft_vocab_size: int = 0
    # train: the head learns its own input embeddings and ships them (speculators' P-EAGLE
    # default); target: it drafts with the target's, frozen, and ships none (vLLM shares
    # the target's), which keeps a head of a large-vocabulary target small.
    embeddings: str = "train"
    # What the passes compute in (precision.py): auto is bfloat16 where the hardware has it
    # natively (any recent GPU, a CPU with AVX512-BF16 or AMX), else float32. Master weights
    # stay float32 either way.
    precision: str = "auto"
    # Checkpoints written per epoch, each one a point a stopped job (a spot interruption, a
    # part of a long recipe) resumes from, mid-epoch included.
    checkpoints_per_epoch: int = 1

    LIMITS = {
        "num_speculative_tokens": (1, 32),
        "num_layers": (1, 8),
        "epochs": (1, 1000),
        "learning_rate": (1e-7, 1.0),
        "max_length": (64, 131072),
        "held_out_fraction": (0.01, 0.5),
        "held_out_prompts": (0, 10000),
        "regenerate_max_tokens": (0, 131072),
        "keep_start_head": (0.0, 0.95),
        "replay_max_loss": (0.0, 1.0),
        "seed": (0, 2**31 - 1),
        "draft_vocab_size": (0, 1 << 20),
        "checkpoints_per_epoch": (1, 1000),
    }
    CHOICES = {
        "loss": ("kl_div", "rkl", "jsd", "ce", "tv", "nla", "lk_hybrid"),
        "speculator_type": ("peagle", "eagle3"),
        "embeddings": ("train", "target"),
        "precision": PRECISIONS,
    }

    @classmethod
    def parse(cls, given: dict[str, object]) -> Hyperparameters:
        """From hyperparameters.json: strings (as SageMaker writes them) or numbers."""
        known = {field.name: field for field in fields(cls)}
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise ContractError(
                f"hyperparameters.json has {', '.join(unknown)}, which the trainer does not "
                f"know; it takes {', '.join(known)}."
            )
        values: dict[str, object] = {}
        for name, text in given.items():
            if name in cls.CHOICES:
                value = str(text).strip()
                if value not in cls.CHOICES[name]:
                    raise ContractError(
                        f"hyperparameter {name}={text!r} is not one of "
                        f"{', '.join(cls.CHOICES[name])}."
                    )
                values[name] = value
                continue
            kind = int if known[name].type in ("int", int) else float
            try:
                value = kind(str(text).strip())
            except ValueError:
                wanted = "a whole number" if kind is int else "a number"
                raise ContractError(f"hyperparameter {name}={text!r} is not {wanted}.") from None
            low, high = cls.LIMITS[name]
            if not low <= value <= high:
                raise ContractError(f"hyperparameter {name}={text!r} is outside {low:g}..{high:g}.")
            values[name] = value
        return cls(**values)  # type: ignore[arg-type]


def read_hyperparameters(layout: Layout) -> Hyperparameters:
    path = layout.hyperparameters_file
    if not path.is_file():
        return Hyperparameters()
    try:
        given = json.loads(path.read_text() or "{}")
    except json.JSONDecodeError as error:
        raise ContractError(
            f"{path} is not JSON ({error}); SageMaker writes it as an object."
        ) from None
    if not isinstance(given, dict):
        raise ContractError(f"{path} holds {type(given).__name__}, not an object of names.")
    return Hyperparameters.parse(given)


def write_failure(layout: Layout, reason: str) -> None:
    """SageMaker shows this file's text as the job's FailureReason (first 1024 bytes)."""
    layout.failure_file.parent.mkdir(parents=True, exist_ok=True)
    layout.failure_file.write_text(reason[:1024])
