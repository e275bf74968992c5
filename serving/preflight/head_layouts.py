"""The two layouts a head's config.json comes in, read into a HeadConfig as vLLM 0.32 reads them.

vLLM's native layout is a Hugging Face config with an EAGLE-3 architecture
(`LlamaForCausalLMEagle3`, `Eagle3Qwen3ForCausalLM`, ...) and the P-EAGLE extras at the top
level. The `speculators` library's layout (`speculators_model_type: peagle` or `eagle3`)
nests the decoder layer's config in `transformer_layer_config`. Reading both into one
shape lets the checks compare like with like.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from serving.preflight.head_config import HeadConfig
from serving.preflight.vllm_facts import (
    DEFAULT_NUM_AUX_HIDDEN_STATES,
    EAGLE3_DRAFTER_ARCHITECTURES,
    MASK_TOKEN_KEYS,
    PEAGLE_DROPPED_KEYS,
    SPECULATORS_ARCHITECTURES,
)

# Keys a head may use to declare how many draft positions it was trained for.
TRAINED_POSITIONS_KEYS = ("num_speculative_tokens_trained", "para_depths")


def first_key(config: dict[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    for key in keys:
        if config.get(key) is not None:
            return key, config[key]
    return None, None


def number(config: dict[str, Any], key: str, where: Path, problems: list[str]) -> int | None:
    """config[key] as a positive int; a problem when present but not one."""
    value = config.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        problems.append(
            f"drafter {where}: {key} is {json.dumps(value)}, not a positive integer; fix it."
        )
        return None
    return value


def eagle3_drafter_architecture(architectures: tuple[str, ...]) -> str | None:
    """The drafter vLLM builds for a native head with method eagle3, or None.

    vLLM wraps the config in EAGLEConfig, which renames an architecture to Eagle3<arch>
    unless it already starts or ends with Eagle3 (transformers_utils/configs/eagle.py).
    """
    for architecture in architectures:
        renamed = (
            architecture
            if architecture.startswith("Eagle3") or architecture.endswith("Eagle3")
            else f"Eagle3{architecture}"
        )
        if renamed in EAGLE3_DRAFTER_ARCHITECTURES:
            return renamed
    return None


def fc_aux_states(
    module: str | None, config: dict[str, Any], eagle_config: dict[str, Any], top_ids: Any
) -> tuple[int, str]:
    """How many aux hidden states vLLM builds the head's `fc` for, and where that came from.

    The Llama and DeepSeek drafters read num_aux_hidden_states, then the ids in
    eagle_config; the Qwen3 drafter also reads num_aux_layers and the top-level ids.
    """
    if module == "qwen3_eagle3" and isinstance(config.get("num_aux_layers"), int):
        return config["num_aux_layers"], "num_aux_layers"
    if isinstance(config.get("num_aux_hidden_states"), int):
        return config["num_aux_hidden_states"], "num_aux_hidden_states"
    if module == "qwen3_eagle3" and isinstance(top_ids, list) and top_ids:
        return len(top_ids), "eagle_aux_hidden_state_layer_ids"
    nested = eagle_config.get("eagle_aux_hidden_state_layer_ids")
    if isinstance(nested, list) and nested:
        return len(nested), "eagle_config.eagle_aux_hidden_state_layer_ids"
    return DEFAULT_NUM_AUX_HIDDEN_STATES, "vLLM's default"


def sizes(
    layer: dict[str, Any], merged: dict[str, Any], path: Path, problems: list[str]
) -> dict[str, int | None]:
    """The head's sizes: its layer's own, and the target's and draft vocabulary's as vLLM
    reads them (the same config for a native head; speculators' merged one otherwise)."""
    return {
        "hidden_size": number(layer, "hidden_size", path, problems),
        "target_hidden_size": number(merged, "target_hidden_size", path, problems),
        "vocab_size": number(layer, "vocab_size", path, problems),
        "draft_vocab_size": number(merged, "draft_vocab_size", path, problems),
    }


def aux_facts(
    module: str | None, config: dict[str, Any], eagle_config: dict[str, Any], ids_key: str, ids: Any
) -> dict[str, Any]:
    """What the head says about the target's aux hidden states, read alike in both layouts."""
    fc_states, fc_source = fc_aux_states(
        module, config, eagle_config, config.get("eagle_aux_hidden_state_layer_ids")
    )
    return {
        "aux_layer_ids": ids or None,
        "aux_layer_ids_key": ids_key if ids else None,
        "fc_aux_states": fc_states,
        "fc_aux_source": fc_source,
        "uses_aux_hidden_states": eagle_config.get("use_aux_hidden_state", True) is not False,
    }


def parse_head_config(raw: dict[str, Any], path: Path, problems: list[str]) -> HeadConfig:
    """Read a head's config.json (either layout) the way vLLM 0.32 does."""
    if "speculators_model_type" in raw or "speculators_config" in raw:
        return parse_speculators_config(raw, path, problems)
    return parse_native_config(raw, path, problems)


def parse_native_config(raw: dict[str, Any], path: Path, problems: list[str]) -> HeadConfig:
    architectures = raw.get("architectures")
    if not (isinstance(architectures, list) and architectures):
        problems.append(
            f"drafter {path}: no architectures list; an EAGLE-3 head names one such as "
            '"LlamaForCausalLMEagle3". Add it.'
        )
        architectures = []
    names = tuple(str(a) for a in architectures)
    drafter_architecture = eagle3_drafter_architecture(names)
    module = EAGLE3_DRAFTER_ARCHITECTURES.get(drafter_architecture or "")
    eagle_config = raw.get("eagle_config") if isinstance(raw.get("eagle_config"), dict) else {}
    # The target reads top-level ids first, then eagle_config's (gpu_model_runner.py).
    ids_key, ids = "eagle_aux_hidden_state_layer_ids", raw.get("eagle_aux_hidden_state_layer_ids")
    if not ids and eagle_config.get("eagle_aux_hidden_state_layer_ids"):
        ids_key = "eagle_config.eagle_aux_hidden_state_layer_ids"
        ids = eagle_config["eagle_aux_hidden_state_layer_ids"]
    mask_key, mask_id = first_key(raw, MASK_TOKEN_KEYS)
    dflash_config = raw.get("dflash_config")
    if isinstance(dflash_config, dict) and "mask_token_id" in dflash_config:
        mask_key, mask_id = "dflash_config.mask_token_id", dflash_config["mask_token_id"]
    trained_key, trained = first_key(raw, TRAINED_POSITIONS_KEYS)
    return HeadConfig(
        path=path,
        layout="vLLM-native",
        speculators_type=None,
        architectures=names,
        drafter_architecture=drafter_architecture,
        drafter_module=module,
        **sizes(raw, raw, path, problems),
        **aux_facts(module, raw, eagle_config, ids_key, ids),
        mask_token_key=mask_key,
        mask_token_id=mask_id,
        trained_positions_key=trained_key,
        trained_positions=trained,
        parallel_only=raw.get("parallel_drafting") is True,
        quantized="quantization_config" in raw,
    )


def parse_speculators_config(raw: dict[str, Any], path: Path, problems: list[str]) -> HeadConfig:
    kind = raw.get("speculators_model_type")
    layer_config = raw.get("transformer_layer_config")
    if not isinstance(layer_config, dict):
        problems.append(
            f"drafter {path}: speculators layout without a transformer_layer_config object; "
            "vLLM reads the head's sizes from it. Export the head again with speculators."
        )
        layer_config = {}
    layer_type = layer_config.get("model_type", "llama")
    drafter_architecture = SPECULATORS_ARCHITECTURES.get(str(kind), {}).get(layer_type)
    if kind in SPECULATORS_ARCHITECTURES and drafter_architecture is None:
        problems.append(
            f"drafter {path}: transformer_layer_config.model_type {layer_type!r} is not one vLLM "
            f"runs for speculators_model_type {kind!r}; it takes llama or qwen3."
        )
    module = EAGLE3_DRAFTER_ARCHITECTURES.get(drafter_architecture or "")
    # vLLM builds the drafter's config from transformer_layer_config, then copies the
    # algorithm's own keys over it (speculators/algos.py).
    merged = dict(layer_config)
    for key in ("draft_vocab_size", "target_hidden_size", "eagle_aux_hidden_state_layer_ids"):
        if raw.get(key) is not None:
            merged[key] = raw[key]
    eagle_config = (
        merged.get("eagle_config") if isinstance(merged.get("eagle_config"), dict) else {}
    )
    ids_key, ids = (
        "eagle_aux_hidden_state_layer_ids",
        merged.get("eagle_aux_hidden_state_layer_ids"),
    )
    if not ids and eagle_config.get("eagle_aux_hidden_state_layer_ids"):
        ids_key = "transformer_layer_config.eagle_config.eagle_aux_hidden_state_layer_ids"
        ids = eagle_config["eagle_aux_hidden_state_layer_ids"]
    if kind == "peagle":
        # vLLM maps a peagle head's top-level mask_token_id to pard_token.
        mask_key, mask_id = ("mask_token_id", raw.get("mask_token_id"))
        if mask_id is None:
            mask_key = None
    else:
        mask_key, mask_id = first_key(layer_config, MASK_TOKEN_KEYS)
        mask_key = f"transformer_layer_config.{mask_key}" if mask_key else None
    trained_key, trained = first_key(raw, TRAINED_POSITIONS_KEYS)
    # update_peagle builds the drafter's config from transformer_layer_config and copies
    # neither key from the top level, so a top-level value that differs is lost.
    dropped = tuple(
        key
        for key in PEAGLE_DROPPED_KEYS
        if kind == "peagle" and raw.get(key) and layer_config.get(key) != raw[key]
    )
    return HeadConfig(
        path=path,
        layout="speculators",
        speculators_type=str(kind) if kind is not None else None,
        architectures=tuple(str(a) for a in raw.get("architectures") or ()),
        drafter_architecture=drafter_architecture,
        drafter_module=module,
        **sizes(layer_config, merged, path, problems),
        **aux_facts(module, merged, eagle_config, ids_key, ids),
        mask_token_key=mask_key,
        mask_token_id=mask_id,
        trained_positions_key=trained_key,
        trained_positions=trained,
        parallel_only=kind == "peagle",
        quantized="quantization_config" in raw or "quantization_config" in layer_config,
        dropped_keys=dropped,
    )
