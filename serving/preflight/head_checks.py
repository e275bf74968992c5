"""An EAGLE-3 head against the target it drafts for: method, draft depth, sizes, aux layers.

These checks apply to "method": "eagle3" only, the one method vLLM runs EAGLE-3 and
P-EAGLE heads with; what parallel drafting adds is in p_eagle.py. Other methods get one
check here: that the drafter they point at is not an EAGLE-3 head.
"""

from __future__ import annotations

from serving.preflight.aux_layers import (
    check_aux_layers,
    check_fc,
    describe_aux_ids,
    effective_aux_ids,
)
from serving.preflight.head_config import HeadConfig
from serving.preflight.p_eagle import (
    check_drafting_singly,
    check_dropped_keys,
    check_parallel_drafting,
)
from serving.preflight.safetensors_headers import Tensor, find_tensor
from serving.preflight.speculative_config import Speculation, describe
from serving.preflight.target_config import Target
from serving.preflight.vllm_facts import (
    OTHER_PARALLEL_DRAFTER_ARCHITECTURES,
    OTHER_PARALLEL_DRAFTERS,
    SPECULATORS_ARCHITECTURES,
)
from serving.variables import SPECULATIVE_CONFIG_VAR


def check_head(
    head: HeadConfig,
    tensors: dict[str, Tensor] | None,
    target: Target | None,
    speculation: Speculation,
    errors: list[str],
    warnings: list[str],
) -> None:
    """Every check of an EAGLE-3 / P-EAGLE head run with "method": "eagle3"."""
    speculation.draft_vocab_size = head.effective_draft_vocab_size
    check_dropped_keys(head, errors)
    if not check_is_eagle3_head(head, errors):
        return
    target_layers = target.num_hidden_layers if target else None
    aux_ids = effective_aux_ids(head, target_layers)
    speculation.aux_layers = describe_aux_ids(head, aux_ids, target_layers)
    check_draft_depth(head, speculation, errors, warnings)
    num_aux = head.fc_aux_states
    if tensors is not None and target is not None and target.hidden_size:
        num_aux = check_fc(head, tensors, target.hidden_size, errors)
    if target is not None:
        check_hidden_sizes(head, tensors, target, errors)
        check_aux_layers(head, aux_ids, num_aux, target, errors, warnings)
        check_vocabulary(head, tensors, target, errors, warnings)
    if speculation.parallel_drafting:
        check_parallel_drafting(head, num_aux, tensors, target, errors)
    else:
        check_drafting_singly(head, speculation, warnings)


def other_parallel_drafter(head: HeadConfig) -> str | None:
    """The speculators type of a DFlash or DSpark head, by its config's type or architecture."""
    if head.speculators_type in OTHER_PARALLEL_DRAFTERS:
        return head.speculators_type
    for architecture in head.architectures:
        if architecture in OTHER_PARALLEL_DRAFTER_ARCHITECTURES:
            return OTHER_PARALLEL_DRAFTER_ARCHITECTURES[architecture]
    return None


def check_is_eagle3_head(head: HeadConfig, errors: list[str]) -> bool:
    """True when vLLM can build the head as an EAGLE-3 drafter, so the shape checks apply."""
    other = other_parallel_drafter(head)
    if other is not None:
        design, method = OTHER_PARALLEL_DRAFTERS[other]
        errors.append(
            f"drafter {head.path}: a {design} head ({other}), not a P-EAGLE one: it drafts a "
            f'block with layers of its own design, and vLLM runs it as "method": "{method}", '
            "the parallel drafter upstream vLLM kept from 0.34 on. This container serves "
            'P-EAGLE heads ("method": "eagle3" with "parallel_drafting": true; speculators '
            f'peagle, or EAGLE-3 with a mask token): train one for this target, or set "method": '
            f'"{method}" (docs/p-eagle-beyond-vllm-0.33.md).'
        )
        return False
    if head.speculators_type is not None and head.speculators_type not in SPECULATORS_ARCHITECTURES:
        errors.append(
            f"drafter {head.path}: speculators_model_type {head.speculators_type!r} is not an "
            'EAGLE-3 head; "method": "eagle3" needs speculators_model_type peagle or eagle3.'
        )
        return False
    if not head.is_eagle3:
        if head.architectures:  # else already reported: the config names no architecture
            errors.append(
                f"drafter {head.path}: architectures {list(head.architectures)} is not an "
                "EAGLE-3 head vLLM can build (e.g. LlamaForCausalLMEagle3, "
                "Eagle3Qwen3ForCausalLM); use an EAGLE-3 / P-EAGLE head or another method."
            )
        return False
    return True


