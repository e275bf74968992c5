"""The training loops: the target as a code LM, then the heads on the target's own outputs.

Short plain-torch loops, single process, fixed seeds. The heads learn from the target's
greedy generations after chat prompts (the distribution they meet when serving), with the
target's greedy next tokens as labels (acceptance is against the target, not the text).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from tqdm import tqdm
from transformers import LlamaForCausalLM, PreTrainedTokenizerFast

from model_data_sources.heads import Batch, DraftHead, eagle3_logits, peagle_logits


def deterministic(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)


def cosine_lr(step: int, total: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr


def optimize(
    params: list[nn.Parameter],
    losses_of: Iterator[Callable[[], Tensor]],
    steps: int,
    lr: float,
    weight_decay: float,
    progress: tqdm,
) -> list[float]:
    """The one training loop: AdamW, warmup then cosine, gradient clipping at 1. Each item of
    `losses_of` computes one step's loss."""
    optimizer = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.95), weight_decay=weight_decay)
    losses = []
    for step, loss_of in enumerate(losses_of):
        set_lr(optimizer, cosine_lr(step, steps, lr, warmup=max(1, steps // 20)))
        loss = loss_of()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
        progress.set_postfix(loss=f"{sum(losses[-10:]) / len(losses[-10:]):.3f}")
        progress.update(1)
    return losses


NATIVE_BF16 = torch.ops.mkldnn._is_mkldnn_bf16_supported()


# ---- The target ---------------------------------------------------------------------------


def token_windows(
    tokenizer: PreTrainedTokenizerFast, documents: list[str], count: int, length: int
) -> Tensor:
    """The documents tokenized end to end and cut into `count` windows of `length` tokens."""
    needed, stream = count * length, []
    for document in documents:
        stream += tokenizer(document, add_special_tokens=False)["input_ids"]
        if len(stream) >= needed:
            break
    if len(stream) < needed:
        raise RuntimeError(f"the corpus has {len(stream)} tokens; training needs {needed}")
    return torch.tensor(stream[:needed]).view(count, length)


def train_target(
    model: LlamaForCausalLM, windows: Tensor, batch_size: int, lr: float, progress: tqdm
) -> list[float]:
    steps = windows.shape[0] // batch_size

    def loss_of(inputs: Tensor) -> Callable[[], Tensor]:
        def loss() -> Tensor:
            # bfloat16 matmuls (weights and optimizer stay float32): about 1.5x faster on a CPU
            # with native bf16, but 15x slower where it is emulated (an AVX2-only EPYC, say).
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=NATIVE_BF16):
                return model(input_ids=inputs, labels=inputs).loss

        return loss

    model.train()
    losses = optimize(
        list(model.parameters()),
        (loss_of(windows[step * batch_size : (step + 1) * batch_size]) for step in range(steps)),
        steps,
        lr,
        weight_decay=0.1,
        progress=progress,
    )
    model.eval()
    return losses


@torch.no_grad()
def generate_greedy(
    model: LlamaForCausalLM,
    prompts: list[list[int]],
    new_tokens: int,
    batch_size: int,
    pad_id: int,
    progress: tqdm,
) -> list[list[int]]:
    """Prompt + the target's greedy continuation, for every prompt (EOS does not stop it,
    as with the benchmark's ignore_eos)."""
    sequences = []
    for start in range(0, len(prompts), batch_size):
        group = prompts[start : start + batch_size]
        width = max(map(len, group))
        input_ids = torch.tensor([[pad_id] * (width - len(p)) + p for p in group])
        attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in group])
        output = model.generate(
            input_ids=input_ids,
            attention_mask=attention,
            max_new_tokens=new_tokens,
            min_new_tokens=new_tokens,
            do_sample=False,
            pad_token_id=pad_id,
            eos_token_id=None,
        )
        for prompt, row in zip(group, output, strict=True):
            sequences.append(prompt + row[width:].tolist())
        progress.update(len(group))
    return sequences


@dataclass
class Features:
    """What the heads learn from, per sequence (right-padded to one length)."""

    tokens: Tensor  # [N, L]
    aux: Tensor  # [N, L, n_aux * hidden], float16 to halve the memory
    greedy: Tensor  # [N, L]
    lengths: Tensor  # [N]
    prompt_lengths: Tensor  # [N]


