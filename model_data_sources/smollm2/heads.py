"""The real target's heads as the repository ships them (heads/<channel>/), so nobody trains
them to try the product: P-EAGLE in channel `eagle`, EAGLE-3 in `eagle3`, each a speculators
checkpoint as vLLM loads it, without embeddings (vLLM shares the target's). heads/manifest.json
holds every file's sha256, the recipe's hash, the machine that trained them, the data they
learnt from, the time each step took and the held-out figures they reached.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

HEADS = Path(__file__).parent / "heads"
MANIFEST = HEADS / "manifest.json"
CHANNELS = ("eagle", "eagle3")
# What decides the heads' bytes: the recipe, the prompts and the target's conversion.
RECIPE_SOURCES = ("recipe.py", "prompts.py", "target.py")


class StaleHeads(RuntimeError):
    pass


def recipe_hash() -> str:
    digest = hashlib.sha256()
    for name in RECIPE_SOURCES:
        digest.update(name.encode() + b"\0" + (Path(__file__).parent / name).read_bytes())
    return digest.hexdigest()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def manifest() -> dict[str, Any]:
    if not MANIFEST.is_file():
        raise StaleHeads(
            f"no heads are shipped yet ({MANIFEST} is missing); train them with "
            "`make real-heads` (about two hours on two cores)"
        )
    return json.loads(MANIFEST.read_text())


def key() -> str:
    """The shipped heads' identity, for the tree's stamp."""
    return sha256(MANIFEST) if MANIFEST.is_file() else "none"


def install(channels: Path) -> None:
    """Copy the shipped heads into `channels` (the tree's additional-model-data-sources/),
    every file checked against the manifest."""
    shipped = manifest()
    if shipped["recipe"] != recipe_hash():
        raise StaleHeads(
            "the shipped heads (model_data_sources/smollm2/heads) were trained from another "
            "recipe than model_data_sources/smollm2 holds now; train and ship them again with "
            "`make real-heads`"
        )
    for relative, digest in shipped["files"].items():
        if sha256(HEADS / relative) != digest:
            raise StaleHeads(
                f"model_data_sources/smollm2/heads/{relative} does not match its sha256 in "
                "manifest.json; restore it (git checkout) or ship the heads again"
            )
    for channel in CHANNELS:
        shutil.rmtree(channels / channel, ignore_errors=True)
        shutil.copytree(HEADS / channel, channels / channel)


def ship(work: Path) -> Path:
    """Keep the heads the recipe wrote under `work` as the shipped ones, with the manifest."""
    from model_data_sources.shipped import machine

    report = json.loads((work / "report.json").read_text())
    for channel in CHANNELS:
        shutil.rmtree(HEADS / channel, ignore_errors=True)
        shutil.copytree(work / "heads" / channel, HEADS / channel)
    files = {
        path.relative_to(HEADS).as_posix(): sha256(path)
        for channel in CHANNELS
        for path in sorted((HEADS / channel).rglob("*"))
        if path.is_file()
    }
    trained_on = machine()
    trained_on.pop("corpus", None)
    MANIFEST.write_text(
        json.dumps(
            {"recipe": recipe_hash(), "trained_on": trained_on, **report, "files": files},
            indent=2,
        )
        + "\n"
    )
    return HEADS


def summary() -> str:
    """The figures the shipped heads reached, in a line."""
    shipped = manifest()
    parts = []
    for channel, figures in shipped.get("heads", {}).items():
        for k, sets in figures.get("held_out", {}).items():
            chat = sets.get("chat", {}).get("mean_acceptance_length")
            if chat:
                parts.append(f"{channel} K={k} chat acceptance length {chat:.2f}")
    return "; ".join(parts) or "no figures"
