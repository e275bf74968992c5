"""A study, not a step of the recipe: which P-EAGLE recipe pays on the real pair's data.
Each variant is a head trained by the product's trainer (training/) on the recipe's data (its
answers, packed rows and hidden states, made once by recipe.py's own steps), then measured
by vLLM at K=7 (EAGLE-3 at K=3) on three held-out sets: the recipe's held-out conversations,
HumanEval's prompts and everyday questions written by hand (workloads/prompts.py), neither
of which the recipe's prompt generator writes.

    python -m model_data_sources.smollm2.recipe_study [--work DIR] [VARIANT ...]

Every variant keeps its result in DIR/study/<variant>/result.json and is skipped when that
is there; the trainer resumes a variant from its last checkpoint. The figures go to
docs/results/peagle-recipe.md; once a recipe is chosen, this module goes.

A variant with `bank_shards` learns from the prompt bank's answers kept in the repository
(answer_bank.py), the first N shards of its answer order, instead of the recipe's: every
conversation but those whose first question is one of the recipe's held-out prompts (the
bank's templates write some of them word for word), measured on the same held-out sets.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from model_data_sources.smollm2 import recipe

# Prompts of each set measured, and the tokens drafted for each.
PER_SET = 40
MEASURE_TOKENS = 96


@dataclass(frozen=True)
class Variant:
    speculator_type: str = "peagle"
    num_layers: int = 1
    precision: str = "bfloat16"
    epochs: int = 1
    k: int = 8  # trained depth
    measured_k: int = 7
    bank_shards: int = 0  # > 0: learn from the first N shards of the bank's answer order
    overrides: dict[str, Any] = field(default_factory=dict)


VARIANTS = {
    "peagle-1L-fp32": Variant(precision="float32"),
    "peagle-1L-bf16": Variant(),
    "peagle-2L-bf16": Variant(num_layers=2),
    "peagle-4L-bf16": Variant(num_layers=4),
    "eagle3-1L-bf16": Variant(speculator_type="eagle3", k=4, measured_k=3),
    "peagle-1L-bf16-bank8": Variant(bank_shards=8),
    "peagle-4L-bf16-bank8": Variant(num_layers=4, bank_shards=8),
}


def hyperparameters(variant: Variant):
    head = recipe.Head("eagle", variant.speculator_type, variant.k, (variant.measured_k,))
    return replace(
        recipe.hyperparameters(head),
        num_layers=variant.num_layers,
        precision=variant.precision,
        epochs=variant.epochs,
        checkpoints_per_epoch=4,
        **variant.overrides,
    )


def held_out(data: recipe.Split) -> dict[str, list[dict[str, Any]]]:
    from workloads.prompts import everyday_questions, humaneval_prompts, payload_for

    recipe_sets = recipe.held_out_sets(data)
    return {
        "recipe_chat": recipe_sets["chat"][:PER_SET],
        "recipe_code": recipe_sets["code"][:PER_SET],
        "humaneval": [payload_for(p, "chat") for p in humaneval_prompts()[:PER_SET]],
        "everyday": [{"messages": [{"role": "user", "content": q}]} for q in everyday_questions()],
    }


def data(target: Path, work: Path) -> tuple[recipe.Split, Path, list[int]]:
    """The recipe's own data steps (each skipped when done)."""
    from training.hidden_states import aux_layer_ids

    split = recipe.split()
    answered = recipe.answer_all(target, split, work)
    learn_from = set(split.train)
    rows = [row for index, row in answered if index in learn_from]
    data_dir = recipe.prepare(target, rows, work)
    config = json.loads((target / "config.json").read_text())
    aux_ids = aux_layer_ids(int(config["num_hidden_layers"]))
    recipe.hidden(target, data_dir, aux_ids)
    return split, data_dir, aux_ids


def bank_rows(target: Path, split: recipe.Split, shards: int) -> list[Any]:
    """Training rows of the bank's first `shards` answered shards, rendered as the endpoint
    renders them, without the recipe's held-out prompts."""
    from model_data_sources.smollm2 import answer_bank, prompt_bank
    from training.chat_render import serving_tokenizer
    from training.rows import tokenized

    bank = answer_bank.shards(prompt_bank.conversations())
    names = [answer_bank.shard_name(i) for i in answer_bank.answer_order(len(bank))[:shards]]
    missing = sorted(set(names) - set(answer_bank.read_manifest()["shards"]))
    if missing:
        raise SystemExit(
            f"{', '.join(missing)} of the bank's first {shards} shards to answer are not "
            "answered yet (python -m model_data_sources.smollm2 answer-bank)"
        )
    held_out = {split.conversations[index]["messages"][0]["content"] for index in split.held_out}
    chats = [
        {key: chat[key] for key in ("messages", "tools") if key in chat}
        for chat in answer_bank.read_shards(names)
        if chat["messages"][0]["content"] not in held_out
    ]
    return tokenized(serving_tokenizer(target), chats, recipe.MAX_LENGTH)


