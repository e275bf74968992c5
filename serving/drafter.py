"""What a P-EAGLE head must look like: its config.json and the tensors its safetensors hold.

A head comes in one of two layouts. vLLM's native one is a Hugging Face config with an
EAGLE-3 architecture (`LlamaForCausalLMEagle3`, `Eagle3Qwen3ForCausalLM`, ...) and the
P-EAGLE extras at the top level. The `speculators` one (`speculators_model_type: peagle`
or `eagle3`) nests the decoder layer's config in `transformer_layer_config`. Both are
read here into one HeadConfig, the way vLLM 0.32 reads them, so the checks compare like
with like. Only JSON and safetensors headers are read: no torch, no vLLM, no tensor data.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONFIG_FILE = "config.json"
SAFETENSORS_INDEX = "model.safetensors.index.json"

# EAGLE-3 drafter architectures in vLLM's model registry, with the module that builds them
# (model_executor/models/registry.py, _SPECULATIVE_DECODING_MODELS). The module decides how
# the head's `fc` width is worked out. tests/test_preflight.py checks this table.
EAGLE3_DRAFTER_ARCHITECTURES = {
    "Eagle3DeepseekV2ForCausalLM": "deepseek_eagle3",
    "Eagle3DeepseekV3ForCausalLM": "deepseek_eagle3",
    "Eagle3LlamaForCausalLM": "llama_eagle3",
    "Eagle3MiniMaxM2ForCausalLM": "llama_eagle3",
    "Eagle3Qwen2_5vlForCausalLM": "llama_eagle3",
    "Eagle3Qwen3ForCausalLM": "qwen3_eagle3",
    "Eagle3Qwen3vlForCausalLM": "llama_eagle3",
    "LlamaForCausalLMEagle3": "llama_eagle3",
    "PEagleDraftModel": "llama_eagle3",
    "PeagleLlamaForCausalLM": "llama_eagle3",
    "PeagleQwen3ForCausalLM": "qwen3_eagle3",
}

# speculators_model_type -> vLLM architecture per transformer_layer_config.model_type
# (vllm/transformers_utils/configs/speculators/algos.py).
SPECULATORS_ARCHITECTURES = {
    "eagle3": {"llama": "Eagle3LlamaForCausalLM", "qwen3": "Eagle3Qwen3ForCausalLM"},
    "peagle": {"llama": "PeagleLlamaForCausalLM", "qwen3": "PeagleQwen3ForCausalLM"},
}

# Where vLLM looks for the parallel-drafting mask token, in its order
# (v1/spec_decode/llm_base_proposer.py, _init_parallel_drafting_params).
MASK_TOKEN_KEYS = ("mask_token_id", "dspark_noise_token_id", "pard_token", "ptd_token_id")

# Keys a head may use to declare how many draft positions it was trained for.
TRAINED_POSITIONS_KEYS = ("num_speculative_tokens_trained", "para_depths")

# vLLM's EAGLE-3 drafters build `fc` for this many aux hidden states when nothing says otherwise.
DEFAULT_NUM_AUX_HIDDEN_STATES = 3

# Bytes per element for the safetensors dtypes, to tell a corrupt entry from a good one.
DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1,
    "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4,
    "I64": 8, "U64": 8, "F64": 8,
}  # fmt: skip
# A real header is kilobytes to a few megabytes; anything near this is not a header.
MAX_HEADER_BYTES = 100 * 1024 * 1024


class DrafterError(Exception):
    """A head that cannot be read; the message is one sentence a user can act on."""


@dataclass(frozen=True)
class Tensor:
    name: str
    dtype: str
    shape: tuple[int, ...]
    file: Path

    @property
    def numel(self) -> int:
        count = 1
        for size in self.shape:
            count *= size
        return count


@dataclass(frozen=True)
class HeadConfig:
    """The facts about a head that decide whether vLLM can run it against a target."""

    path: Path
    layout: str  # "vLLM-native" or "speculators"
    speculators_type: str | None
    architectures: tuple[str, ...]
    # The EAGLE-3 drafter vLLM builds for this head with method eagle3, and its module.
    drafter_architecture: str | None
    drafter_module: str | None
    hidden_size: int | None
    target_hidden_size: int | None
    vocab_size: int | None
    draft_vocab_size: int | None
    aux_layer_ids: Any  # as written: normally a list of ints, None when absent
    aux_layer_ids_key: str | None
    fc_aux_states: int
    fc_aux_source: str
    uses_aux_hidden_states: bool
    mask_token_key: str | None
    mask_token_id: Any
    trained_positions_key: str | None
    trained_positions: Any
    # Trained for parallel drafting only: a speculators `peagle` head, or one whose
    # config.json says `parallel_drafting: true`.
    parallel_only: bool
    quantized: bool

    @property
    def is_eagle3(self) -> bool:
        return self.drafter_module is not None

    @property
    def effective_target_hidden_size(self) -> int | None:
        # vLLM falls back to the head's own hidden size when target_hidden_size is absent.
        return self.target_hidden_size or self.hidden_size

    @property
    def effective_draft_vocab_size(self) -> int | None:
        return self.draft_vocab_size or self.vocab_size


def read_json_object(path: Path, what: str) -> dict[str, Any]:
    """A JSON object from `path`; DrafterError with a sentence naming `what` otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DrafterError(f"{what} {path} does not exist.") from None
    except (OSError, UnicodeDecodeError) as error:
        raise DrafterError(f"{what} {path} cannot be read ({error}); upload it again.") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise DrafterError(
            f"{what} {path} is not valid JSON ({error.msg} at line {error.lineno}); "
            "fix the file or upload it again."
        ) from None
    if not isinstance(value, dict):
        raise DrafterError(
            f"{what} {path} holds a JSON {type(value).__name__}, not an object; "
            "it must be a model config object."
        )
    return value


