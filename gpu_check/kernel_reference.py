"""What vLLM 0.32's P-EAGLE kernels must compute, written plainly over Python lists.

One function per kernel of `vllm/v1/spec_decode/utils.py` and `vllm/v1/sample/
rejection_sampler.py` that a P-EAGLE step runs on the GPU as Triton and on the CPU build as
C++ (`vllm/utils/cpu_triton_utils.py`). Each takes the kernel's inputs and the output
buffers as they are before the launch, and returns the buffers as the kernel leaves them:
slots a kernel must not write keep what they held. The host suite proves these equal to the
CPU build's C++ (tests/gpu_check/test_gpu_kernels.py); `gpu_check.kernels` holds the Triton kernels
to them on a GPU. Standard library only.
"""

from __future__ import annotations


def copy_and_expand_eagle_inputs(
    *,
    target_token_ids: list[int],
    target_positions: list[int],
    next_token_ids: list[int],
    out_input_ids: list[int],
    out_positions: list[int],
    out_is_rejected_token_mask: list[bool],
    out_is_masked_token_mask: list[bool],
    out_new_token_indices: list[int],
    out_hidden_state_mapping: list[int],
    query_start_loc: list[int],
    query_end_loc: list[int],
    padding_token_id: int,
    parallel_drafting_token_id: int,
    num_padding_slots_per_request: int,
    shift_input_ids: bool,
) -> dict[str, list]:
    """Each request's tokens, its bonus token, K-1 mask slots and its rejected slots, laid out
    for the drafter's one pass (`copy_and_expand_eagle_inputs_kernel`)."""
    slots = num_padding_slots_per_request
    out = {
        "out_input_ids": list(out_input_ids),
        "out_positions": list(out_positions),
        "out_is_rejected_token_mask": list(out_is_rejected_token_mask),
        "out_is_masked_token_mask": list(out_is_masked_token_mask),
        "out_new_token_indices": list(out_new_token_indices),
        "out_hidden_state_mapping": list(out_hidden_state_mapping),
    }
    total_input_tokens = len(target_token_ids)
    for request, end in enumerate(query_end_loc):
        start, next_start = query_start_loc[request], query_start_loc[request + 1]
        if shift_input_ids:  # the first token is dropped; its hidden state stays
            num_valid, offset = end - start, 1
            output_start = start + request * (slots - 1)
        else:
            num_valid, offset = end - start + 1, 0
            output_start = start + request * slots
        num_rejected = next_start - end - 1
        start_position = target_positions[start]
        for j in range(num_valid + slots + num_rejected):
            index = output_start + j
            rejected = j >= num_valid + slots
            if j < num_valid:
                token = target_token_ids[min(start + offset + j, total_input_tokens - 1)]
            elif j == num_valid:
                token = next_token_ids[request]
            elif not rejected:
                token = parallel_drafting_token_id
            else:
                token = padding_token_id
            out["out_input_ids"][index] = token
            out["out_positions"][index] = 0 if rejected else start_position + j
            out["out_is_rejected_token_mask"][index] = rejected
            out["out_is_masked_token_mask"][index] = num_valid < j < num_valid + slots
            if num_valid <= j < num_valid + slots:
                out["out_new_token_indices"][request * slots + j - num_valid] = index
            if shift_input_ids and j < next_start - start:
                out["out_hidden_state_mapping"][start + j] = index
    return out


def eagle_prepare_inputs_padded(
    *,
    cu_num_draft_tokens: list[int],
    valid_sampled_tokens_count: list[int],
    query_start_loc: list[int],
    token_indices_to_sample: list[int],
    num_rejected_tokens: list[int],
) -> dict[str, list]:
    """Per request, the index of the last accepted token and how many drafts were rejected
    (`eagle_prepare_inputs_padded_kernel`)."""
    to_sample, rejected = list(token_indices_to_sample), list(num_rejected_tokens)
    for request, cumulative in enumerate(cu_num_draft_tokens):
        drafts = cumulative - (cu_num_draft_tokens[request - 1] if request else 0)
        count = drafts + 1 - valid_sampled_tokens_count[request] if drafts > 0 else 0
        to_sample[request] = query_start_loc[request + 1] - 1 - count
        rejected[request] = count
    return {"token_indices_to_sample": to_sample, "num_rejected_tokens": rejected}


def eagle_prepare_next_token_padded(
    *,
    sampled_token_ids: list[list[int]],
    discard_request_mask: list[bool],
    backup_next_token_ids: list[int],
    next_token_ids: list[int],
    valid_sampled_tokens_count: list[int],
    vocab_size: int,
    num_sampled_tokens_per_req: int,
) -> dict[str, list]:
    """Per request, the last token the target accepted (or the backup) and how many of its
    sampled tokens are valid (`eagle_prepare_next_token_padded_kernel`)."""
    next_ids, counts = list(next_token_ids), list(valid_sampled_tokens_count)
    for request, row in enumerate(sampled_token_ids):
        if discard_request_mask[request]:
            next_ids[request], counts[request] = backup_next_token_ids[request], 0
            continue
        valid = [t for t in row[:num_sampled_tokens_per_req] if t != -1 and t < vocab_size]
        next_ids[request] = valid[-1] if valid else backup_next_token_ids[request]
        counts[request] = len(valid)
    return {"next_token_ids": next_ids, "valid_sampled_tokens_count": counts}


def rejection_greedy_sample(
    *,
    output_token_ids: list[list[int]],
    cu_num_draft_tokens: list[int],
    draft_token_ids: list[int],
    target_argmax: list[int],
    bonus_token_ids: list[int],
    is_greedy: list[bool] | None,
) -> dict[str, list]:
    """Greedy verification: the target's tokens up to and including the first draft it
    disagrees with, and the bonus token when it agrees with all (`rejection_greedy_sample_
    kernel`, its non-synthetic mode)."""
    output = [list(row) for row in output_token_ids]
    for request, end in enumerate(cu_num_draft_tokens):
        if is_greedy is not None and not is_greedy[request]:
            continue
        start = cu_num_draft_tokens[request - 1] if request else 0
        for position in range(end - start):
            output[request][position] = target_argmax[start + position]
            if draft_token_ids[start + position] != target_argmax[start + position]:
                break
        else:
            output[request][end - start] = bonus_token_ids[request]
    return {"output_token_ids": output}
