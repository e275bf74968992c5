"""The trained demo pair: a small code LM target and a P-EAGLE head for it (and, for the
benchmark's comparison, an EAGLE-3 head: WITH_EAGLE3).

Phases (each with a progress bar): tokenizer and corpus; the target trained as a code LM on the
standard library; greedy generations of the target after held-out chat prompts and agent
openings; the target's aux hidden states and greedy tokens over them; the P-EAGLE head; the
EAGLE-3 head when the recipe has it. Everything
is seeded and single-process, so a rebuild on the same machine writes the same weights.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
from safetensors.torch import save_file
from torch import nn
from tqdm import tqdm
from transformers import LlamaForCausalLM

from model_data_sources import evaluation, training
from model_data_sources.corpus import build_corpus, chat_text
from model_data_sources.grammar import compile_schemas, constrained_labels, generate_constrained
from model_data_sources.heads import DraftHead, HeadShape, kept_anchors
from model_data_sources.tiny import DrafterShape, TargetShape, drafter_config, target_config
from model_data_sources.tokenizer import MASK, build_tokenizer

SEED = 20240917
THREADS = 2  # the budget is two cores; a fixed count also fixes the float summation order


@dataclass(frozen=True)
class Recipe:
    target: TargetShape = TargetShape(
        hidden_size=128,
        num_hidden_layers=16,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=64,
        intermediate_size=384,
        initializer_range=0.02,
    )
    # vLLM's default aux layers for a 16-layer Llama: (2, L // 2, L - 3).
    aux_layer_ids: tuple[int, ...] = (2, 8, 13)
    # The published P-EAGLE heads have 4 layers: a deeper head costs P-EAGLE one pass per step
    # and EAGLE-3 one pass per draft token. Both heads here have the same shape.
    head_layers: int = 4
    head_intermediate_size: int = 384
    window: int = 256
    target_batch: int = 8
    target_steps: int = 900
    target_lr: float = 3e-3
    prompts: int = 640
    # Tool-use conversations among the heads' prompts (the target's calls), up to `window`
    # tokens: schemas are long in this small vocabulary. And JSON questions, answered under
    # the grammar vLLM serves them with (model_data_sources/grammar.py). P-EAGLE K=7 on the
    # structured benchmark: acceptance length 2.35 with 48 and none, 3.15 with 108 and 48,
    # 3.37 with these (code's rose too); they add about 3 minutes to the build.
    tool_prompts: int = 216
    json_prompts: int = 144
    eval_prompts: int = 64
    max_prompt_tokens: int = 192
    new_tokens: int = 128
    depth: int = 8  # draft positions trained: K up to 8
    head_batch: int = 8
    # Both heads get the same data, epochs and about the same slots per step. EAGLE-3's
    # training-time test unrolls every anchor to the full depth: 48 anchors, 336 draft slots.
    # P-EAGLE samples depths (the speculators trainer's recipe): offset d keeps
    # max(0.7 ** d, 0.2) of 128 anchors, 306 slots. Both weight the first draft token's loss
    # 3x. Held-out walk at K=7 on one target: P-EAGLE 4.3 at 3 epochs with 48 anchors at every
    # depth, 5.0 with depth sampling and the weight, 5.8 with depth sampling and 6 epochs, 6.3
    # with all three; EAGLE-3 6.7 at 3 epochs, 7.1 at 6.
    head_epochs: int = 6
    first_weight: float = 3.0
    anchors: int = 48
    peagle_anchors: int = 128
    keep_ratio: float = 0.7
    keep_floor: float = 0.2
    head_lr: float = 2e-3
    # The EAGLE-3 head only serves the benchmark's comparison (make bench builds it, with
    # `--eagle3`): the tests and the image serve P-EAGLE, and it would add 4 minutes.
    heads: tuple[str, ...] = ("peagle",)


# The benchmark's pair: the same target and P-EAGLE head (same seeds, trained first), and an
# EAGLE-3 head beside them for the comparison.
WITH_EAGLE3 = Recipe(heads=("peagle", "eagle3"))


# The first `make serve`'s pair: a 4-layer target and a 2-layer P-EAGLE head for K up to 4,
# trained in about 2.5 minutes on two cores. Its target sees two thirds of the full one's
# tokens, which four layers make cheap; fewer steps (450) or eight layers in the same time left
# its greedy answers looping, or one repeated token, on some corpora. The benchmark and the
# tests of both methods use the full Recipe().
QUICK = Recipe(
    target=replace(Recipe.target, num_hidden_layers=4),
    aux_layer_ids=(1, 2, 3),
    head_layers=2,
    target_steps=600,
    prompts=320,
    tool_prompts=24,
    json_prompts=0,
    eval_prompts=32,
    new_tokens=96,
    depth=4,
    head_epochs=4,
)


def head_shape(recipe: Recipe) -> HeadShape:
    target = recipe.target
    return HeadShape(
        hidden_size=target.hidden_size,
        num_aux=len(recipe.aux_layer_ids),
        num_heads=target.num_attention_heads,
        head_dim=target.head_dim,
        intermediate_size=recipe.head_intermediate_size,
        vocab_size=target.vocab_size,
        num_layers=recipe.head_layers,
    )


def new_head(recipe: Recipe, target: LlamaForCausalLM, parallel: bool, seed: int) -> DraftHead:
    torch.manual_seed(seed)
    head = DraftHead(head_shape(recipe), parallel)
    # Start from the target's own output layer: the head's last hidden state only has to
    # come near the target's.
    with torch.no_grad():
        head.lm_head.weight.copy_(target.lm_head.weight)
        head.norm.weight.copy_(target.model.norm.weight)
    return head


def peagle_training_fn(recipe: Recipe, embed: nn.Embedding, mask_id: int) -> training.LogitsFn:
    """P-EAGLE's training pass, with depth sampling; evaluation drafts every depth."""
    kept = kept_anchors(recipe.peagle_anchors, recipe.depth, recipe.keep_ratio, recipe.keep_floor)
    return training.peagle_fn(embed, mask_id, recipe.depth, kept)


