"""The speculative config: SM_VLLM_SPECULATIVE_CONFIG parsed, and the drafter filled in.

An EAGLE head comes in the endpoint's `eagle` channel, or inside the model as `eagle/` (a
model tarball packed with its head, for Batch Transform); a config that names no "model" for
an EAGLE method gets that directory, so users write only the method and K. A relative
"model" that is a directory inside the model is read as that directory.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from serving.engine_args.environment import value_of
from serving.variables import SPECULATIVE_CONFIG_VAR

# Speculative methods whose drafter is a model directory: only they get the eagle channel.
DRAFTER_CHANNEL_METHODS = frozenset({"eagle", "eagle3"})


def parse_speculative_config(
    environ: Mapping[str, str],
    drafter_dir: Path,
    problems: list[str],
    model_dir: Path | None = None,
) -> dict[str, Any] | None:
    raw = value_of(environ, SPECULATIVE_CONFIG_VAR)
    if raw is None:
        return None
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as error:
        problems.append(
            f"{SPECULATIVE_CONFIG_VAR} is not valid JSON ({error.msg} at character {error.pos}); "
            'set it to a JSON object such as {"method": "eagle3", "num_speculative_tokens": 3, '
            '"parallel_drafting": true}.'
        )
        return None
    if not isinstance(config, dict):
        problems.append(
            f"{SPECULATIVE_CONFIG_VAR} is JSON but a {type(config).__name__}, not an object; "
            'set it to an object such as {"method": "eagle3", "num_speculative_tokens": 3}.'
        )
        return None
    if (
        "model" not in config
        and config.get("method") in DRAFTER_CHANNEL_METHODS
        and drafter_dir.is_dir()
    ):
        config = {"model": str(drafter_dir), **config}
    elif model_dir is not None and (inside := relative_to_model(config.get("model"), model_dir)):
        config = {**config, "model": str(inside)}
    return config


def relative_to_model(model: Any, model_dir: Path) -> Path | None:
    """A relative "model" naming a directory inside the model (e.g. "heads/v2"), else None
    (an absolute path, or a Hugging Face id with no such directory, stays as it is)."""
    if not isinstance(model, str) or not model or Path(model).is_absolute():
        return None
    inside = model_dir / model
    if inside.is_dir() and model_dir.resolve() in inside.resolve().parents:
        return inside
    return None
