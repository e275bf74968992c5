"""`keep_start_head`: the head the job writes keeps a share of the head it started from.

Training a head on new traffic moves it away from what it drafted well before: on the demo
pair, every setting that taught the demo head the new prose as well as the project's own
fine-tune cost it 7-12% of its acceptance on code. Averaging the weights of the start head and
the trained head (WiSE-FT, Wortsman et al., "Robust fine-tuning of zero-shot models", 2022)
gives back most of the old skill for a small part of the new one; docs/results/train-head.md
has the figures. The trained head is the start head trained, so the two have the same tensors and
the mix is tensor by tensor: start x share + trained x (1 - share).
"""

from __future__ import annotations

from pathlib import Path

from training.contract import HEAD_WEIGHTS


def mix(trained: Path, start: Path, share: float) -> int:
    """Rewrite the weights in `trained` as the mix; return how many tensors were mixed.

    A tensor the start head does not store (a speculators-format head that shares its
    target's embedding, say) is the trained one, which the trainer loaded from the target
    and kept frozen; integer tensors (vocabulary maps) are the trained head's.
    """
    import torch
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    trained_file = trained / HEAD_WEIGHTS
    with safe_open(str(trained_file), "pt") as opened:
        metadata = opened.metadata()
    weights = load_file(str(trained_file))
    start_weights = load_file(str(start / HEAD_WEIGHTS))
    mixed = 0
    for name, tensor in weights.items():
        old = start_weights.get(name)
        if old is None or not tensor.is_floating_point():
            continue
        if old.shape != tensor.shape:
            raise RuntimeError(
                f"keep_start_head: {name} is {tuple(old.shape)} in the start head and "
                f"{tuple(tensor.shape)} in the trained one, so the two cannot be mixed; run "
                "the job again with keep_start_head=0."
            )
        together = old.to(torch.float32) * share + tensor.to(torch.float32) * (1 - share)
        weights[name] = together.to(tensor.dtype)
        mixed += 1
    save_file(weights, str(trained_file), metadata=metadata)
    return mixed