def write_head(
    out_dir: Path, head: DraftHead, target_dir: Path, recipe: Recipe, mask_id: int, parallel: bool
) -> None:
    target = json.loads((target_dir / "config.json").read_text())
    shape = DrafterShape(
        num_hidden_layers=recipe.head_layers,
        intermediate_size=recipe.head_intermediate_size,
        aux_layer_ids=recipe.aux_layer_ids,
        trained_positions=recipe.depth,
    )
    config = drafter_config(target, shape, mask_id)
    if not parallel:
        # A plain EAGLE-3 head: no mask token, no mask_hidden.
        for key in ("ptd_token_id", "parallel_drafting"):
            config.pop(key)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    save_file(head.state_dict_for_vllm(), str(out_dir / "model.safetensors"), {"format": "pt"})


class Laps:
    """Seconds per phase, into the report as each phase ends."""

    def __init__(self, seconds: dict):
        self.seconds = seconds
        self.clock = time.monotonic()

    def __call__(self, name: str) -> None:
        now = time.monotonic()
        self.seconds[name] = round(now - self.clock, 1)
        self.clock = now


@dataclass
class Asked:
    """What the heads learn from: every prompt, the target's greedy answer after it, and
    where the JSON answers (decoded under their grammar) stand among them."""

    prompts: list[list[int]]
    sequences: list[list[int]]
    first_json: int
    json_count: int


def build_trained(target_dir: Path, peagle_dir: Path, eagle3_dir: Path, recipe: Recipe) -> dict:
    """Train and write the pair; return a report of losses, offline acceptance and timings."""
    torch.set_num_threads(THREADS)
    training.deterministic(SEED)
    report: dict = {"recipe": asdict(recipe), "seconds": {}}
    lap = Laps(report["seconds"])
    tokenizer = build_tokenizer(recipe.target.vocab_size)
    mask_id = tokenizer.convert_tokens_to_ids(MASK)
    corpus = build_corpus(SEED, recipe.prompts, recipe.tool_prompts, recipe.json_prompts)
    windows = training.token_windows(
        tokenizer,
        corpus.train_documents,
        recipe.target_steps * recipe.target_batch,
        recipe.window,
    )
    lap("corpus")
    target = train_target(recipe, tokenizer, windows, report)
    target_dir.mkdir(parents=True, exist_ok=True)
    target.save_pretrained(target_dir, safe_serialization=True)
    tokenizer.save_pretrained(target_dir)
    lap("target")
    asked = generate(recipe, target, tokenizer, corpus)
    lap("generate")
    features = hidden_features(recipe, target, tokenizer, asked)
    held_out = len(asked.sequences) - recipe.eval_prompts
    prompt_lengths = [len(prompt) for prompt in asked.prompts]
    report["target_text"] = evaluation.text_stats(
        asked.sequences[held_out:], prompt_lengths[held_out:]
    )
    lap("features")
    out_dirs = {"peagle": peagle_dir, "eagle3": eagle3_dir}
    report["offline"] = {}
    for name, offline in train_heads(recipe, target, target_dir, out_dirs, mask_id, features):
        report["offline"][name] = offline
        lap(name)
    return report


def train_target(recipe: Recipe, tokenizer, windows, report: dict) -> LlamaForCausalLM:
    config = target_config(
        recipe.target, tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id
    )
    config._attn_implementation = "sdpa"
    torch.manual_seed(SEED)
    target = LlamaForCausalLM(config).to(torch.float32)
    with tqdm(total=recipe.target_steps, desc="target  ", unit="step") as progress:
        losses = training.train_target(
            target, windows, recipe.target_batch, recipe.target_lr, progress
        )
    report["target_loss"] = {"first": losses[0], "last10": sum(losses[-10:]) / 10}
    return target


