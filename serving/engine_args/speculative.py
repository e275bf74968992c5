"""The speculative config: SM_VLLM_SPECULATIVE_CONFIG parsed, and the drafter filled in.

An EAGLE head comes in the endpoint's `eagle` channel; a config that names no "model" for
an EAGLE method gets that directory, so users write only the method and K.
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
    environ: Mapping[str, str], drafter_dir: Path, problems: list[str]
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
    return config
