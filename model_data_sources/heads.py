"""The drafter head for training: plain torch, the same arithmetic as vLLM's `llama_eagle3.py`.

vLLM's `LlamaForCausalLMEagle3` with default flags (norm_before_residual, norm_before_fc,
fc_norm and norm_output all off) computes, per slot:

    h      = fc(aux)              target aux hidden states, or mask_hidden, through fc
             (or, in sequential EAGLE-3 steps 2.., the head's own previous `prenorm`, no fc)
    layer 0:  x = cat(input_layernorm(embed(token)), hidden_norm(h))     residual = h
              r = attn(x) + h;  h = mlp(post_attention_layernorm(r)) + r
    layer i:  a plain Llama decoder layer on h (its attention reads only h)
    prenorm = h after the last layer
    logits  = lm_head(norm(prenorm))

The embedding is the target's (the checkpoint has no embed_tokens, so vLLM shares the target's);
the head owns fc, the layers, norm, lm_head and, for P-EAGLE, mask_hidden. `state_dict_for_vllm`
names the weights the way vLLM's loader expects.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import Tensor, nn


@dataclass(frozen=True)
class HeadShape:
    hidden_size: int
    num_aux: int
    num_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    num_layers: int = 1
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate(x: Tensor, positions: Tensor, theta: float) -> Tensor:
    """Neox-style rotary embedding (vLLM's default for Llama). x: [B, H, N, D], positions [B, N]."""
    half = x.shape[-1] // 2
    inv_freq = 1.0 / theta ** (torch.arange(0, half, dtype=torch.float32) / half)
    angles = positions.to(torch.float32)[..., None] * inv_freq  # [B, N, half]
    cos, sin = angles.cos()[:, None], angles.sin()[:, None]
    first, second = x[..., :half], x[..., half:]
    return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)


KeyValue = tuple[Tensor, Tensor]  # keys and values [B, H, M, D] of one layer


class DecoderLayer(nn.Module):
    """One Llama decoder layer; layer 0 of a head reads 2 x hidden (embedding and hidden)."""

    def __init__(self, shape: HeadShape, first: bool) -> None:
        super().__init__()
        hidden, width = shape.hidden_size, shape.num_heads * shape.head_dim
        eps = shape.rms_norm_eps
        self.shape = shape
        self.first = first
        self.input_layernorm = RMSNorm(hidden, eps)
        if first:
            self.hidden_norm = RMSNorm(hidden, eps)
        in_size = 2 * hidden if first else hidden
        self.q_proj = nn.Linear(in_size, width, bias=False)
        self.k_proj = nn.Linear(in_size, width, bias=False)
        self.v_proj = nn.Linear(in_size, width, bias=False)
        self.o_proj = nn.Linear(width, hidden, bias=False)
        self.post_attention_layernorm = RMSNorm(hidden, eps)
        self.gate_proj = nn.Linear(hidden, shape.intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden, shape.intermediate_size, bias=False)
        self.down_proj = nn.Linear(shape.intermediate_size, hidden, bias=False)

    def heads(self, x: Tensor) -> Tensor:
        batch, length, _ = x.shape
        return x.view(batch, length, self.shape.num_heads, self.shape.head_dim).transpose(1, 2)

    def forward(
        self,
        embeds: Tensor,
        hidden: Tensor,
        positions: Tensor,
        mask: Tensor,
        past: KeyValue | None,
    ) -> tuple[Tensor, KeyValue]:
        if self.first:
            x = torch.cat([self.input_layernorm(embeds), self.hidden_norm(hidden)], dim=-1)
        else:
            x = self.input_layernorm(hidden)
        theta = self.shape.rope_theta
        query = rotate(self.heads(self.q_proj(x)), positions, theta)
        key = rotate(self.heads(self.k_proj(x)), positions, theta)
        value = self.heads(self.v_proj(x))
        all_key, all_value = key, value
        if past is not None:
            all_key = torch.cat([past[0], key], dim=2)
            all_value = torch.cat([past[1], value], dim=2)
        attended = F.scaled_dot_product_attention(
            query, all_key, all_value, attn_mask=mask[:, None]
        )
        residual = self.o_proj(attended.transpose(1, 2).flatten(2)) + hidden
        normed = self.post_attention_layernorm(residual)
        output = self.down_proj(F.silu(self.gate_proj(normed)) * self.up_proj(normed)) + residual
        return output, (key, value)

    def named_weights(self, prefix: str) -> dict[str, Tensor]:
        names = {
            prefix + "input_layernorm.weight": self.input_layernorm.weight,
            prefix + "post_attention_layernorm.weight": self.post_attention_layernorm.weight,
        }
        if self.first:
            names[prefix + "hidden_norm.weight"] = self.hidden_norm.weight
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            names[f"{prefix}self_attn.{name}.weight"] = getattr(self, name).weight
        for name in ("gate_proj", "up_proj", "down_proj"):
            names[f"{prefix}mlp.{name}.weight"] = getattr(self, name).weight
        return names