def generate(recipe: Recipe, target: LlamaForCausalLM, tokenizer, corpus) -> Asked:
    """The target's greedy answers: tool calls, JSON (under its grammar), then code (the
    held-out prompts, the last eval_prompts, are code, as the benchmark's are)."""

    def tokens(text: str) -> list[int]:
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    code_prompts = [
        tokens(chat_text(sample, with_answer=False)) for sample in corpus.prompt_samples
    ]
    tool_prompts = [tokens(text) for text in corpus.tool_prompts]
    prompts = [prompt for prompt in tool_prompts if len(prompt) <= recipe.window] + [
        prompt for prompt in code_prompts if len(prompt) <= recipe.max_prompt_tokens
    ]
    with tqdm(total=len(prompts), desc="generate", unit="seq") as progress:
        sequences = training.generate_greedy(
            target, prompts, recipe.new_tokens, 96, tokenizer.pad_token_id, progress
        )
    # The JSON answers, decoded under their grammar, go before the held-out code prompts.
    asked = [(tokens(text), schema) for text, schema in corpus.json_prompts]
    asked = [(prompt, schema) for prompt, schema in asked if len(prompt) <= recipe.window]
    grammars = compile_schemas(tokenizer, recipe.target.vocab_size, [s for _, s in asked])
    with tqdm(total=len(asked), desc="json    ", unit="seq") as progress:
        answered = generate_constrained(
            target, [prompt for prompt, _ in asked], grammars, recipe.new_tokens, progress
        )
    first_json = len([p for p in tool_prompts if len(p) <= recipe.window])
    sequences[first_json:first_json] = answered
    prompts[first_json:first_json] = [prompt for prompt, _ in asked]
    return Asked(prompts, sequences, first_json, len(answered))


def hidden_features(
    recipe: Recipe, target: LlamaForCausalLM, tokenizer, asked: Asked
) -> training.Features:
    """The target's aux hidden states and greedy tokens over every sequence; the JSON rows'
    labels are the tokens the grammar let through."""
    prompt_lengths = [len(prompt) for prompt in asked.prompts]
    with tqdm(total=len(asked.sequences), desc="features", unit="seq") as progress:
        features = training.target_features(
            target,
            asked.sequences,
            prompt_lengths,
            recipe.aux_layer_ids,
            16,
            tokenizer.pad_token_id,
            progress,
        )
    for row in range(asked.first_json, asked.first_json + asked.json_count):
        constrained_labels(features.greedy[row], asked.sequences[row], prompt_lengths[row])
    return features


def train_heads(
    recipe: Recipe,
    target: LlamaForCausalLM,
    target_dir: Path,
    out_dirs: dict[str, Path],
    mask_id: int,
    features: training.Features,
) -> Iterator[tuple[str, dict]]:
    """Each head of the recipe trained on the rows before the held-out ones (the last
    eval_prompts), written, and its name and offline figures (losses, held-out acceptance)."""
    held_out = len(features.tokens) - recipe.eval_prompts
    train_features = split(features, slice(0, held_out))
    eval_features = split(features, slice(held_out, None))
    embed = target.get_input_embeddings()
    embed.requires_grad_(False)
    steps = recipe.head_epochs * (held_out // recipe.head_batch)
    peagle = training.peagle_fn(embed, mask_id, recipe.depth)
    eagle3 = training.eagle3_fn(embed, recipe.depth)
    # name: (parallel, the training pass, anchors per row, the evaluation pass)
    heads = {
        "peagle": (True, peagle_training_fn(recipe, embed, mask_id), recipe.peagle_anchors, peagle),
        "eagle3": (False, eagle3, recipe.anchors, eagle3),
    }
    for name in recipe.heads:
        parallel, training_fn, anchors, logits_fn = heads[name]
        head = new_head(recipe, target, parallel, SEED + 1)
        with tqdm(total=steps, desc=f"{name:8}", unit="step") as progress:
            losses = training.train_head(
                head,
                training_fn,
                train_features,
                recipe.head_batch,
                recipe.head_epochs,
                anchors,
                recipe.head_lr,
                SEED + 2,
                progress,
                recipe.first_weight,
            )
        offline = {
            "loss_first": losses[0],
            "loss_last10": sum(losses[-10:]) / 10,
            **evaluation.head_report(head, logits_fn, eval_features, recipe.depth),
        }
        write_head(out_dirs[name], head, target_dir, recipe, mask_id, parallel)
        yield name, offline


def split(features: training.Features, rows: slice) -> training.Features:
    return training.Features(
        tokens=features.tokens[rows],
        aux=features.aux[rows],
        greedy=features.greedy[rows],
        lengths=features.lengths[rows],
        prompt_lengths=features.prompt_lengths[rows],
    )
