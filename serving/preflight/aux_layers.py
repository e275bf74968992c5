"""The aux hidden states an EAGLE-3 head drafts from: which target layers, and how many fc takes.

vLLM concatenates the hidden states of a few target layers (the head's
eagle_aux_hidden_state_layer_ids, else 2, L // 2 and L - 3) and feeds them through the
head's `fc`, built for a fixed number of them. When the two disagree, vLLM starts, answers
/ping, and crashes on the first request (`shape '[-1, 384]' is invalid for input of size
5632`).
"""

from __future__ import annotations

from typing import Any

from serving.preflight.head_config import HeadConfig
from serving.preflight.safetensors_headers import Tensor, find_tensor
from serving.preflight.speculative_config import describe
from serving.preflight.target_config import Target


def effective_aux_ids(head: HeadConfig, target_layers: int | None) -> Any:
    """The aux layer ids vLLM asks the target for: the head's, else (2, L // 2, L - 3)."""
    if head.aux_layer_ids:
        return head.aux_layer_ids
    if target_layers is None:
        return None
    return [2, target_layers // 2, target_layers - 3]


def describe_aux_ids(head: HeadConfig, aux_ids: Any, target_layers: int | None) -> str:
    if aux_ids is None:
        return "default(2,L//2,L-3)"
    text = ",".join(str(i) for i in aux_ids) if isinstance(aux_ids, list) else str(aux_ids)
    if head.aux_layer_ids:
        return text
    return f"{text}(default for L={target_layers})"


def check_fc(
    head: HeadConfig, tensors: dict[str, Tensor], target_hidden: int, errors: list[str]
) -> int:
    """Check the head's fc against the target; return the aux count the head really takes.

    When the weights show the head was built for another number of aux states than vLLM
    will build (the config lacks num_aux_hidden_states), that one fix is reported, and the
    later checks use the weights' count so one cause gives one sentence.
    """
    num_aux = head.fc_aux_states
    if not head.uses_aux_hidden_states or head.quantized:
        return num_aux
    fc = find_tensor(tensors, "fc.weight")
    if fc is None:
        errors.append(
            f"drafter {head.path.parent} has no fc.weight tensor; an EAGLE-3 head needs the fc "
            "layer that merges the target's aux hidden states. Upload the complete head."
        )
        return num_aux
    expected = num_aux * target_hidden
    if len(fc.shape) != 2:
        errors.append(
            f"drafter {fc.file}: {fc.name} has shape {list(fc.shape)}, not a 2-D matrix; "
            "the file is not an EAGLE-3 head."
        )
        return num_aux
    width = fc.shape[1]
    if width != expected:
        if width % target_hidden == 0 and head.effective_target_hidden_size in (
            None,
            target_hidden,
        ):
            num_aux = width // target_hidden
            fix = (
                f"it takes {num_aux} aux hidden states, but vLLM builds fc for "
                f"{head.fc_aux_states} (from {head.fc_aux_source}); add "
                f'"num_aux_hidden_states": {num_aux} to config.json'
            )
        else:
            fix = "the head was trained for a target of another hidden size; use a matching head"
        errors.append(
            f"drafter {fc.file}: {fc.name} input width is {width}, not n_aux x target hidden "
            f"size = {head.fc_aux_states} x {target_hidden} = {expected}; {fix}."
        )
    if head.hidden_size is not None and fc.shape[0] != head.hidden_size:
        errors.append(
            f"drafter {fc.file}: {fc.name} output width is {fc.shape[0]}, not the head's "
            f"hidden_size {head.hidden_size} ({head.path}); fix hidden_size or the weights."
        )
    return num_aux


def check_aux_layers(
    head: HeadConfig,
    aux_ids: Any,
    num_aux: int,
    target: Target,
    errors: list[str],
    warnings: list[str],
) -> None:
    layers = target.num_hidden_layers
    if layers is None or aux_ids is None or not head.uses_aux_hidden_states:
        return
    where = (
        f"{head.aux_layer_ids_key} in {head.path}"
        if head.aux_layer_ids
        else f"vLLM's default (2, L//2, L-3) for the target's {layers} layers"
    )
    if not isinstance(aux_ids, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in aux_ids
    ):
        errors.append(
            f"drafter {head.path}: {head.aux_layer_ids_key} is {describe(aux_ids)}, not a list "
            "of layer numbers; fix it."
        )
        return
    outside = [i for i in aux_ids if not 0 <= i <= layers]
    if outside:
        errors.append(
            f"aux hidden-state layer ids {aux_ids} ({where}) include {outside}, outside the "
            f"target's layers 0..{layers}; the head was trained for a deeper target. Use a head "
            f"for this target or set {num_aux} distinct ids in 0..{layers}."
        )
        return
    distinct = sorted(set(aux_ids))
    if len(distinct) != num_aux:
        errors.append(
            f"aux hidden-state layer ids {aux_ids} ({where}) give {len(distinct)} distinct "
            f"layers {distinct}, but the head's fc expects {num_aux}; every request "
            f"would crash. Set eagle_aux_hidden_state_layer_ids to {num_aux} distinct "
            f"layers in 0..{layers} in {head.path}, or use a head trained for this target."
        )
    elif head.aux_layer_ids and aux_ids != distinct:
        warnings.append(
            f"drafter {head.path}: {head.aux_layer_ids_key} {aux_ids} is not in increasing "
            f"order; vLLM concatenates the aux states in layer order {distinct}, so the head "
            "must have been trained that way."
        )