def check_not_an_eagle3_head(head: HeadConfig | None, method: str, errors: list[str]) -> None:
    """Any other method given an EAGLE-3 head: vLLM would build the wrong model from it."""
    if head is not None and head.declares_eagle3:
        errors.append(
            f'{SPECULATIVE_CONFIG_VAR}: "method" is "{method}" but {head.path.parent} is an '
            'EAGLE-3 head, which vLLM runs only as "method": "eagle3"; set that.'
        )


def check_draft_depth(
    head: HeadConfig, speculation: Speculation, errors: list[str], warnings: list[str]
) -> None:
    tokens, trained = speculation.num_speculative_tokens, head.trained_positions
    if trained is None:
        return
    if isinstance(trained, bool) or not isinstance(trained, int) or trained < 1:
        errors.append(
            f"drafter {head.path}: {head.trained_positions_key} is {describe(trained)}, not a "
            "positive integer; fix it or remove it."
        )
        return
    if tokens is None or tokens <= trained:
        return
    if speculation.parallel_drafting:
        errors.append(
            f'{SPECULATIVE_CONFIG_VAR}: "num_speculative_tokens" is {tokens} but the head at '
            f"{head.path.parent} was trained for {trained} parallel positions "
            f"({head.trained_positions_key}); set it to {trained} or less."
        )
    else:
        warnings.append(
            f'{SPECULATIVE_CONFIG_VAR}: "num_speculative_tokens" is {tokens}, past the {trained} '
            f"positions the head at {head.path.parent} was trained for; later drafts are "
            f"rarely accepted, so {trained} or less is usually faster."
        )


def check_hidden_sizes(
    head: HeadConfig, tensors: dict[str, Tensor] | None, target: Target, errors: list[str]
) -> None:
    target_hidden = target.hidden_size
    if target_hidden is None:
        return
    if head.target_hidden_size is not None and head.target_hidden_size != target_hidden:
        errors.append(
            f"drafter {head.path}: target_hidden_size is {head.target_hidden_size} but the "
            f"target's hidden_size is {target_hidden} ({target.config_path}); this head was "
            "trained for another model. Use a head trained for this target."
        )
    elif head.hidden_size is not None and head.hidden_size != target_hidden:
        if head.target_hidden_size is None:
            errors.append(
                f"drafter {head.path}: hidden_size is {head.hidden_size} but the target's "
                f"hidden_size is {target_hidden} ({target.config_path}) and no "
                "target_hidden_size says the head expects that; use a head trained for this "
                f"target, or add target_hidden_size: {target_hidden} if it was."
            )
        elif tensors is not None and find_tensor(tensors, "embed_tokens.weight") is None:
            errors.append(
                f"drafter {head.path}: hidden_size is {head.hidden_size}, not the target's "
                f"{target_hidden}, and the head has no embed_tokens.weight of its own, so it would "
                "share the target's embeddings of the wrong width; use a head that ships its "
                "own embeddings."
            )


def check_vocabulary(
    head: HeadConfig,
    tensors: dict[str, Tensor] | None,
    target: Target,
    errors: list[str],
    warnings: list[str],
) -> None:
    draft_vocab = head.effective_draft_vocab_size
    if target.vocab_size is None or draft_vocab is None:
        return
    if head.vocab_size is not None and head.vocab_size != target.vocab_size:
        warnings.append(
            f"drafter {head.path}: vocab_size is {head.vocab_size} but the target's is "
            f"{target.vocab_size}; the head may come from another tokenizer."
        )
    if tensors is None:
        return
    d2t = next(
        (t for name, t in sorted(tensors.items()) if "d2t" in name and "t2d" not in name), None
    )
    if d2t is not None and d2t.shape != (draft_vocab,):
        errors.append(
            f"drafter {d2t.file}: {d2t.name} has shape {list(d2t.shape)} but draft_vocab_size is "
            f"{draft_vocab} ({head.path}); d2t needs one entry per draft token. Use the d2t saved "
            "with this head."
        )
    elif d2t is None and draft_vocab != target.vocab_size:
        errors.append(
            f"drafter {head.path}: draft vocabulary ({draft_vocab}) differs from the target's "
            f"({target.vocab_size}) but the weights hold no d2t tensor to map draft tokens to "
            "target tokens; upload the head's d2t, or use a head with the target's vocabulary."
        )
    lm_head = find_tensor(tensors, "lm_head.weight")
    if lm_head is not None and not head.quantized and lm_head.shape[:1] != (draft_vocab,):
        errors.append(
            f"drafter {lm_head.file}: {lm_head.name} has shape {list(lm_head.shape)} but "
            f"draft_vocab_size is {draft_vocab} ({head.path}); set draft_vocab_size to the "
            "weights' row count."
        )
