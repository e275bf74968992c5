"""A bad head for a good target, for rehearsing a head rollout: the trained head's shapes and
config with random weights. It passes every check the container makes (a head never changes
the answers) and accepts next to nothing, which is what a shadow comparison must catch.

    tree = random_head_tree(TRAINED_DEMO_ROOT, Path("build/bad-head"))
    # OPT_ML_ROOT=tree serves the trained target with the random head
"""

from __future__ import annotations

import shutil
from pathlib import Path

from serving import paths

INITIAL_STD = 0.02  # the usual initialisation of a transformer's matrices


def randomize_head(source: Path, out: Path, seed: int = 0) -> None:
    """`source`'s config and tensor shapes, with weights drawn afresh: norms at one, every
    other tensor from N(0, 0.02)."""
    import torch
    from safetensors import safe_open
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source / "config.json", out / "config.json")
    generator = torch.Generator().manual_seed(seed)
    tensors = {}
    with safe_open(str(source / "model.safetensors"), "pt") as weights:
        for name in weights.keys():
            like = weights.get_tensor(name)
            if like.dim() == 1 and name.endswith("norm.weight"):
                tensors[name] = torch.ones_like(like)
            else:
                tensors[name] = (
                    torch.randn(like.shape, generator=generator, dtype=torch.float32) * INITIAL_STD
                ).to(like.dtype)
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})


def random_head_tree(pair_root: Path, out: Path, seed: int = 0) -> Path:
    """An /opt/ml tree at `out`: `pair_root`'s target (linked) and a random head of its
    head's shape in the eagle channel."""
    model = paths.model_dir(out)
    model.parent.mkdir(parents=True, exist_ok=True)
    if not model.exists():
        model.symlink_to(paths.model_dir(pair_root).resolve(), target_is_directory=True)
    randomize_head(paths.channel_dir(pair_root), paths.channel_dir(out), seed)
    return out
