"""The tiny demo pair: a Llama target and a P-EAGLE (EAGLE-3 layout) head with random weights.

Shapes respect the CPU build of vLLM: its attention kernels reject head_dim 16, so heads
are 64 wide. The head is written in vLLM's native EAGLE-3 layout
(`LlamaForCausalLMEagle3`), with the extra P-EAGLE parts: a mask token id
(`ptd_token_id`) and a learned `mask_hidden` of width n_aux x target hidden size.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import LlamaConfig, LlamaForCausalLM

from model_data_sources.tokenizer import MASK, build_tokenizer

SEED = 1234


@dataclass(frozen=True)
class TargetShape:
    vocab_size: int = 1024
    hidden_size: int = 128
    num_hidden_layers: int = 8
    num_attention_heads: int = 2
    num_key_value_heads: int = 2
    head_dim: int = 64
    intermediate_size: int = 384
    max_position_embeddings: int = 4096
    # Wide enough that greedy argmax is not decided by float rounding.
    initializer_range: float = 0.1


@dataclass(frozen=True)
class DrafterShape:
    num_hidden_layers: int = 1
    intermediate_size: int = 384
    # vLLM's default for Llama is (2, L // 2, L - 3); stating them keeps the head explicit.
    aux_layer_ids: tuple[int, ...] = (2, 4, 5)
    # The draft depth the head is declared for; the preflight compares K against it.
    trained_positions: int = 16
    extra: dict = field(default_factory=dict)


def target_config(shape: TargetShape, bos_id: int, eos_id: int, pad_id: int) -> LlamaConfig:
    return LlamaConfig(
        **asdict(shape),
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=False,
        bos_token_id=bos_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        torch_dtype="float32",
    )


def build_target(out_dir: Path, shape: TargetShape) -> dict:
    """Write a random-weight Llama target with its tokenizer; return its config as a dict."""
    tokenizer = build_tokenizer(shape.vocab_size)
    config = target_config(
        shape, tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id
    )
    torch.manual_seed(SEED)
    model = LlamaForCausalLM(config).to(torch.float32)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    return json.loads((out_dir / "config.json").read_text())


def drafter_config(target: dict, shape: DrafterShape, mask_token_id: int) -> dict:
    return {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": target["hidden_size"],
        "target_hidden_size": target["hidden_size"],
        "num_hidden_layers": shape.num_hidden_layers,
        "num_attention_heads": target["num_attention_heads"],
        "num_key_value_heads": target["num_key_value_heads"],
        "head_dim": target["head_dim"],
        "intermediate_size": shape.intermediate_size,
        "hidden_act": "silu",
        "rms_norm_eps": target["rms_norm_eps"],
        "rope_theta": target.get("rope_theta", 10000.0),
        "max_position_embeddings": target["max_position_embeddings"],
        "vocab_size": target["vocab_size"],
        "draft_vocab_size": target["vocab_size"],
        "bos_token_id": target["bos_token_id"],
        "eos_token_id": target["eos_token_id"],
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "eagle_aux_hidden_state_layer_ids": list(shape.aux_layer_ids),
        "ptd_token_id": mask_token_id,
        "parallel_drafting": True,
        "num_speculative_tokens_trained": shape.trained_positions,
        **shape.extra,
    }


def drafter_weights(config: dict, seed: int = SEED + 1) -> dict[str, torch.Tensor]:
    """Random weights under the names vLLM's Eagle3 Llama loader expects."""
    generator = torch.Generator().manual_seed(seed)

    def normal(*size: int) -> torch.Tensor:
        return torch.randn(*size, generator=generator) * 0.02

    hidden = config["hidden_size"]
    n_aux = len(config["eagle_aux_hidden_state_layer_ids"])
    target_hidden = config["target_hidden_size"]
    heads, kv_heads, head_dim = (
        config["num_attention_heads"],
        config["num_key_value_heads"],
        config["head_dim"],
    )
    inter = config["intermediate_size"]
    weights: dict[str, torch.Tensor] = {
        "fc.weight": normal(hidden, n_aux * target_hidden),
        "norm.weight": torch.ones(hidden),
        "lm_head.weight": normal(config["draft_vocab_size"], hidden),
        "mask_hidden": normal(1, n_aux * target_hidden),
    }
    for layer in range(config["num_hidden_layers"]):
        prefix = f"layers.{layer}."
        # The first layer reads [embedding, hidden] concatenated: twice as wide.
        qkv_in = 2 * hidden if layer == 0 else hidden
        weights |= {
            prefix + "self_attn.q_proj.weight": normal(heads * head_dim, qkv_in),
            prefix + "self_attn.k_proj.weight": normal(kv_heads * head_dim, qkv_in),
            prefix + "self_attn.v_proj.weight": normal(kv_heads * head_dim, qkv_in),
            prefix + "self_attn.o_proj.weight": normal(hidden, heads * head_dim),
            prefix + "mlp.gate_proj.weight": normal(inter, hidden),
            prefix + "mlp.up_proj.weight": normal(inter, hidden),
            prefix + "mlp.down_proj.weight": normal(hidden, inter),
            prefix + "input_layernorm.weight": torch.ones(hidden),
            prefix + "hidden_norm.weight": torch.ones(hidden),
            prefix + "post_attention_layernorm.weight": torch.ones(hidden),
        }
    return weights


def build_drafter(out_dir: Path, target: dict, target_dir: Path, shape: DrafterShape) -> dict:
    """Write a random-weight P-EAGLE head for `target`; return its config."""
    tokenizer_config = json.loads((target_dir / "tokenizer.json").read_text())
    mask_id = next(t["id"] for t in tokenizer_config["added_tokens"] if t["content"] == MASK)
    config = drafter_config(target, shape, mask_id)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    weights = {name: t.contiguous() for name, t in drafter_weights(config).items()}
    save_file(weights, str(out_dir / "model.safetensors"), metadata={"format": "pt"})
    return config
