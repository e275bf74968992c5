"""What P-EAGLE needs beyond EAGLE-3: a mask token, mask_hidden, and a config vLLM keeps whole.

P-EAGLE is "method": "eagle3" with "parallel_drafting": true: positions 2..K of a draft
take the mask token's embedding and the learned mask_hidden state in place of real ones.
"""

from __future__ import annotations

from serving.preflight.head_config import HeadConfig
from serving.preflight.safetensors_headers import Tensor, find_tensor_containing
from serving.preflight.speculative_config import Speculation, describe
from serving.preflight.target_config import Target
from serving.variables import SPECULATIVE_CONFIG_VAR

# What each key that update_peagle drops does in vLLM's EAGLE-3 drafter (llama_eagle3.py).
DROPPED_KEY_ROLES = {
    "fc_norm": "the RMSNorm layers it applies to each aux hidden state before fc",
    "norm_output": "the post-norm hidden state it passes from one draft position to the next",
}


def check_drafting_singly(head: HeadConfig, speculation: Speculation, warnings: list[str]) -> None:
    """A P-EAGLE head run without parallel drafting only because the config left it out."""
    if head.parallel_only and speculation.parallel_drafting_unset:
        source = (
            "speculators_model_type peagle"
            if head.speculators_type == "peagle"
            else '"parallel_drafting": true in its config.json'
        )
        warnings.append(
            f"drafter {head.path.parent} is a P-EAGLE head ({source}) but "
            f'{SPECULATIVE_CONFIG_VAR} leaves "parallel_drafting" off, so it drafts one token '
            'per pass; add "parallel_drafting": true.'
        )


def check_dropped_keys(head: HeadConfig, errors: list[str]) -> None:
    """A speculators peagle config whose top-level fc_norm / norm_output vLLM would ignore."""
    for key in head.dropped_keys:
        errors.append(
            f'drafter {head.path}: "{key}" is set at the top level of this speculators peagle '
            "config, but vLLM 0.32 (update_peagle) does not carry it over from there, so the "
            f"head would run without {DROPPED_KEY_ROLES[key]}, which it was trained with; move "
            f'"{key}" into transformer_layer_config, where vLLM keeps it.'
        )


def check_parallel_drafting(
    head: HeadConfig,
    num_aux: int,
    tensors: dict[str, Tensor] | None,
    target: Target | None,
    errors: list[str],
) -> None:
    off = 'or set "parallel_drafting": false to draft sequentially.'
    if head.mask_token_key is None:
        keys = (
            "mask_token_id"
            if head.speculators_type == "peagle"
            else "ptd_token_id (or mask_token_id, pard_token)"
        )
        errors.append(
            f"drafter {head.path}: no {keys}; P-EAGLE heads need the mask token id. Add it, {off}"
        )
    else:
        token = head.mask_token_id
        bounds = [v for v in (head.vocab_size, target.vocab_size if target else None) if v]
        vocab = min(bounds) if bounds else None
        if isinstance(token, bool) or not isinstance(token, int):
            errors.append(
                f"drafter {head.path}: {head.mask_token_key} is {describe(token)}, not a token id; "
                f"set it to the mask token's id, {off}"
            )
        elif vocab is not None and not 0 <= token < vocab:
            errors.append(
                f"drafter {head.path}: {head.mask_token_key} {token} is outside the vocabulary "
                f"(0..{vocab - 1}); set it to the mask token's id, {off}"
            )
    if tensors is None:
        return
    mask_hidden = find_tensor_containing(tensors, "mask_hidden")
    if mask_hidden is None:
        errors.append(
            f"drafter {head.path.parent} has no mask_hidden tensor; P-EAGLE heads need the "
            f"learned mask hidden state. Upload the complete P-EAGLE head, {off}"
        )
        return
    target_hidden = head.effective_target_hidden_size
    if target is not None and target.hidden_size:
        target_hidden = target.hidden_size
    if target_hidden is None or not head.uses_aux_hidden_states:
        return
    expected = num_aux * target_hidden
    if mask_hidden.numel != expected:
        errors.append(
            f"drafter {mask_hidden.file}: {mask_hidden.name} has shape {list(mask_hidden.shape)} "
            f"({mask_hidden.numel} values), not n_aux x target hidden size = "
            f"{num_aux} x {target_hidden} = {expected}; use the mask_hidden trained "
            "with this head for this target."
        )