class DraftHead(nn.Module):
    def __init__(self, shape: HeadShape, parallel: bool) -> None:
        super().__init__()
        self.shape = shape
        hidden = shape.hidden_size
        self.fc = nn.Linear(shape.num_aux * hidden, hidden, bias=False)
        self.layers = nn.ModuleList(
            DecoderLayer(shape, first=index == 0) for index in range(shape.num_layers)
        )
        self.norm = RMSNorm(hidden, shape.rms_norm_eps)
        self.lm_head = nn.Linear(hidden, shape.vocab_size, bias=False)
        self.mask_hidden = (
            nn.Parameter(torch.randn(1, shape.num_aux * hidden) * 0.02) if parallel else None
        )
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=0.02)

    def step(
        self,
        embeds: Tensor,  # [B, N, hidden]: the target's embedding of each slot's token
        hidden: Tensor,  # [B, N, hidden]: fc output, or the previous step's prenorm
        positions: Tensor,  # [B, N]
        mask: Tensor,  # [B, N, M + N] bool: may slot n attend to key m (past keys first)
        past: list[KeyValue] | None = None,  # per layer, the keys and values of earlier slots
    ) -> tuple[Tensor, Tensor, list[KeyValue]]:
        """One pass of the layers. Returns (logits, prenorm, this pass's keys and values)."""
        cache = []
        for index, layer in enumerate(self.layers):
            hidden, key_value = layer(
                embeds, hidden, positions, mask, past[index] if past is not None else None
            )
            cache.append(key_value)
        return self.lm_head(self.norm(hidden)), hidden, cache

    def state_dict_for_vllm(self) -> dict[str, Tensor]:
        return {
            name: tensor.detach().to(torch.float32).contiguous()
            for name, tensor in self.vllm_parameters().items()
        }

    def load_vllm_state(self, state: dict[str, Tensor]) -> None:
        """The inverse of `state_dict_for_vllm`: a written head's weights, loaded back."""
        parameters = self.vllm_parameters()
        if set(state) != set(parameters):
            raise ValueError(f"head weights differ: {sorted(set(state) ^ set(parameters))}")
        with torch.no_grad():
            for name, parameter in parameters.items():
                parameter.copy_(state[name].view_as(parameter))

    def vllm_parameters(self) -> dict[str, Tensor]:
        names = {
            "fc.weight": self.fc.weight,
            "norm.weight": self.norm.weight,
            "lm_head.weight": self.lm_head.weight,
        }
        for index, layer in enumerate(self.layers):
            names |= layer.named_weights(f"layers.{index}.")
        if self.mask_hidden is not None:
            names["mask_hidden"] = self.mask_hidden
        return names


