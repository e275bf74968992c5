"""What preflight knows about a drafter head: one HeadConfig, whichever layout it came in.

serving/preflight/head_layouts.py fills it from config.json the way vLLM 0.32 reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from serving.preflight.vllm_facts import EAGLE3_DRAFTER_ARCHITECTURES, SPECULATORS_ARCHITECTURES


@dataclass(frozen=True)
class HeadConfig:
    """The facts about a head that decide whether vLLM can run it against a target."""

    path: Path
    layout: str  # "vLLM-native" or "speculators"
    speculators_type: str | None
    architectures: tuple[str, ...]
    # The EAGLE-3 drafter vLLM builds for this head with method eagle3, and its module.
    drafter_architecture: str | None
    drafter_module: str | None
    hidden_size: int | None
    target_hidden_size: int | None
    vocab_size: int | None
    draft_vocab_size: int | None
    aux_layer_ids: Any  # as written: normally a list of ints, None when absent
    aux_layer_ids_key: str | None
    fc_aux_states: int
    fc_aux_source: str
    uses_aux_hidden_states: bool
    mask_token_key: str | None
    mask_token_id: Any
    trained_positions_key: str | None
    trained_positions: Any
    # Trained for parallel drafting only: a speculators `peagle` head, or one whose
    # config.json says `parallel_drafting: true`.
    parallel_only: bool
    quantized: bool
    # Keys set in the config that vLLM drops on the way to the drafter (speculators peagle).
    dropped_keys: tuple[str, ...] = ()

    @property
    def is_eagle3(self) -> bool:
        """vLLM can build this head as an EAGLE-3 drafter with method eagle3."""
        return self.drafter_module is not None

    @property
    def declares_eagle3(self) -> bool:
        """The config itself names an EAGLE-3 drafter, so no other method can run it.

        Unlike is_eagle3, this ignores vLLM's Eagle3<arch> renaming, which happens only with
        method eagle3: a plain LlamaForCausalLM is an EAGLE-1 head or a draft model.
        """
        if self.speculators_type in SPECULATORS_ARCHITECTURES:
            return True
        return any(
            name in EAGLE3_DRAFTER_ARCHITECTURES
            or name.startswith("Eagle3")
            or name.endswith("Eagle3")
            for name in self.architectures
        )

    @property
    def effective_target_hidden_size(self) -> int | None:
        # vLLM falls back to the head's own hidden size when target_hidden_size is absent.
        return self.target_hidden_size or self.hidden_size

    @property
    def effective_draft_vocab_size(self) -> int | None:
        return self.draft_vocab_size or self.vocab_size
