"""How well a trained pair does, measured offline: the heads' acceptance and the target's text.

Two acceptance figures from the same held-out drafts:
- *uniform*: every anchor on the greedy path counts once. It overstates what vLLM measures,
  because serving drafts again right after each rejection, so its drafts crowd into the spans
  that are hard to draft.
- *walk*: drafting as vLLM does it. Start at the prompt's end, draft K, accept the leading
  matches a, move on a + 1 tokens (the accepted drafts and the target's own token), repeat.
  On the trained pair it matches vLLM's per-position counters to about 0.01.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from model_data_sources.heads import DraftHead
from model_data_sources.training import Features, LogitsFn, make_batch

# The target's text ends in a loop when its last LOOP_TAIL tokens repeat with a period of at
# most LOOP_PERIOD tokens.
LOOP_TAIL = 64
LOOP_PERIOD = 32
# The draft lengths a report walks: the sweep's K.
WALK_KS = (3, 5, 7)


@torch.no_grad()
def draft_matches(
    head: DraftHead, logits_fn: LogitsFn, features: Features, depth: int, batch_size: int = 8
) -> list[dict[int, Tensor]]:
    """For each sequence, {anchor: bool[depth]}: which of the `depth` tokens drafted at that
    anchor match the target's greedy tokens, for every anchor whose whole draft lies on the
    greedy path. Anchor j drafts from the target's state at j and the token at j + 1."""
    generator = torch.Generator().manual_seed(0)
    matches: list[dict[int, Tensor]] = []
    for start in range(0, features.tokens.shape[0], batch_size):
        rows = torch.arange(start, min(start + batch_size, features.tokens.shape[0]))
        batch = make_batch(features, rows, 10_000, generator)
        logits, labels, weights, offsets = logits_fn(head, batch)
        correct = logits.argmax(-1) == labels
        num_anchors = batch.anchors.shape[1]
        # Offset 0 of anchor j is the real slot j.
        first = correct[:, offsets == 0].gather(1, batch.anchors.clamp(min=0))
        chains = torch.stack(
            [first]
            + [correct[:, offsets == offset].view(-1, num_anchors) for offset in range(1, depth)],
            dim=-1,
        )
        valid = weights[:, offsets == depth - 1].view(-1, num_anchors) > 0
        for row in range(len(rows)):
            matches.append(
                {
                    int(batch.anchors[row, column]): chains[row, column]
                    for column in range(num_anchors)
                    if valid[row, column]
                }
            )
    return matches


def uniform_acceptance(
    matches: list[dict[int, Tensor]], depth: int
) -> tuple[list[float], list[float]]:
    """Every anchor once: the accuracy per draft offset, and the mean acceptance length at
    K = 1..depth (1 + the expected number of leading draft tokens that match)."""
    table = torch.stack([chain for row in matches for chain in row.values()]).float()
    leading = table.cumprod(dim=1)
    lengths = [1 + leading[:, :k].sum(1).mean().item() for k in range(1, depth + 1)]
    return table.mean(0).tolist(), lengths


@dataclass(frozen=True)
class Walk:
    acceptance_length: float  # 1 + accepted drafts per draft
    per_position: list[float]  # the share of drafts whose position i was accepted
    drafts: int


def walk_acceptance(matches: list[dict[int, Tensor]], prompt_lengths: Tensor, k: int) -> Walk:
    """Draft K at a time as vLLM does, from each prompt's end to the end of its greedy text."""
    drafts, accepted = 0, [0] * k
    for row, chains in enumerate(matches):
        # The target's prefill gives the first new token; the first draft follows it.
        anchor = int(prompt_lengths[row]) - 1
        while anchor in chains:
            leading = int(chains[anchor][:k].long().cumprod(0).sum())
            for position in range(leading):
                accepted[position] += 1
            drafts += 1
            anchor += leading + 1
    if drafts == 0:
        raise ValueError("no draft lies on the greedy path: the held-out answers are too short")
    return Walk(1 + sum(accepted) / drafts, [count / drafts for count in accepted], drafts)


def text_stats(sequences: list[list[int]], prompt_lengths: list[int]) -> dict:
    """How repetitive the target's greedy answers are: distinct 4-grams per 4-gram, the share of
    4-grams seen earlier in the same answer, and the share of answers that end in a loop."""
    distinct = repeated = grams = loops = 0
    for sequence, prompt_length in zip(sequences, prompt_lengths, strict=True):
        answer = sequence[prompt_length:]
        seen: set[tuple[int, ...]] = set()
        for i in range(len(answer) - 3):
            gram = tuple(answer[i : i + 4])
            repeated += gram in seen
            seen.add(gram)
        grams += max(0, len(answer) - 3)
        distinct += len(seen)
        loops += ends_in_loop(answer)
    return {
        "answers": len(sequences),
        "distinct_4": round(distinct / max(1, grams), 3),
        "repeated_4": round(repeated / max(1, grams), 3),
        "loop_rate": round(loops / max(1, len(sequences)), 3),
    }


def ends_in_loop(answer: list[int]) -> bool:
    tail = answer[-LOOP_TAIL:]
    return len(tail) == LOOP_TAIL and any(
        all(tail[i] == tail[i - period] for i in range(period, len(tail)))
        for period in range(1, LOOP_PERIOD + 1)
    )


def head_report(
    head: DraftHead, logits_fn: LogitsFn, features: Features, depth: int
) -> dict[str, object]:
    """A head's offline figures on held-out features, for a training report: the uniform
    accuracy per offset and acceptance length per K, and the walk at K = 3, 5, 7 (those that
    fit the trained depth)."""
    matches = draft_matches(head, logits_fn, features, depth)
    accuracy, lengths = uniform_acceptance(matches, depth)
    walks = {k: walk_acceptance(matches, features.prompt_lengths, k) for k in WALK_KS if k <= depth}
    return {
        "accuracy_per_offset": [round(a, 3) for a in accuracy],
        "acceptance_length_at_k": {k + 1: round(v, 3) for k, v in enumerate(lengths)},
        "walk": {
            k: {
                "acceptance_length": round(walk.acceptance_length, 3),
                "per_position": [round(rate, 3) for rate in walk.per_position],
                "drafts": walk.drafts,
            }
            for k, walk in walks.items()
        },
    }