# ---- Training layouts -------------------------------------------------------------------
#
# A training sequence holds tokens x_0..x_{L-1}, the target's aux hidden states aux_t and its
# greedy next tokens g_t = argmax logits_t. As in vLLM, the real slot j reads token x_{j+1}
# with aux_j at position j and predicts g_{j+1}. An anchor j drafts on from there:
# offset d (d = 1..depth-1) sits at position j + d and predicts g_{j+1+d}.


@dataclass
class Batch:
    tokens: Tensor  # [B, L] x_t (padding anywhere past `lengths`)
    aux: Tensor  # [B, L, n_aux * hidden]
    greedy: Tensor  # [B, L] g_t
    lengths: Tensor  # [B]
    anchors: Tensor  # [B, A] anchor positions j, or -1 for none


def real_slots(batch: Batch) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Tokens, positions, labels and loss weights of the L-1 real slots."""
    length = batch.tokens.shape[1] - 1
    positions = torch.arange(length).expand(batch.tokens.shape[0], length)
    valid = positions + 1 < batch.lengths[:, None]
    return batch.tokens[:, 1:], positions, batch.greedy[:, 1:], valid


def offset_slots(batch: Batch, offset: int) -> tuple[Tensor, Tensor, Tensor]:
    """Positions, label and validity of offset `offset` for every anchor."""
    anchors = batch.anchors.clamp(min=0)
    label_index = anchors + 1 + offset
    valid = (batch.anchors >= 0) & (label_index < batch.lengths[:, None])
    label = batch.greedy.gather(1, label_index.clamp(max=batch.greedy.shape[1] - 1))
    return anchors + offset, label, valid


def causal_mask(count: int, batch_size: int) -> Tensor:
    return torch.ones(count, count, dtype=torch.bool).tril().expand(batch_size, count, count)


def kept_anchors(num_anchors: int, depth: int, keep_ratio: float, floor: float) -> list[int]:
    """Depth sampling (the speculators trainer's P-EAGLE recipe): how many anchors draft each
    offset 1..depth-1. Offset d keeps max(keep_ratio ** d, floor) of them, so deep offsets, the
    hardest and least used, cost a fraction of the slots and the budget goes to more anchors."""
    return [
        max(1, math.ceil(num_anchors * max(keep_ratio**offset, floor)))
        for offset in range(1, depth)
    ]


def peagle_logits(
    head: DraftHead,
    embed: nn.Embedding,
    mask_token_id: int,
    batch: Batch,
    depth: int,
    kept: Sequence[int] | None = None,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """P-EAGLE's parallel pass: real slots, then depth-1 mask slots per anchor, in one forward.

    Mask slots read the mask token and fc(mask_hidden); each attends to the real slots up to its
    anchor and to its own anchor's earlier mask slots (the P-EAGLE paper's attention). With
    `kept` (see `kept_anchors`), offset d drafts only the first kept[d-1] anchors of the batch:
    a random subset, since the batch's anchors are in random order, and each offset's subset
    holds the next one's, so every chain is whole. Returns logits [B, S, V], labels [B, S],
    weights [B, S] and the offset of every slot [S].
    """
    tokens, positions, labels, valid = real_slots(batch)
    batch_size, num_real = tokens.shape
    all_embeds = [embed(tokens)]
    all_hidden = [head.fc(batch.aux[:, :-1])]
    all_positions, all_labels, all_valid = [positions], [labels], [valid]
    slot_anchor = [torch.arange(num_real).expand(batch_size, num_real)]
    slot_offset = [torch.zeros(num_real, dtype=torch.long)]
    assert head.mask_hidden is not None
    mask_hidden = head.fc(head.mask_hidden)
    mask_embed = embed(torch.tensor(mask_token_id))
    for offset in range(1, depth):
        width = batch.anchors.shape[1]  # fewer than kept[0] when every row is short
        count = width if kept is None else min(kept[offset - 1], width)
        drafting = replace(batch, anchors=batch.anchors[:, :count])
        offset_positions, offset_labels, offset_valid = offset_slots(drafting, offset)
        all_embeds.append(mask_embed.expand(batch_size, count, -1))
        all_hidden.append(mask_hidden.expand(batch_size, count, -1))
        all_positions.append(offset_positions)
        all_labels.append(offset_labels)
        all_valid.append(offset_valid)
        slot_anchor.append(drafting.anchors)
        slot_offset.append(torch.full((count,), offset))
    anchor = torch.cat(slot_anchor, dim=1)  # [B, S]; -1 never matches a real slot
    offset = torch.cat(slot_offset)  # [S]
    query_anchor, key_anchor = anchor[:, :, None], anchor[:, None, :]
    key_is_real = (offset == 0)[None, None, :]
    same_chain = (query_anchor == key_anchor) & (offset[None, None, :] <= offset[None, :, None])
    mask = (key_is_real & (key_anchor <= query_anchor)) | same_chain
    mask |= torch.eye(anchor.shape[1], dtype=torch.bool)  # no empty rows for padding slots
    logits, _, _ = head.step(
        torch.cat(all_embeds, dim=1),
        torch.cat(all_hidden, dim=1),
        torch.cat(all_positions, dim=1),
        mask,
    )
    return logits, torch.cat(all_labels, dim=1), torch.cat(all_valid, dim=1).float(), offset


def eagle3_logits(
    head: DraftHead, embed: nn.Embedding, batch: Batch, depth: int
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """EAGLE-3's sequential drafting, unrolled (training-time test) over `depth` steps.

    Step 0 is the real slots. Step d (d >= 1) feeds each anchor the token at offset d (on the
    target's greedy path that is the previous step's label) with the head's own previous
    prenorm output as hidden state, attending to the real slots up to the anchor and to the
    anchor's earlier steps, as vLLM's KV cache holds them. Same returns as `peagle_logits`.
    """
    tokens, positions, labels, valid = real_slots(batch)
    batch_size, num_real = tokens.shape
    logits, prenorm, real_cache = head.step(
        embed(tokens), head.fc(batch.aux[:, :-1]), positions, causal_mask(num_real, batch_size)
    )
    all_logits, all_labels, all_valid = [logits], [labels], [valid]
    offsets = [torch.zeros(num_real, dtype=torch.long)]
    anchors = batch.anchors.clamp(min=0)
    num_anchors = anchors.shape[1]
    hidden = prenorm.gather(1, anchors[..., None].expand(-1, -1, prenorm.shape[-1]))
    sees_real = torch.arange(num_real)[None, None, :] <= anchors[:, :, None]  # [B, A, R]
    own_chain = torch.eye(num_anchors, dtype=torch.bool).expand(batch_size, -1, -1)
    chain: list[list[KeyValue]] = []  # per step, per layer
    for offset in range(1, depth):
        offset_positions, offset_labels, offset_valid = offset_slots(batch, offset)
        token_index = (anchors + 1 + offset).clamp(max=batch.tokens.shape[1] - 1)
        offset_tokens = batch.tokens.gather(1, token_index)
        past = [
            (
                torch.cat([real_cache[layer][0], *(step[layer][0] for step in chain)], dim=2),
                torch.cat([real_cache[layer][1], *(step[layer][1] for step in chain)], dim=2),
            )
            for layer in range(len(real_cache))
        ]
        mask = torch.cat([sees_real, *([own_chain] * offset)], dim=2)
        logits, hidden, cache = head.step(
            embed(offset_tokens), hidden, offset_positions, mask, past
        )
        chain.append(cache)
        all_logits.append(logits)
        all_labels.append(offset_labels)
        all_valid.append(offset_valid)
        offsets.append(torch.full((num_anchors,), offset))
    return (
        torch.cat(all_logits, dim=1),
        torch.cat(all_labels, dim=1),
        torch.cat(all_valid, dim=1).float(),
        torch.cat(offsets),
    )