def read_safetensors_header(path: Path) -> dict[str, Tensor]:
    """Tensor names, dtypes and shapes from a safetensors file's header; no tensor data.

    The format: 8 bytes little-endian header length N, N bytes of JSON, then the data.
    """
    size = path.stat().st_size
    with path.open("rb") as stream:
        prefix = stream.read(8)
        if len(prefix) < 8:
            raise DrafterError(
                f"{path} is {size} bytes, too short to be safetensors: the file is truncated. "
                "Upload it again."
            )
        (header_bytes,) = struct.unpack("<Q", prefix)
        if header_bytes > min(size - 8, MAX_HEADER_BYTES):
            raise DrafterError(
                f"{path} declares a {header_bytes}-byte header but holds {size} bytes: the file "
                "is truncated or not safetensors. Upload it again."
            )
        raw = stream.read(header_bytes)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise DrafterError(
            f"{path} has a corrupt safetensors header (not JSON): upload the file again."
        ) from None
    if not isinstance(header, dict):
        raise DrafterError(f"{path} has a corrupt safetensors header: upload the file again.")
    data_bytes = size - 8 - header_bytes
    tensors: dict[str, Tensor] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        tensors[name] = header_entry(path, name, entry, data_bytes)
    return tensors


def header_entry(path: Path, name: str, entry: Any, data_bytes: int) -> Tensor:
    corrupt = DrafterError(
        f"{path} has a corrupt safetensors header entry for {name!r}: upload the file again."
    )
    if not isinstance(entry, dict):
        raise corrupt
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if not (
        isinstance(dtype, str)
        and isinstance(shape, list)
        and all(isinstance(n, int) and n >= 0 for n in shape)
        and isinstance(offsets, list)
        and len(offsets) == 2
        and all(isinstance(n, int) for n in offsets)
        and 0 <= offsets[0] <= offsets[1]
    ):
        raise corrupt
    if offsets[1] > data_bytes:
        raise DrafterError(
            f"{path} is truncated: tensor {name!r} ends at byte {offsets[1]} of the data but "
            f"the file holds {data_bytes}. Upload it again."
        )
    tensor = Tensor(name, dtype, tuple(shape), path)
    if dtype in DTYPE_BYTES and offsets[1] - offsets[0] != tensor.numel * DTYPE_BYTES[dtype]:
        raise corrupt
    return tensor


def weight_files(drafter_dir: Path) -> list[Path]:
    return sorted(drafter_dir.glob("*.safetensors"))


