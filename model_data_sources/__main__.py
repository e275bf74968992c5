"""`python -m model_data_sources [--trained | --quick] [OUT]`: build a demo pair under OUT, an
/opt/ml tree.

Without --trained or --quick (the fast default): a random-weight target and P-EAGLE head in
seconds, in build/opt_ml. They run every code path but never accept a draft.

With --trained: a target trained on the standard library and a P-EAGLE head in channel `eagle`,
trained for it (about 13 minutes on two cores), in build/opt_ml_trained. The tests use it. With
--eagle3 as well, the same pair (same weights) and an EAGLE-3 head in channel `eagle3` (about 4
minutes more), in build/opt_ml_bench: the benchmark's comparison of the two methods.

With --quick: the first `make serve`'s pair, a smaller target and a P-EAGLE head only, trained
the same way in a few minutes, in build/opt_ml_quick. It accepts drafts; its text is poor.

Each rebuilds only when its inputs changed: a stamp file holds their hash (the builder's
sources, which hold the seeds, the Python and torch versions and, for --trained, the corpus).
The trained and quick pairs are also kept outside the checkout under that hash (see
model_data_sources/cache.py), so another clone on this machine copies them instead.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import time
from pathlib import Path

from model_data_sources import cache, shipped

DEFAULT_OUT = Path("build/opt_ml")
DEFAULT_TRAINED_OUT = Path("build/opt_ml_trained")
DEFAULT_QUICK_OUT = Path("build/opt_ml_quick")
DEFAULT_BENCH_OUT = Path("build/opt_ml_bench")
CHANNEL = "eagle"
EAGLE3_CHANNEL = "eagle3"
REPORT = "training-report.json"


# Modules that build nothing here: editing them must not invalidate a built pair.
NOT_BUILDERS = {"finetune.py", "cache.py", "shipped.py"}


def source_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        if path.name in NOT_BUILDERS:
            continue
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    digest.update(sys.version.encode())
    return digest.hexdigest()


def trained_hash(recipe_name: str = "trained") -> str:
    # Imported here so the random build's up-to-date check stays free of torch.
    import safetensors
    import tokenizers
    import torch
    import transformers

    from model_data_sources.corpus import corpus_hash
    from model_data_sources.grammar import SERVED

    versions = [module.__version__ for module in (torch, transformers, tokenizers, safetensors)]
    parts = [recipe_name, source_hash(), *versions, corpus_hash(), json.dumps(SERVED)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def up_to_date(stamp: Path, wanted: str) -> bool:
    return stamp.is_file() and stamp.read_text() == wanted


def clear(stamp: Path, directories: tuple[Path, ...]) -> None:
    """Remove the stamp first, then the old outputs: an interrupted build is never taken for a
    finished one (the stamp is written last)."""
    stamp.unlink(missing_ok=True)
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)


def build(out: Path, force: bool = False) -> None:
    stamp = out / ".stamp"
    wanted = source_hash()
    if not force and up_to_date(stamp, wanted):
        print(f"demo model data sources up to date in {out}")
        return
    from model_data_sources.tiny import DrafterShape, TargetShape, build_drafter, build_target

    target_dir = out / "model"
    drafter_dir = out / "additional-model-data-sources" / CHANNEL
    clear(stamp, (target_dir, drafter_dir))
    target = build_target(target_dir, TargetShape())
    build_drafter(drafter_dir, target, target_dir, DrafterShape())
    stamp.write_text(wanted)
    print(f"built demo target in {target_dir} and P-EAGLE head in {drafter_dir}")


HEAD_NAMES = {"peagle": "P-EAGLE", "eagle3": "EAGLE-3"}


def build_trained(
    out: Path,
    force: bool = False,
    recipe_name: str = "trained",
    retrain: bool = False,
    ship: bool = False,
) -> None:
    """recipe_name: trained, quick, or bench (the trained recipe with the EAGLE-3 head too).
    The quick and trained pairs are copied from the repository's shipped bytes
    (model_data_sources/shipped.py) unless `retrain`; `ship` keeps a retrained pair as the
    shipped one."""
    if recipe_name in shipped.SHIPPED_KINDS and not retrain:
        install_shipped(out, force, recipe_name)
        return
    stamp = out / ".stamp"
    wanted = trained_hash(recipe_name)
    if not force and up_to_date(stamp, wanted) and not ship:
        print(f"{recipe_name} demo pair up to date in {out}")
        return
    from model_data_sources.trained import QUICK, WITH_EAGLE3, Recipe
    from model_data_sources.trained import build_trained as train

    recipe = {"trained": Recipe(), "quick": QUICK, "bench": WITH_EAGLE3}[recipe_name]

    target_dir = out / "model"
    peagle_dir = out / "additional-model-data-sources" / CHANNEL
    eagle3_dir = out / "additional-model-data-sources" / EAGLE3_CHANNEL
    clear(stamp, (target_dir, peagle_dir, eagle3_dir))
    if not force and cache.restore(recipe_name, wanted, out):
        stamp.write_text(wanted)
        print(f"{recipe_name} demo pair copied into {out} from {cache.entry(recipe_name, wanted)}")
        if ship:
            print(f"shipped it as {shipped.ship(recipe_name, out)} (commit it)")
        return
    started = time.monotonic()
    report = train(target_dir, peagle_dir, eagle3_dir, recipe)
    report["seconds"]["total"] = round(time.monotonic() - started, 1)
    (out / REPORT).write_text(json.dumps(report, indent=2) + "\n")
    cache.store(recipe_name, wanted, out)
    stamp.write_text(wanted)
    expected = ", ".join(
        f"{HEAD_NAMES[name]} {figures['walk'][3]['acceptance_length']:.2f}"
        for name, figures in report["offline"].items()
    )
    print(
        f"built the {recipe_name} demo pair in {out} in {report['seconds']['total']:.0f} s; "
        f"acceptance length at K=3 on held-out prompts, drafted as vLLM drafts: {expected} "
        f"(details in {out / REPORT})"
    )
    if ship:
        print(f"shipped it as {shipped.ship(recipe_name, out)} (commit it)")


def install_shipped(out: Path, force: bool, recipe_name: str) -> None:
    stamp = out / ".stamp"
    wanted = f"shipped {shipped.key(recipe_name)}"
    if not force and up_to_date(stamp, wanted):
        print(f"{recipe_name} demo pair up to date in {out}")
        return
    clear(stamp, tuple(out / name for name in shipped.CONTENTS))
    try:
        shipped.install(recipe_name, out)
    except shipped.StalePair as error:
        raise SystemExit(f"python -m model_data_sources: {error}") from None
    stamp.write_text(wanted)
    print(f"{recipe_name} demo pair copied into {out} from {shipped.PAIRS / recipe_name}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m model_data_sources",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "out",
        nargs="?",
        type=Path,
        help=f"output tree (default {DEFAULT_OUT}; {DEFAULT_TRAINED_OUT} with --trained, "
        f"{DEFAULT_QUICK_OUT} with --quick)",
    )
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--trained", action="store_true", help="build the trained pair")
    kind.add_argument("--quick", action="store_true", help="build the quick trained pair")
    parser.add_argument(
        "--eagle3",
        action="store_true",
        help=f"with --trained: an EAGLE-3 head too (default out {DEFAULT_BENCH_OUT})",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even when up to date")
    parser.add_argument(
        "--retrain",
        action="store_true",
        help="--quick / --trained: train the pair on this machine instead of copying the "
        "shipped one (model_data_sources/pairs)",
    )
    parser.add_argument(
        "--ship", action="store_true", help="with --retrain: keep it as the shipped pair"
    )
    args = parser.parse_args(argv)
    if args.ship and not args.retrain:
        parser.error("--ship goes with --retrain")
    if args.eagle3 and not args.trained:
        parser.error("--eagle3 goes with --trained")
    if args.trained and args.eagle3:
        build_trained(args.out or DEFAULT_BENCH_OUT, args.force, "bench")
    elif args.trained:
        build_trained(
            args.out or DEFAULT_TRAINED_OUT, args.force, "trained", args.retrain, args.ship
        )
    elif args.quick:
        build_trained(args.out or DEFAULT_QUICK_OUT, args.force, "quick", args.retrain, args.ship)
    else:
        build(args.out or DEFAULT_OUT, args.force)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
