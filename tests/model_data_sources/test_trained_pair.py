"""The trained pair's training code, checked cheaply: the heads' training layouts against a naive
slot-by-slot reference of what vLLM computes when drafting, the aux hidden states against the
target's own decoder layers, and a few training steps on a tiny config (the loss falls, and two
runs with one seed give the same weights); and, when the trained pair is built, that its heads
pass the preflight checks in the configurations the benchmark runs them in.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from harness.locations import REPO_ROOT
from model_data_sources import training
from model_data_sources.heads import (
    Batch,
    DraftHead,
    HeadShape,
    causal_mask,
    eagle3_logits,
    kept_anchors,
    peagle_logits,
)
from serving import paths
from tests.support.containers import DEMO_ROOT, TRAINED, demo_env

SHAPE = HeadShape(
    hidden_size=32,
    num_aux=3,
    num_heads=2,
    head_dim=16,
    intermediate_size=48,
    vocab_size=40,
    num_layers=2,  # the first layer and a plain one: both kinds are checked
)
MASK_ID = 39
DEPTH = 4


def tiny_batch(seed: int = 0) -> Batch:
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, 38, (2, 12), generator=generator)
    return Batch(
        tokens=tokens,
        aux=torch.randn(2, 12, 3 * SHAPE.hidden_size, generator=generator),
        greedy=torch.randint(0, 38, (2, 12), generator=generator),
        lengths=torch.tensor([12, 9]),
        anchors=torch.tensor([[1, 4, 8], [2, 5, -1]]),
    )


def tiny_head(parallel: bool) -> tuple[DraftHead, torch.nn.Embedding]:
    torch.manual_seed(0)
    head = DraftHead(SHAPE, parallel)
    with torch.no_grad():  # non-trivial norms, so a swapped norm would show
        for module in head.modules():
            if hasattr(module, "eps"):
                module.weight.uniform_(0.5, 1.5)
    return head.eval(), torch.nn.Embedding(SHAPE.vocab_size, SHAPE.hidden_size)


def run(head, embed, tokens, hidden, positions):
    """Slots of one sequence, each attending to all earlier slots (a plain causal pass)."""
    logits, prenorm, _ = head.step(
        embed(torch.tensor(tokens))[None],
        hidden[None],
        torch.tensor(positions)[None],
        causal_mask(len(tokens), 1),
    )
    return logits[0], prenorm[0]


@torch.no_grad()
def test_peagle_layout_matches_vllm_drafting_slot_by_slot():
    head, embed = tiny_head(parallel=True)
    batch = tiny_batch()
    logits, labels, weights, offsets = peagle_logits(head, embed, MASK_ID, batch, DEPTH)
    num_anchors = batch.anchors.shape[1]
    for row in range(2):
        for index, anchor in enumerate(batch.anchors[row].tolist()):
            if anchor < 0:
                continue
            # vLLM's parallel pass: real slots 0..anchor (token x_{j+1}, fc(aux_j), position j),
            # then DEPTH-1 mask slots (mask token, fc(mask_hidden), positions anchor+1..).
            real = list(range(anchor + 1))
            tokens = [int(batch.tokens[row, j + 1]) for j in real] + [MASK_ID] * (DEPTH - 1)
            hidden = torch.cat(
                [
                    head.fc(batch.aux[row, : anchor + 1]),
                    head.fc(head.mask_hidden).expand(DEPTH - 1, -1),
                ]
            )
            expected, _ = run(head, embed, tokens, hidden, list(range(anchor + DEPTH)))
            for offset in range(DEPTH):
                if offset == 0:
                    got = logits[row, anchor]
                else:
                    got = logits[row, offsets == offset][index]
                    assert (
                        labels[row, offsets == offset][index]
                        == batch.greedy[row, min(anchor + 1 + offset, 11)]
                        or weights[row, offsets == offset][index] == 0
                    )
                torch.testing.assert_close(got, expected[anchor + offset], atol=1e-5, rtol=1e-4)
    assert logits.shape[1] == 11 + num_anchors * (DEPTH - 1)


@torch.no_grad()
def test_depth_sampling_drafts_fewer_anchors_deeper_and_keeps_their_chains_exact():
    head, embed = tiny_head(parallel=True)
    batch = tiny_batch()
    kept = kept_anchors(3, DEPTH, keep_ratio=0.5, floor=0.2)
    assert kept == [2, 1, 1]
    full = peagle_logits(head, embed, MASK_ID, batch, DEPTH)
    sampled = peagle_logits(head, embed, MASK_ID, batch, DEPTH, kept)
    assert sampled[0].shape[1] == 11 + sum(kept)
    for offset, count in zip(range(1, DEPTH), kept, strict=True):
        # The first `count` anchors draft this offset, exactly as with every anchor kept: a
        # mask slot sees only the real slots and its own chain, and the chain is whole.
        for got, want in zip(sampled[:3], full[:3], strict=True):
            torch.testing.assert_close(
                got[:, sampled[3] == offset], want[:, full[3] == offset][:, :count]
            )


@torch.no_grad()
def test_eagle3_unrolled_layout_matches_sequential_drafting():
    head, embed = tiny_head(parallel=False)
    batch = tiny_batch(1)
    logits, _, _, offsets = eagle3_logits(head, embed, batch, DEPTH)
    for row in range(2):
        for index, anchor in enumerate(batch.anchors[row].tolist()):
            if anchor < 0:
                continue
            # vLLM's sequential drafting: the real pass, then one slot per step that reads the
            # next token and the previous step's prenorm output, appended to the same KV cache.
            tokens = [int(batch.tokens[row, j + 1]) for j in range(anchor + 1)]
            hidden = head.fc(batch.aux[row, : anchor + 1])
            step_logits, prenorm = run(head, embed, tokens, hidden, list(range(anchor + 1)))
            torch.testing.assert_close(logits[row, anchor], step_logits[anchor])
            for offset in range(1, DEPTH):
                tokens.append(int(batch.tokens[row, min(anchor + 1 + offset, 11)]))
                hidden = torch.cat([hidden, prenorm[-1:]])
                step_logits, step_prenorm = run(
                    head, embed, tokens, hidden, list(range(anchor + 1 + offset))
                )
                # Earlier slots are unchanged by later ones (causal), so keep their prenorms.
                prenorm = torch.cat([prenorm, step_prenorm[-1:]])
                got = logits[row, offsets == offset][index]
                torch.testing.assert_close(got, step_logits[-1], atol=1e-5, rtol=1e-4)


@torch.no_grad()
def test_aux_hidden_states_are_decoder_layer_inputs():
    config = LlamaConfig(
        vocab_size=40,
        hidden_size=32,
        num_hidden_layers=4,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=16,
        intermediate_size=48,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    sequences = [[1, 5, 7, 9, 3], [2, 4, 6]]
    features = training.target_features(
        model, sequences, [2, 1], (0, 2, 3), batch_size=2, pad_id=0, progress=_Quiet()
    )
    ids = torch.tensor([sequences[0]])
    output = model(input_ids=ids, output_hidden_states=True)
    # hidden_states[i] is the input of layer i: the embedding for 0, else layer i-1's output.
    expected = torch.cat([output.hidden_states[i] for i in (0, 2, 3)], dim=-1)[0]
    torch.testing.assert_close(features.aux[0, :5].float(), expected, atol=2e-3, rtol=2e-3)
    assert features.greedy[0, :5].tolist() == output.logits[0].argmax(-1).tolist()


class _Quiet:
    def update(self, _count: int) -> None:
        pass

    def set_postfix(self, **_values) -> None:
        pass


def train_tiny(seed: int) -> tuple[list[float], dict[str, torch.Tensor]]:
    training.deterministic(seed)
    generator = torch.Generator().manual_seed(seed)
    # A learnable toy target: the greedy token is a fixed function of the previous token.
    tokens = torch.randint(0, 38, (16, 24), generator=generator)
    rule = torch.randperm(38, generator=generator)
    tokens[:, 1:] = rule[tokens[:, :-1]]
    features = training.Features(
        tokens=tokens,
        aux=torch.randn(16, 24, 3 * SHAPE.hidden_size, generator=generator).half(),
        greedy=rule[tokens],
        lengths=torch.full((16,), 24),
        prompt_lengths=torch.full((16,), 4),
    )
    head, embed = tiny_head(parallel=True)
    losses = training.train_head(
        head,
        training.peagle_fn(embed, MASK_ID, DEPTH),
        features,
        batch_size=4,
        epochs=20,
        num_anchors=6,
        lr=1e-2,
        seed=seed,
        progress=_Quiet(),
    )
    return losses, head.state_dict_for_vllm()


def test_peagle_training_learns_and_is_deterministic():
    losses, weights = train_tiny(seed=7)
    again_losses, again_weights = train_tiny(seed=7)
    assert sum(losses[-4:]) / 4 < 0.5 * sum(losses[:4]) / 4
    assert losses == again_losses
    for name, tensor in weights.items():
        assert torch.equal(tensor, again_weights[name]), name
    assert set(weights) >= {"fc.weight", "mask_hidden", "layers.0.hidden_norm.weight"}


@pytest.mark.engine  # the trained pair `make test` builds
@pytest.mark.skipif(not TRAINED, reason="the trained pair is not built (make trained-model)")
@pytest.mark.parametrize("k", [3, 7])
def test_trained_head_passes_preflight(k: int):
    config = {
        "model": str(paths.channel_dir(DEMO_ROOT, paths.DRAFTER_CHANNEL)),
        "method": "eagle3",
        "num_speculative_tokens": k,
        "parallel_drafting": True,
    }
    result = subprocess.run(
        [sys.executable, "-m", "serving", "check"],
        env=demo_env(SM_VLLM_SPECULATIVE_CONFIG=json.dumps(config)),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