def read_tensors(drafter_dir: Path, problems: list[str]) -> dict[str, Tensor] | None:
    """Every tensor in the head's safetensors files, or None when they cannot all be read."""
    files = weight_files(drafter_dir)
    if not files:
        others = sorted(p.name for p in drafter_dir.glob("*") if p.suffix in (".bin", ".pt"))
        found = f" (found {', '.join(others)}: convert them to safetensors)" if others else ""
        problems.append(
            f"drafter {drafter_dir} has no *.safetensors weights{found}; upload the head's "
            "model.safetensors next to its config.json."
        )
        return None
    index_path = drafter_dir / SAFETENSORS_INDEX
    readable = True
    if index_path.is_file():
        try:
            index = read_json_object(index_path, "drafter index")
        except DrafterError as error:
            problems.append(str(error))
            readable = False
        else:
            weight_map = index.get("weight_map")
            shards = set(weight_map.values()) if isinstance(weight_map, dict) else set()
            for shard in sorted(s for s in shards if not (drafter_dir / str(s)).is_file()):
                problems.append(
                    f"drafter {index_path} lists shard {shard} but {drafter_dir} has no such "
                    "file; upload every shard."
                )
                readable = False
    tensors: dict[str, Tensor] = {}
    for path in files:
        try:
            tensors |= read_safetensors_header(path)
        except (DrafterError, OSError) as error:
            problems.append(f"drafter {error}")
            readable = False
    return tensors if readable else None


def find_tensor(tensors: dict[str, Tensor], suffix: str) -> Tensor | None:
    """The tensor named `suffix` or `<prefix>.<suffix>` (checkpoints add `model.` and such)."""
    for name in sorted(tensors, key=len):
        if name == suffix or name.endswith("." + suffix):
            return tensors[name]
    return None


def find_tensor_containing(tensors: dict[str, Tensor], part: str) -> Tensor | None:
    # vLLM matches these by substring (`"mask_hidden" in name`, `"d2t" in name`).
    for name in sorted(tensors, key=len):
        if part in name:
            return tensors[name]
    return None


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
    fc_states, fc_source = fc_aux_states(
        module, raw, eagle_config, raw.get("eagle_aux_hidden_state_layer_ids")
    )
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
        hidden_size=number(raw, "hidden_size", path, problems),
        target_hidden_size=number(raw, "target_hidden_size", path, problems),
        vocab_size=number(raw, "vocab_size", path, problems),
        draft_vocab_size=number(raw, "draft_vocab_size", path, problems),
        aux_layer_ids=ids or None,
        aux_layer_ids_key=ids_key if ids else None,
        fc_aux_states=fc_states,
        fc_aux_source=fc_source,
        uses_aux_hidden_states=eagle_config.get("use_aux_hidden_state", True) is not False,
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
    fc_states, fc_source = fc_aux_states(
        module, merged, eagle_config, merged.get("eagle_aux_hidden_state_layer_ids")
    )
    if kind == "peagle":
        # vLLM maps a peagle head's top-level mask_token_id to pard_token.
        mask_key, mask_id = ("mask_token_id", raw.get("mask_token_id"))
        if mask_id is None:
            mask_key = None
    else:
        mask_key, mask_id = first_key(layer_config, MASK_TOKEN_KEYS)
        mask_key = f"transformer_layer_config.{mask_key}" if mask_key else None
    trained_key, trained = first_key(raw, TRAINED_POSITIONS_KEYS)
    return HeadConfig(
        path=path,
        layout="speculators",
        speculators_type=str(kind) if kind is not None else None,
        architectures=tuple(str(a) for a in raw.get("architectures") or ()),
        drafter_architecture=drafter_architecture,
        drafter_module=module,
        hidden_size=number(layer_config, "hidden_size", path, problems),
        target_hidden_size=number(merged, "target_hidden_size", path, problems),
        vocab_size=number(layer_config, "vocab_size", path, problems),
        draft_vocab_size=number(merged, "draft_vocab_size", path, problems),
        aux_layer_ids=ids or None,
        aux_layer_ids_key=ids_key if ids else None,
        fc_aux_states=fc_states,
        fc_aux_source=fc_source,
        uses_aux_hidden_states=eagle_config.get("use_aux_hidden_state", True) is not False,
        mask_token_key=mask_key,
        mask_token_id=mask_id,
        trained_positions_key=trained_key,
        trained_positions=trained,
        parallel_only=kind == "peagle",
        quantized="quantization_config" in raw or "quantization_config" in layer_config,
    )