@torch.no_grad()
def target_features(
    model: LlamaForCausalLM,
    sequences: list[list[int]],
    prompt_lengths: list[int],
    aux_layer_ids: tuple[int, ...],
    batch_size: int,
    pad_id: int,
    progress: tqdm,
) -> Features:
    """The target's aux hidden states exactly as vLLM collects them: the input of decoder layer
    i (hidden + residual, before any norm; id 0 is the embedding), concatenated in id order."""
    length = max(map(len, sequences))
    captured: dict[int, Tensor] = {}
    hooks = [
        model.model.layers[i].register_forward_pre_hook(
            lambda _module, args, kwargs, i=i: captured.__setitem__(
                i, args[0] if args else kwargs["hidden_states"]
            ),
            with_kwargs=True,
        )
        for i in aux_layer_ids
    ]
    tokens = torch.full((len(sequences), length), pad_id)
    for row, sequence in enumerate(sequences):
        tokens[row, : len(sequence)] = torch.tensor(sequence)
    hidden = model.config.hidden_size
    aux = torch.zeros(len(sequences), length, len(aux_layer_ids) * hidden, dtype=torch.float16)
    greedy = torch.zeros(len(sequences), length, dtype=torch.long)
    try:
        for start in range(0, len(sequences), batch_size):
            # Right padding: causal attention keeps the real tokens exact.
            logits = model(input_ids=tokens[start : start + batch_size]).logits
            greedy[start : start + batch_size] = logits.argmax(-1)
            aux[start : start + batch_size] = torch.cat(
                [captured[i] for i in aux_layer_ids], dim=-1
            ).half()
            progress.update(min(batch_size, len(sequences) - start))
    finally:
        for hook in hooks:
            hook.remove()
    return Features(
        tokens,
        aux,
        greedy,
        torch.tensor([len(s) for s in sequences]),
        torch.tensor(prompt_lengths),
    )


# ---- The heads ----------------------------------------------------------------------------


def make_batch(features: Features, rows: Tensor, num_anchors: int, generator: torch.Generator):
    """Rows of `features`, with up to `num_anchors` random anchors each, drawn from the anchors
    whose whole draft lies on the greedy path: j + 1 >= prompt length - 1. A row's anchors are
    in random order (depth sampling keeps a prefix of them), its padding (-1) last."""
    lengths = features.lengths[rows]
    length = int(lengths.max())
    candidates = [
        torch.arange(max(0, int(features.prompt_lengths[row]) - 2), int(features.lengths[row]) - 2)
        for row in rows.tolist()
    ]
    width = min(num_anchors, max(len(c) for c in candidates))
    anchors = torch.full((len(rows), width), -1)
    for index, pool in enumerate(candidates):
        if len(pool) == 0:
            continue
        chosen = pool[torch.randperm(len(pool), generator=generator)[:width]]
        anchors[index, : len(chosen)] = chosen
    return Batch(
        tokens=features.tokens[rows, :length],
        aux=features.aux[rows, :length].float(),
        greedy=features.greedy[rows, :length],
        lengths=lengths,
        anchors=anchors,
    )


LogitsFn = Callable[[DraftHead, Batch], tuple[Tensor, Tensor, Tensor, Tensor]]


def peagle_fn(
    embed: nn.Embedding, mask_token_id: int, depth: int, kept: Sequence[int] | None = None
) -> LogitsFn:
    """P-EAGLE's pass; with `kept` (training), depth sampling (`heads.kept_anchors`)."""
    return lambda head, batch: peagle_logits(head, embed, mask_token_id, batch, depth, kept)


def eagle3_fn(embed: nn.Embedding, depth: int) -> LogitsFn:
    return lambda head, batch: eagle3_logits(head, embed, batch, depth)


def batches(
    features: Features, batch_size: int, epochs: int, num_anchors: int, seed: int
) -> Iterator[Batch]:
    generator = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        order = torch.randperm(features.tokens.shape[0], generator=generator)
        for start in range(0, len(order) - batch_size + 1, batch_size):
            yield make_batch(features, order[start : start + batch_size], num_anchors, generator)


def head_loss(
    logits: Tensor, labels: Tensor, weights: Tensor, offsets: Tensor, first_weight: float
) -> Tensor:
    """Cross-entropy over the valid slots, the real slots (offset 0) weighted `first_weight`:
    every draft's acceptance starts with its first token."""
    weights = weights * torch.where(offsets == 0, first_weight, 1.0)[None, :]
    losses = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="none")
    return (losses * weights.flatten()).sum() / weights.sum().clamp(min=1)


def train_head(
    head: DraftHead,
    logits_fn: LogitsFn,
    features: Features,
    batch_size: int,
    epochs: int,
    num_anchors: int,
    lr: float,
    seed: int,
    progress: tqdm,
    first_weight: float = 1.0,
) -> list[float]:
    params = [p for p in head.parameters() if p.requires_grad]
    steps = epochs * (features.tokens.shape[0] // batch_size)

    def loss_of(batch: Batch) -> Callable[[], Tensor]:
        return lambda: head_loss(*logits_fn(head, batch), first_weight)

    head.train()
    losses = optimize(
        params,
        (loss_of(batch) for batch in batches(features, batch_size, epochs, num_anchors, seed)),
        steps,
        lr,
        weight_decay=0.0,
        progress=progress,
    )
    head.eval()
    return losses
