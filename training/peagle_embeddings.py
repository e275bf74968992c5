"""speculators 0.9.0's P-EAGLE trainer honours `--no-embed-requires-grad`.

speculators/models/peagle/core.py `PEagleDraftModel.from_training_args` builds its config
without the `embed_requires_grad` it is given, and `PEagleSpeculatorConfig` defaults it to True
("P-EAGLE requires trainable embeddings"), so a P-EAGLE head always trains, and must ship, its
own copy of the target's input embeddings: 28M parameters for a 49k-token vocabulary, more than
the rest of a one-layer head. EAGLE-3's `from_training_args` passes the flag on. With this
wrapper P-EAGLE does too: given False, the head drafts with the target's embeddings, frozen,
and the exported head leaves them out (vLLM shares the target's with a head that has none).
Given nothing, speculators' default (trained) stands.
"""

from __future__ import annotations

from typing import Any


def apply() -> None:
    from speculators.models.peagle.core import PEagleDraftModel

    built = PEagleDraftModel.from_training_args.__func__
    if getattr(built, "honours_embed_requires_grad", False):
        return

    def from_training_args(cls, verifier_config: Any, t2d=None, d2t=None, **kwargs: Any):  # noqa: ANN001
        model = built(cls, verifier_config, t2d=t2d, d2t=d2t, **kwargs)
        if kwargs.get("embed_requires_grad") is False:
            model.config.embed_requires_grad = False
            model.embed_tokens.weight.requires_grad_(False)
        return model

    from_training_args.honours_embed_requires_grad = True
    PEagleDraftModel.from_training_args = classmethod(from_training_args)
