"""Facts about vLLM 0.32 that the checks rest on, copied from its source.

Preflight must not import vLLM (it pulls in torch and takes seconds), so the facts are
written out here, each with the file it comes from. tests/preflight/test_vllm_facts.py
holds every table against the installed vLLM, so an upgrade that changes one fails there.
"""

from __future__ import annotations

# --- the speculative config (vllm/config/speculative.py) ------------------------------------

# The fields of SpeculativeConfig, in order, each with the JSON type a user may give it:
# bool, int (>= 1 where noted), number, str, list or object; "internal" ones vLLM fills in.
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

# MTPModelTypes: vLLM runs each as "mtp", drafting with the target checkpoint's own MTP layers.
MTP_METHODS = frozenset(
    {
        "mtp", "deepseek_mtp", "dots3_note_mtp", "mimo_mtp", "mimo_v2_mtp", "glm4_moe_mtp",
        "glm4_moe_lite_mtp", "glm_ocr_mtp", "ernie_mtp", "nemotron_h_mtp", "exaone_moe_mtp",
        "exaone4_5_mtp", "qwen3_next_mtp", "qwen4_exp_mtp", "qwen3_5_mtp", "longcat_flash_mtp",
        "bailing_hybrid_v3_mtp", "minimax_m3_mtp", "bailing_hybrid_mtp", "kimi_k3_mtp",
        "pangu_ultra_moe_mtp", "step3p5_mtp", "hy_v3_mtp", "hy_v4_mtp", "gemma4_mtp",
        "inkling_mtp", "glm5_next_mtp",
    }
)  # fmt: skip

# Every value of SpeculativeMethod.
SPECULATIVE_METHODS = MTP_METHODS | {
    "ngram", "medusa", "mlp_speculator", "draft_model", "suffix", "custom_class",
    "eagle", "eagle3", "extract_hidden_states", "dflash", "dspark", "ngram_gpu",
}  # fmt: skip

# What each method drafts with, from SpeculativeConfig.__post_init__ when "model" is unset:
# these need no drafter weights at all,
MODEL_FREE_METHODS = frozenset({"ngram", "ngram_gpu", "suffix", "extract_hidden_states"})
# these draft with weights inside the target's own checkpoint,
TARGET_CHECKPOINT_METHODS = MTP_METHODS | {"dspark"}
# this one takes a Python class path in "model", not a directory,
CUSTOM_CLASS_METHOD = "custom_class"
# and every other method raises "num_speculative_tokens was provided but without
# speculative model": eagle, eagle3, draft_model, medusa, mlp_speculator, dflash.

# Methods whose proposer reads a parallel-drafting mask token from the drafter's config
# (v1/spec_decode/llm_base_proposer.py, _init_parallel_drafting_params).
PARALLEL_DRAFTING_METHODS = frozenset({"eagle3", "eagle", "draft_model", "dflash", "dspark"})

# Methods for which the V1 model runner asks the target for aux hidden states, and raises
# when its model does not implement SupportsEagle3 (v1/worker/gpu_model_runner.py).
AUX_HIDDEN_STATE_METHODS = frozenset({"eagle3", "dflash", "extract_hidden_states"})

# --- the target (model_executor/models/registry.py) -----------------------------------------

# Target architectures whose vLLM model implements SupportsEagle3, i.e. can hand a drafter
# its aux hidden states (text and multimodal tables).
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

# --- the drafter head ------------------------------------------------------------------------

# EAGLE-3 drafter architectures in the model registry (_SPECULATIVE_DECODING_MODELS), with
# the module that builds them: the module decides how the head's `fc` width is worked out.
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
# (transformers_utils/configs/speculators/algos.py).
SPECULATORS_ARCHITECTURES = {
    "eagle3": {"llama": "Eagle3LlamaForCausalLM", "qwen3": "Eagle3Qwen3ForCausalLM"},
    "peagle": {"llama": "PeagleLlamaForCausalLM", "qwen3": "PeagleQwen3ForCausalLM"},
}

# Parallel drafters of other designs than P-EAGLE, by speculators_model_type (algos.py's
# update_dflash, update_dflash2, update_dspark) and by the architectures their native configs
# name (model_executor/models/registry.py's keys): each with the method vLLM runs it as. Upstream's
# only parallel drafters from vLLM 0.34 on.
OTHER_PARALLEL_DRAFTERS = {
    "dflash": ("DFlash", "dflash"),
    "dflash2": ("DFlash", "dflash"),
    "dspark": ("DSpark", "dspark"),
}
OTHER_PARALLEL_DRAFTER_ARCHITECTURES = {
    "DFlashDraftModel": "dflash",
    "DFlash2DraftModel": "dflash2",
    "DSparkDraftModel": "dspark",
}

# Top-level keys of a speculators config that update_eagle3 copies into the drafter's
# config but update_peagle does not (algos.py); keys inside transformer_layer_config are
# the base of that config, so both keep them there.
PEAGLE_DROPPED_KEYS = ("fc_norm", "norm_output")

# Where vLLM looks for the parallel-drafting mask token, in its order
# (v1/spec_decode/llm_base_proposer.py, _init_parallel_drafting_params).
MASK_TOKEN_KEYS = ("mask_token_id", "dspark_noise_token_id", "pard_token", "ptd_token_id")

# vLLM's EAGLE-3 drafters build `fc` for this many aux hidden states when nothing says otherwise.
DEFAULT_NUM_AUX_HIDDEN_STATES = 3
