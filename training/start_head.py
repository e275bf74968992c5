"""The head a job starts from (the `eagle` channel), as speculators' trainer loads it.

A head in speculators' own format (its config.json names `speculators_model_type`) is used as
it is. A head in vLLM's native Eagle-3 layout (`LlamaForCausalLMEagle3`, the layout of the
heads this project builds and of heads converted for vLLM) is written again in speculators'
P-EAGLE format, with speculators' own classes:

- the decoder's shape becomes speculators' `transformer_layer_config`;
- the mask token (`ptd_token_id`, `mask_token_id` or `pard_token`) becomes `mask_token_id`;
- `mask_hidden` [1, n_aux x H] becomes [1, 1, n_aux x H];
- a draft vocabulary's `d2t` gets speculators' `t2d` beside it;
- a head without its own `embed_tokens` (vLLM then shares the target's) gets the target's, and
  keeps them as they are (speculators' P-EAGLE would otherwise train them): the head learned
  its other weights around the target's embedding.

The trained K becomes the head's proposal length, and the auxiliary layers stay the head's:
the job extracts the target's hidden states at those layers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from serving.preflight.vllm_facts import MASK_TOKEN_KEYS
from training.contract import HEAD_CONFIG, HEAD_WEIGHTS, ContractError

# vLLM's Eagle-3 flags that speculators' config carries under the same names.
NORM_FLAGS = ("norm_before_residual", "norm_before_fc", "fc_norm", "norm_output")


def read_config(head: Path) -> dict[str, Any]:
    try:
        return json.loads((head / HEAD_CONFIG).read_text())
    except (OSError, ValueError) as error:
        raise ContractError(
            f"the eagle channel's {HEAD_CONFIG} ({head / HEAD_CONFIG}) cannot be read: {error}. "
            f"Give the channel a P-EAGLE head ({HEAD_CONFIG} and {HEAD_WEIGHTS}) or leave it "
            "empty."
        ) from None


def is_speculators_format(config: dict[str, Any]) -> bool:
    return "speculators_model_type" in config


def aux_layer_ids(head: Path) -> list[int] | None:
    """The target layers the head reads, when its config names them (both formats do)."""
    ids = read_config(head).get("eagle_aux_hidden_state_layer_ids")
    return [int(i) for i in ids] if ids else None


def mask_token_id(config: dict[str, Any], head: Path) -> int:
    for key in MASK_TOKEN_KEYS:
        if config.get(key) is not None:
            return int(config[key])
    raise ContractError(
        f"the eagle channel's head ({head}) names no mask token ({', '.join(MASK_TOKEN_KEYS)}): "
        "it is an EAGLE-3 head, not a P-EAGLE one. Start from a P-EAGLE head, or leave the "
        "channel empty to train one from scratch."
    )


def transformer_config(config: dict[str, Any], target: dict[str, Any]):
    from speculators.convert.eagle.utils import (
        build_llama_config_dtype_kwarg,
        build_llama_config_rope_kwargs,
    )
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=config.get("vocab_size", target["vocab_size"]),
        hidden_size=config["hidden_size"],
        intermediate_size=config["intermediate_size"],
        num_hidden_layers=config["num_hidden_layers"],
        num_attention_heads=config["num_attention_heads"],
        num_key_value_heads=config.get("num_key_value_heads", config["num_attention_heads"]),
        head_dim=config.get("head_dim"),
        hidden_act=config.get("hidden_act", "silu"),
        max_position_embeddings=max(
            config.get("max_position_embeddings", 4096),
            target.get("max_position_embeddings", 4096),
        ),
        rms_norm_eps=config.get("rms_norm_eps", 1e-6),
        attention_bias=config.get("attention_bias", False),
        mlp_bias=config.get("mlp_bias", False),
        tie_word_embeddings=False,
        **build_llama_config_rope_kwargs(
            rope_theta=config.get("rope_theta", 10000.0),
            rope_scaling=config.get("rope_scaling"),
        ),
        **build_llama_config_dtype_kwarg(config.get("torch_dtype")),
    )


def vllm_weights(head: Path, target_vocab: int) -> dict[str, Any]:
    """The head's tensors under speculators' names."""
    import torch
    from safetensors.torch import load_file

    weights = {}
    for name, tensor in load_file(str(head / HEAD_WEIGHTS)).items():
        name = name.removeprefix("model.")
        if name.startswith("midlayer."):  # the original EAGLE-3 release's single layer
            name = "layers.0." + name.removeprefix("midlayer.")
        weights[name] = tensor
    if "mask_hidden" in weights:
        weights["mask_hidden"] = weights["mask_hidden"].reshape(1, 1, -1)
    if "d2t" in weights and "t2d" not in weights:
        # vLLM's d2t holds offsets: draft id i is target id i + d2t[i].
        d2t = weights["d2t"].long()
        t2d = torch.zeros(target_vocab, dtype=torch.bool)
        t2d[torch.arange(len(d2t)) + d2t] = True
        weights["t2d"] = t2d
    return weights


def convert(head: Path, target: Path, k: int, out: Path) -> Path:
    """`out`: the vLLM-native head at `head` in speculators' P-EAGLE format, drafting K."""
    from speculators.config import SpeculatorsConfig, VerifierConfig
    from speculators.models.peagle import PEagleDraftModel, PEagleSpeculatorConfig
    from speculators.proposals.greedy import GreedyTokenProposalConfig

    config = read_config(head)
    target_config = json.loads((target / "config.json").read_text())
    target_hidden = config.get("target_hidden_size") or config["hidden_size"]
    if target_hidden != config["hidden_size"] or config["hidden_size"] != target_config.get(
        "hidden_size"
    ):
        raise ContractError(
            f"the eagle channel's head ({head}) is {config['hidden_size']} wide and reads "
            f"{target_hidden}-wide target states, the target is {target_config.get('hidden_size')} "
            "wide; speculators' P-EAGLE trains heads as wide as their target. Start from such a "
            "head, or leave the channel empty."
        )
    draft_vocab = int(config.get("draft_vocab_size") or config.get("vocab_size"))
    weights = vllm_weights(head, int(target_config["vocab_size"]))
    own_embedding = "embed_tokens.weight" in weights
    speculator_config = PEagleSpeculatorConfig(
        transformer_layer_config=transformer_config(config, target_config),
        draft_vocab_size=draft_vocab,
        target_hidden_size=target_hidden,
        eagle_aux_hidden_state_layer_ids=config.get("eagle_aux_hidden_state_layer_ids"),
        mask_token_id=mask_token_id(config, head),
        embed_requires_grad=own_embedding,
        **{flag: bool(config.get(flag, False)) for flag in NORM_FLAGS},
        speculators_config=SpeculatorsConfig(
            algorithm="peagle",
            proposal_methods=[GreedyTokenProposalConfig(speculative_tokens=k)],
            default_proposal_method="greedy",
            verifier=VerifierConfig.from_pretrained(str(target)),
        ),
    )
    model = PEagleDraftModel(speculator_config)
    if model.use_draft_vocab and "d2t" in weights:  # before the target's lm_head is cut by it
        model.load_vocab_mappings(weights["t2d"], weights["d2t"].long())
    if not own_embedding:
        model.load_verifier_weights()  # the target's embedding, as vLLM shares it
    missing, unexpected = model.load_state_dict(weights, strict=False)
    ignored = {"embed_tokens.weight"} if not own_embedding else set()
    ignored |= {"verifier_norm.weight", "verifier_lm_head.weight"}
    if not model.use_draft_vocab:
        ignored |= {"d2t", "t2d"}
    missing = sorted(set(missing) - ignored)
    if missing or unexpected:
        raise ContractError(
            f"the eagle channel's head ({head}) does not fit speculators' P-EAGLE layout: "
            f"missing {missing or 'nothing'}, not expected {sorted(unexpected) or 'nothing'}."
        )
    model.save_pretrained(str(out))
    return out


def prepare(head: Path, target: Path, k: int, out: Path) -> Path:
    """The folder to pass to speculators' `--from-pretrained`."""
    if is_speculators_format(read_config(head)):
        return head
    return convert(head, target, k, out)