def bank_data(target: Path, work: Path, split: recipe.Split, shards: int, aux_ids: list[int]):
    """The bank's packed rows and hidden states, made once for each number of shards."""
    folder = work / f"bank-{shards}"
    if not (folder / "data" / ".prepared").is_file():
        recipe.prepare(target, bank_rows(target, split, shards), folder)
    recipe.hidden(target, folder / "data", aux_ids)
    return folder / "data"


def steps_of(save_dir: Path) -> int:
    states = sorted(save_dir.glob("*/training_state.json"))
    return max((json.loads(p.read_text()).get("global_step", 0) for p in states), default=0)


def run_variant(
    name: str, target: Path, split: recipe.Split, data_dir: Path, aux_ids: list[int], work: Path
) -> dict[str, Any]:
    from training import choice
    from training.job import train_argv
    from training.steps import run_step

    folder = work / "study" / name
    result_file = folder / "result.json"
    if result_file.is_file():
        return json.loads(result_file.read_text())
    variant = VARIANTS[name]
    hp = hyperparameters(variant)
    save_dir = folder / "checkpoints"
    clock_file = folder / "train_seconds"
    seconds = float(clock_file.read_text()) if clock_file.is_file() else 0.0
    finished = save_dir / str(hp.epochs - 1) / "training_state.json"
    if not (finished.is_file() and json.loads(finished.read_text())["local_step"] == 0):
        folder.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        try:
            run_step(train_argv(target, aux_ids, data_dir, save_dir, None, hp), name)
        finally:
            clock_file.write_text(str(seconds + time.monotonic() - started))
    seconds = float(clock_file.read_text())
    checkpoint = save_dir / str(hp.epochs - 1)
    head = folder / "head"
    validation = choice.export_head(checkpoint, head, "/opt/ml/model")
    choice.check_head(target, head, variant.measured_k)
    options = (f"--max-tokens={MEASURE_TOKENS}", f"--dtype={recipe.dtype()}")
    measured = choice.measure_acceptance(
        target, head, variant.measured_k, held_out(split), folder / "measure", options
    )
    steps = steps_of(save_dir)
    result = {
        "variant": name,
        "hyperparameters": {
            key: getattr(hp, key)
            for key in ("speculator_type", "num_layers", "precision", "epochs", "learning_rate")
        },
        "train_seconds": round(seconds, 1),
        "steps": steps,
        "seconds_per_step": round(seconds / steps, 2) if steps else None,
        "validation": validation,
        "measured_k": variant.measured_k,
        "held_out": measured,
    }
    result_file.write_text(json.dumps(result, indent=2) + "\n")
    return result


def table(results: list[dict[str, Any]]) -> str:
    sets = ("recipe_chat", "recipe_code", "humaneval", "everyday")
    lines = [
        "| variant | K | s/step | train s | " + " | ".join(sets) + " |",
        "|---|---|---|---|" + "---|" * len(sets),
    ]
    for result in results:
        cells = []
        for name in sets:
            figures = result["held_out"].get(name, {})
            length = figures.get("mean_acceptance_length")
            by_position = " ".join(f"{v:.2f}" for v in figures.get("acceptance_by_position", []))
            cells.append(f"{length:.2f} ({by_position})" if length else "-")
        lines.append(
            f"| {result['variant']} | {result['measured_k']} | {result['seconds_per_step']} | "
            f"{result['train_seconds']:.0f} | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from model_data_sources.smollm2 import target as target_module
    from model_data_sources.smollm2.__main__ import DEFAULT_OUT, DEFAULT_WORK

    parser = argparse.ArgumentParser(prog="python -m model_data_sources.smollm2.recipe_study")
    parser.add_argument("variants", nargs="*", default=list(VARIANTS))
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    args = parser.parse_args(argv)
    unknown = [name for name in args.variants if name not in VARIANTS]
    if unknown:
        parser.error(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    model = DEFAULT_OUT / "model"
    if not target_module.up_to_date(model):
        target_module.build(model)
    target = model.resolve()
    split, data_dir, aux_ids = data(target, args.work)
    results = []
    for name in args.variants:
        recipe.log(f"study: {name}")
        shards = VARIANTS[name].bank_shards
        learn_from = bank_data(target, args.work, split, shards, aux_ids) if shards else data_dir
        results.append(run_variant(name, target, split, learn_from, aux_ids, args.work))
        print(table(results), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
