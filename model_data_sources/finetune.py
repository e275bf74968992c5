"""Fine-tune the trained demo P-EAGLE head on a training set exported from captured traffic
(`python -m capture export`, OpenAI chat JSONL), as a user would retrain a head on an
endpoint's own requests.

The head learns from the target's own greedy answers to the captured prompts (regenerated
here, so the hidden states and the tokens are exactly the target's), mixed with a replay of
the prompts it was first trained on, so that what it knew is not forgotten. The target is
unchanged; the new head is written next to it in an /opt/ml tree of its own.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file
from tqdm import tqdm
from transformers import AutoTokenizer, LlamaForCausalLM

from model_data_sources import evaluation, training
from model_data_sources.corpus import build_corpus, chat_text
from model_data_sources.heads import Batch, DraftHead, kept_anchors, peagle_logits
from model_data_sources.tokenizer import MASK
from model_data_sources.trained import (
    SEED,
    THREADS,
    Recipe,
    head_shape,
    split,
    write_head,
)
from training.chat_render import Chat, messages_of, render_ids, tools_of


@dataclass(frozen=True)
class FinetuneRecipe:
    new_tokens: int = 64  # the captured answers' length
    replay_prompts: int = 96  # of the head's original (code) prompts, mixed in
    eval_prompts: int = 16  # of the captured ones, held out for the offline figures
    epochs: int = 4
    batch: int = 8
    lr: float = 1e-3


def captured_prompts(training_set: Path) -> list[Chat]:
    """Each conversation up to (not including) the final assistant answer, with its tools: an
    agent session's call, its result, and the turn after it are each a record of their own."""
    prompts = []
    for line in training_set.read_text().splitlines():
        record = json.loads(line)
        messages = record["messages"]
        if messages and messages[-1]["role"] == "assistant":
            prompts.append({**record, "messages": messages[:-1]})
    return prompts


def chat_prompt_ids(tokenizer, chat: Chat) -> list[int]:
    """The prompt's tokens as vLLM's chat route makes them (training/chat_render.py)."""
    return render_ids(tokenizer, messages_of(chat), tools_of(chat), add_generation_prompt=True)


# An agent session's later turns carry its calls and their results: in this small vocabulary
# a two-tool session's second turn is 250-400 tokens. Keeping them (up to twice the window the
# head first learned tool openings in) took the captured turns kept from 174 to all 246 in
# `make retrain-agent-demo`.
AGENT_PROMPT_WINDOWS = 2


def prompt_limit(recipe: Recipe, chat: Chat) -> int:
    """The longest prompt kept: tool schemas and results are long in this small vocabulary."""
    if tools_of(chat):
        return AGENT_PROMPT_WINDOWS * recipe.window
    return recipe.max_prompt_tokens


def load_head(head_dir: Path, recipe: Recipe) -> DraftHead:
    head = DraftHead(head_shape(recipe), parallel=True)
    head.load_vllm_state(load_file(str(head_dir / "model.safetensors")))
    return head


def features_for(
    target: LlamaForCausalLM,
    prompts: list[list[int]],
    recipe: Recipe,
    new_tokens: int,
    pad_id: int,
    name: str,
) -> training.Features:
    with tqdm(total=len(prompts), desc=f"generate {name}", unit="seq") as progress:
        sequences = training.generate_greedy(target, prompts, new_tokens, 32, pad_id, progress)
    with tqdm(total=len(sequences), desc=f"features {name}", unit="seq") as progress:
        return training.target_features(
            target, sequences, list(map(len, prompts)), recipe.aux_layer_ids, 16, pad_id, progress
        )


def concat(parts: list[training.Features]) -> training.Features:
    """Feature sets of different lengths as one, right-padded to the longest."""
    length = max(part.tokens.shape[1] for part in parts)

    def padded(tensor: torch.Tensor) -> torch.Tensor:
        pad = [0, 0] * (tensor.dim() - 2) + [0, length - tensor.shape[1]]
        return torch.nn.functional.pad(tensor, pad)

    return training.Features(
        tokens=torch.cat([padded(part.tokens) for part in parts]),
        aux=torch.cat([padded(part.aux) for part in parts]),
        greedy=torch.cat([padded(part.greedy) for part in parts]),
        lengths=torch.cat([part.lengths for part in parts]),
        prompt_lengths=torch.cat([part.prompt_lengths for part in parts]),
    )


