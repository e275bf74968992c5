"""The target model: its sizes from config.json, and whether it can feed a drafter.

Only the target's config.json is read, never its weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from serving.engine_args.flags import flag_value
from serving.preflight.files import read_config
from serving.preflight.vllm_facts import AUX_HIDDEN_STATE_METHODS, EAGLE3_TARGET_ARCHITECTURES
from serving.variables import SPECULATIVE_CONFIG_VAR

if TYPE_CHECKING:  # only for annotations: the checks need no pydantic
    from serving.settings import Settings


@dataclass(frozen=True)
class Target:
    config_path: Path
    architectures: tuple[str, ...]
    hidden_size: int | None
    num_hidden_layers: int | None
    vocab_size: int | None


def load_target(settings: Settings, errors: list[str], warnings: list[str]) -> Target | None:
    model_dir = Path(settings.model)
    if not model_dir.is_dir():
        warnings.append(
            f"target {settings.model} is not a local directory, so preflight cannot compare the "
            "drafter with it; vLLM will fetch it and check at load time."
        )
        return None
    found = read_config(
        model_dir,
        "target config",
        "put the model's files (config.json and weights) there, or point SM_VLLM_MODEL at a "
        "directory that has them.",
        errors,
    )
    if found is None:
        return None
    config_path, raw = found
    # Multimodal targets keep the language model's sizes in text_config.
    text = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else {}

    def size(key: str) -> int | None:
        value = text.get(key, raw.get(key))
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    architectures = raw.get("architectures")
    return Target(
        config_path=config_path,
        architectures=tuple(architectures) if isinstance(architectures, list) else (),
        hidden_size=size("hidden_size"),
        num_hidden_layers=size("num_hidden_layers"),
        vocab_size=size("vocab_size"),
    )


def check_target_architecture(
    target: Target, method: str | None, engine_flags: tuple[str, ...], errors: list[str]
) -> None:
    """A target that cannot hand its aux hidden states to a method that drafts from them.

    Other methods (ngram, suffix, mtp, draft_model, ...) run on any target vLLM runs.
    """
    if method not in AUX_HIDDEN_STATE_METHODS:
        return
    # The Transformers backend implements EAGLE-3 for any model it can run.
    if flag_value(engine_flags, "--model-impl") == "transformers":
        return
    if not target.architectures:
        errors.append(
            f"target {target.config_path}: no architectures list, so vLLM cannot tell which "
            'model to build; add one such as "LlamaForCausalLM".'
        )
        return
    if not EAGLE3_TARGET_ARCHITECTURES.intersection(target.architectures):
        errors.append(
            f"target {target.config_path}: architecture {', '.join(target.architectures)} cannot "
            f'hand its aux hidden states to a "{method}" drafter in vLLM (its model does not '
            "implement SupportsEagle3); serve a target of a supported architecture (e.g. "
            "LlamaForCausalLM, Qwen3ForCausalLM, GptOssForCausalLM), set "
            f'SM_VLLM_MODEL_IMPL=transformers, or change "method" in {SPECULATIVE_CONFIG_VAR} '
            'to one that needs no aux hidden states, such as "ngram".'
        )
