"""The real target's heads as the repository ships them (heads/<channel>/), so nobody trains
them to try the product: P-EAGLE in channel `eagle`, EAGLE-3 in `eagle3`, each a speculators
checkpoint as vLLM loads it, without embeddings (vLLM shares the target's). heads/manifest.json
holds every file's sha256, the recipe's hash, the machine that trained them, the data they
learnt from, the time each step took and the held-out figures they reached.

A head's output layer is the target's, cut to the draft vocabulary and never trained (row i
is the target's embedding row i + d2t[i]; SmolLM2 ties its embeddings): 9.4 MB a head that
the target already holds. The repository ships each weights file without it
(`model.without-lm-head.safetensors.xz`) and `install` writes it back from the converted target,
every byte checked against the sha256 the manifest keeps for the whole file; the rest is
shipped xz-compressed (bfloat16 weights: 10.3 -> 7.3 MB). That keeps the repository, with
the GPU bundle beside it, under the 64 MiB a lent GPU machine takes (docs/image.md).
"""

from __future__ import annotations

import hashlib
import json
import lzma
import shutil
import struct
from pathlib import Path
from typing import Any

WEIGHTS = "model.safetensors"
SHIPPED_WEIGHTS = "model.without-lm-head.safetensors.xz"
LM_HEAD = "lm_head.weight"

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


def install(channels: Path, model: Path) -> None:
    """Write the shipped heads into `channels` (the tree's additional-model-data-sources/),
    each output layer taken from the converted target in `model`, every file checked against
    the manifest."""
    shipped = manifest()
    if shipped["recipe"] != recipe_hash():
        raise StaleHeads(
            "the shipped heads (model_data_sources/smollm2/heads) were trained from another "
            "recipe than model_data_sources/smollm2 holds now; train and ship them again with "
            "`make real-heads`"
        )
    for relative, digest in shipped.get("shipped", shipped["files"]).items():
        if sha256(HEADS / relative) != digest:
            raise StaleHeads(
                f"model_data_sources/smollm2/heads/{relative} does not match its sha256 in "
                "manifest.json; restore it (git checkout) or ship the heads again"
            )
    for channel in CHANNELS:
        out = channels / channel
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(HEADS / channel, out, ignore=shutil.ignore_patterns(SHIPPED_WEIGHTS))
        if (HEADS / channel / SHIPPED_WEIGHTS).is_file():
            try:
                with_lm_head(HEADS / channel / SHIPPED_WEIGHTS, model, out / WEIGHTS)
            except OSError as error:
                raise StaleHeads(
                    f"the {channel} head's output layer is taken from the target's "
                    f"{model / WEIGHTS}, which could not be read ({error}); build the target "
                    "first (`python -m model_data_sources.smollm2 --force`)"
                ) from None
    for relative, digest in shipped["files"].items():
        if not (channels / relative).is_file() or sha256(channels / relative) != digest:
            raise StaleHeads(
                f"{channels / relative} as written from the shipped head and the target in "
                f"{model} does not match its sha256 in manifest.json: the target converted "
                "differently here; rebuild it (`python -m model_data_sources.smollm2 --force`)"
            )


def target_rows(model: Path, d2t) -> Any:
    """The target's output layer cut to a head's draft vocabulary: row i is the target's row
    i + d2t[i] (its embeddings, which SmolLM2 ties to the output layer)."""
    import torch
    from safetensors import safe_open

    with safe_open(str(model / WEIGHTS), "pt") as weights:
        names = set(weights.keys())
        output = weights.get_tensor(LM_HEAD if LM_HEAD in names else "model.embed_tokens.weight")
    return output[torch.arange(d2t.numel()) + d2t]


def with_lm_head(shipped: Path, model: Path, out: Path) -> None:
    from safetensors.torch import load, save_file

    data = lzma.decompress(shipped.read_bytes())
    tensors = load(data)
    tensors[LM_HEAD] = target_rows(model, tensors["d2t"]).to(tensors["fc.weight"].dtype)
    save_file(tensors, str(out), metadata_of(data))


def metadata_of(data: bytes) -> dict[str, str] | None:
    """A safetensors file's own metadata (its header's __metadata__)."""
    (length,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + length]).get("__metadata__")


def without_lm_head(head: Path, model: Path) -> bool:
    """Write `head`'s weights without its output layer beside them, compressed, when that
    layer is the target's rows (True); a trained one stays whole (False)."""
    from safetensors.torch import load, save

    whole = (head / WEIGHTS).read_bytes()
    tensors = load(whole)
    if "d2t" not in tensors or tensors.pop(LM_HEAD, None) is None:
        return False
    stripped = save(tensors, metadata_of(whole))
    (head / SHIPPED_WEIGHTS).write_bytes(lzma.compress(stripped, preset=9))
    rebuilt = head / f"{WEIGHTS}.rebuilt"
    with_lm_head(head / SHIPPED_WEIGHTS, model, rebuilt)
    same = rebuilt.read_bytes() == whole
    rebuilt.unlink()
    if not same:  # a trained output layer, or one install could not write back byte for byte
        (head / SHIPPED_WEIGHTS).unlink()
        return False
    (head / WEIGHTS).unlink()
    return True


def ship(work: Path, model: Path) -> Path:
    """Keep the heads the recipe wrote under `work` as the shipped ones, with the manifest;
    each output layer that is the target's rows (in `model`) is left out of the shipped file."""
    from model_data_sources.shipped import machine

    report = json.loads((work / "report.json").read_text())
    for channel in CHANNELS:
        shutil.rmtree(HEADS / channel, ignore_errors=True)
        shutil.copytree(work / "heads" / channel, HEADS / channel)
    files = hashes(HEADS)
    for channel in CHANNELS:
        without_lm_head(HEADS / channel, model)
    trained_on = machine()
    trained_on.pop("corpus", None)
    MANIFEST.write_text(
        json.dumps(
            {
                "recipe": recipe_hash(),
                "trained_on": trained_on,
                **report,
                "files": files,
                "shipped": hashes(HEADS),
            },
            indent=2,
        )
        + "\n"
    )
    return HEADS


def hashes(heads: Path) -> dict[str, str]:
    """Each file of the heads' channels under `heads`: its path there and sha256."""
    return {
        path.relative_to(heads).as_posix(): sha256(path)
        for channel in CHANNELS
        for path in sorted((heads / channel).rglob("*"))
        if path.is_file()
    }


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