def fine_tune_logits(recipe: Recipe, embed: torch.nn.Embedding, mask_id: int) -> training.LogitsFn:
    """P-EAGLE's training pass with depth sampling, as the demo head was trained, with each
    offset's kept anchors cut to the batch's: short captured answers leave a batch fewer
    anchors than the recipe keeps (make retrain-demo crashed on short prose answers)."""
    kept = kept_anchors(recipe.peagle_anchors, recipe.depth, recipe.keep_ratio, recipe.keep_floor)

    def logits(head: DraftHead, batch: Batch):
        cut = [min(count, batch.anchors.shape[1]) for count in kept]
        return peagle_logits(head, embed, mask_id, batch, recipe.depth, cut)

    return logits


def finetune(
    opt_ml: Path,
    training_set: Path,
    out: Path,
    recipe: Recipe | None = None,
    tune: FinetuneRecipe | None = None,
) -> dict:
    """Write `out` (model/ linked to opt_ml's target, the fine-tuned head in channel eagle)
    and return a report: the offline acceptance of both heads on held-out captured prompts."""
    recipe, tune = recipe or Recipe(), tune or FinetuneRecipe()
    torch.set_num_threads(THREADS)
    training.deterministic(SEED)
    started = time.monotonic()
    target_dir = opt_ml / "model"
    base_dir = opt_ml / "additional-model-data-sources" / "eagle"
    tokenizer = AutoTokenizer.from_pretrained(target_dir)
    target = LlamaForCausalLM.from_pretrained(target_dir, torch_dtype=torch.float32).eval()
    pad_id = tokenizer.pad_token_id

    conversations = captured_prompts(training_set)
    if len(conversations) <= tune.eval_prompts:
        raise SystemExit(
            f"{training_set} holds {len(conversations)} conversations; fine-tuning needs more "
            f"than {tune.eval_prompts} (capture more requests)."
        )
    captured = [
        prompt
        for chat in conversations
        if len(prompt := chat_prompt_ids(tokenizer, chat)) <= prompt_limit(recipe, chat)
    ]
    replay = [
        tokenizer(chat_text(sample, with_answer=False), add_special_tokens=False)["input_ids"]
        for sample in build_corpus(SEED, recipe.prompts).prompt_samples[: tune.replay_prompts]
    ]
    replay = [prompt for prompt in replay if len(prompt) <= recipe.max_prompt_tokens]
    new = features_for(target, captured, recipe, tune.new_tokens, pad_id, "captured")
    old = features_for(target, replay, recipe, tune.new_tokens, pad_id, "replay  ")
    held_out = new.tokens.shape[0] - tune.eval_prompts
    train = concat([split(new, slice(0, held_out)), old])
    held_out_features = split(new, slice(held_out, None))

    embed = target.get_input_embeddings()
    embed.requires_grad_(False)
    mask_id = tokenizer.convert_tokens_to_ids(MASK)
    logits_fn = training.peagle_fn(embed, mask_id, recipe.depth)
    base = evaluation.head_report(
        load_head(base_dir, recipe), logits_fn, held_out_features, recipe.depth
    )
    head = load_head(base_dir, recipe)
    steps = tune.epochs * (train.tokens.shape[0] // tune.batch)
    with tqdm(total=steps, desc="fine-tune", unit="step") as progress:
        losses = training.train_head(
            head, fine_tune_logits(recipe, embed, mask_id), train, tune.batch, tune.epochs,
            recipe.peagle_anchors, tune.lr, SEED + 3, progress, recipe.first_weight,
        )  # fmt: skip
    fine_tuned = evaluation.head_report(head, logits_fn, held_out_features, recipe.depth)

    out_target = out / "model"
    if out_target.is_symlink() or out_target.exists():
        out_target.unlink() if out_target.is_symlink() else shutil.rmtree(out_target)
    out.mkdir(parents=True, exist_ok=True)
    out_target.symlink_to(target_dir.resolve(), target_is_directory=True)
    head_dir = out / "additional-model-data-sources" / "eagle"
    write_head(head_dir, head, target_dir, recipe, mask_id, parallel=True)
    return {
        "training_set": str(training_set),
        "captured_prompts": len(captured),
        "replay_prompts": len(replay),
        "held_out_prompts": tune.eval_prompts,
        "loss_first": losses[0],
        "loss_last10": sum(losses[-10:]) / min(10, len(losses)),
        "offline_held_out": {"base": base, "fine_tuned": fine_tuned},
        "seconds": round(time.monotonic() - started, 1),
    }
