"""Which drafter a method uses, where it lives, and reading it from disk.

The speculative method decides whether there is a drafter directory at all: ngram and
suffix decoding need none, MTP drafts with the target's own weights, and the EAGLE, draft
model, Medusa, MLP and DFlash methods need one in "model" (for P-EAGLE, the `eagle`
channel that SageMaker mounts).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from serving.engine_args.speculative import DRAFTER_CHANNEL_METHODS
from serving.preflight.files import read_config
from serving.preflight.head_config import HeadConfig
from serving.preflight.head_layouts import parse_head_config
from serving.preflight.safetensors_headers import Tensor, read_tensors
from serving.preflight.speculative_config import Speculation
from serving.preflight.vllm_facts import (
    CUSTOM_CLASS_METHOD,
    MODEL_FREE_METHODS,
    SPECULATIVE_METHODS,
    TARGET_CHECKPOINT_METHODS,
)
from serving.variables import SPECULATIVE_CONFIG_VAR

if TYPE_CHECKING:  # only for annotations: the checks need no pydantic
    from serving.settings import Settings


def local_drafter_dir(
    speculation: Speculation, settings: Settings, errors: list[str], warnings: list[str]
) -> Path | None:
    """The drafter's directory when the method has one and it is local, else None."""
    method = speculation.method
    if method in MODEL_FREE_METHODS:
        return None
    if method == CUSTOM_CLASS_METHOD:
        if speculation.model is None and not speculation.model_given:
            errors.append(
                f'{SPECULATIVE_CONFIG_VAR}: "method": "custom_class" needs "model" to name the '
                'proposer class (e.g. "my_module.MyProposer"); add it.'
            )
        return None  # "model" is a Python class path, not a directory
    if speculation.model is None:
        # No drafter error when "model" is not a string or the method is missing or unknown
        # (each already has its own), nor when the target's checkpoint holds the drafter.
        if not (
            speculation.model_given
            or method not in SPECULATIVE_METHODS
            or method in TARGET_CHECKPOINT_METHODS
        ):
            errors.append(missing_drafter(method, settings))
        return None
    head_dir = Path(speculation.model)
    if head_dir.is_dir():
        if not any(head_dir.iterdir()):
            errors.append(
                f"drafter directory {head_dir} is empty; upload the drafter's files (config.json "
                "and *.safetensors) to the channel's S3 prefix."
            )
            return None
        return head_dir
    if head_dir.exists():
        errors.append(
            f'drafter {head_dir} (from "model" in {SPECULATIVE_CONFIG_VAR}) is a file, not a '
            "directory; point it at the directory holding config.json and the weights."
        )
    elif head_dir.is_absolute() or speculation.model.startswith("."):
        errors.append(
            f'drafter directory {head_dir} (from "model" in {SPECULATIVE_CONFIG_VAR}) does not '
            "exist; fix the path or add the head as an AdditionalModelDataSources channel."
        )
    else:
        warnings.append(
            f'drafter "{speculation.model}" is not a local directory, so preflight cannot check '
            "it; vLLM will fetch it from the Hugging Face Hub."
        )
    return None


def missing_drafter(method: str, settings: Settings) -> str:
    """The sentence for a method that needs a drafter but was given none."""
    if method not in DRAFTER_CHANNEL_METHODS:
        return (
            f'{SPECULATIVE_CONFIG_VAR}: "method": "{method}" drafts with a model of its own, '
            'but names no "model"; set "model" to its directory or Hugging Face id.'
        )
    # The settings fill "model" in from the channel for EAGLE heads, so it is missing.
    return (
        f"drafter directory {settings.drafter_dir} does not exist and "
        f'{SPECULATIVE_CONFIG_VAR} names no "model"; add the head as the endpoint\'s '
        f"AdditionalModelDataSources channel '{settings.drafter_dir.name}', put it inside "
        "the model as eagle/ (for Batch Transform, which mounts no channel), or set "
        '"model" to its path.'
    )


def read_head_config(head_dir: Path, errors: list[str]) -> HeadConfig | None:
    """The head's config.json as a HeadConfig; each problem with it goes to `errors`."""
    found = read_config(
        head_dir, "drafter", "upload the head's config.json next to its weights.", errors
    )
    return None if found is None else parse_head_config(found[1], found[0], errors)


def load_head(
    head_dir: Path, errors: list[str]
) -> tuple[HeadConfig | None, dict[str, Tensor] | None]:
    """The head's config and its tensors' shapes; None for what cannot be read."""
    return read_head_config(head_dir, errors), read_tensors(head_dir, errors)
