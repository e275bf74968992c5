"""Where SageMaker puts things: the one source of truth for the container's paths and ports."""

from __future__ import annotations

from pathlib import Path

DEFAULT_OPT_ML_ROOT = Path("/opt/ml")
MODEL_SUBDIR = "model"
DATA_SOURCES_SUBDIR = "additional-model-data-sources"
DRAFTER_CHANNEL = "eagle"
# Where a head travels inside the model's own tarball, for the modes that take no extra
# channel (Batch Transform): /opt/ml/model/eagle.
MODEL_HEAD_SUBDIR = "eagle"

DEFAULT_PORT = 8080
ENGINE_HOST = "127.0.0.1"


def model_dir(opt_ml_root: Path) -> Path:
    return opt_ml_root / MODEL_SUBDIR


def channel_dir(opt_ml_root: Path, channel: str = DRAFTER_CHANNEL) -> Path:
    return opt_ml_root / DATA_SOURCES_SUBDIR / channel


def drafter_dir(opt_ml_root: Path) -> Path:
    """The head's directory: the `eagle` channel, else `eagle/` inside the model (a tarball
    packed with its head); the channel when neither is there, for the messages."""
    channel = channel_dir(opt_ml_root)
    inside = model_dir(opt_ml_root) / MODEL_HEAD_SUBDIR
    if not channel.is_dir() and inside.is_dir():
        return inside
    return channel
