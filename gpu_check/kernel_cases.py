"""The batches the kernel check runs vLLM's P-EAGLE kernels on: prefills and decodes, with
the K of a step differing from the step before's as a batch size schedule makes it, and
per kernel the reference it is held to (gpu_check.kernel_reference).

A `Case` carries the reference's inputs as plain lists and a `launch` that turns them into
tensors on a device, in the kernel's own argument order (the Triton kernel and the CPU
build's C++ replacement take the same), with its compile-time constants and grid.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from gpu_check import kernel_reference

SPEC_DECODE_UTILS = "vllm/v1/spec_decode/utils.py"
REJECTION_SAMPLER = "vllm/v1/sample/rejection_sampler.py"
# K per step: every depth the published heads were trained for (8, 10, 18) and Triton's
# integer specialisations (1, and multiples of 16).
STEP_KS = (1, 2, 3, 4, 5, 7, 8, 10, 11, 15, 16, 17)
# The K of the step before (the drafts the target just verified); 0: a K=0 step or prefill.
PREVIOUS_KS = (0, 1, 3, 7, 16)
VOCAB_SIZE = 151_936  # Qwen3's; the next-token kernel masks ids at or above it
MASK_TOKEN_ID = 151_669
SENTINEL = -7  # what output slots hold before a launch; a kernel must not touch the others


@dataclass
class Launch:
    """One kernel launch: positional arguments in the kernel's order, its compile-time
    constants, the grid, and which arguments are outputs."""

    args: list[Any]
    constexprs: dict[str, Any]
    grid: tuple[int, ...]
    outputs: dict[str, int]  # output name -> index into args


@dataclass
class Case:
    kernel: str
    label: str
    inputs: dict[str, Any]  # the reference's keyword arguments, as lists
    launch: Callable[[Any, str], Launch]  # (torch, device) -> Launch


def _batch(rng: random.Random, previous_k: int) -> tuple[list[int], list[int]]:
    """(query lengths, rejected per request) of a batch the target just ran: prefills, and
    decodes that carried `previous_k` drafts of which some were rejected."""
    lengths, rejected = [], []
    for _ in range(rng.choice((1, 2, 5, 16, 48))):
        if previous_k == 0 or rng.random() < 0.2:
            lengths.append(rng.choice((1, 2, 17, 130, 300)))  # 300 needs two token blocks
            rejected.append(0)
        else:
            lengths.append(1 + previous_k)
            rejected.append(rng.randint(0, previous_k))
    return lengths, rejected


def _cumulative(values: list[int]) -> list[int]:
    total, out = 0, []
    for value in values:
        total += value
        out.append(total)
    return out


def _next_pow2(n: int) -> int:
    return 1 if n <= 0 else 1 << (n - 1).bit_length()


def copy_and_expand_cases(rng: random.Random, per_pair: int) -> Iterator[Case]:
    for step_k in STEP_KS:
        for previous_k in PREVIOUS_KS:
            for _ in range(per_pair):
                shift = rng.random() < 0.75  # EAGLE-3 heads pass hidden states: shifted
                yield _copy_and_expand_case(rng, step_k, previous_k, shift)


def _copy_and_expand_case(rng: random.Random, step_k: int, previous_k: int, shift: bool) -> Case:
    lengths, rejected = _batch(rng, previous_k)
    batch = len(lengths)
    query_start_loc = [0, *_cumulative(lengths)]
    query_end_loc = [query_start_loc[r + 1] - 1 - rejected[r] for r in range(batch)]
    total_input = query_start_loc[-1]
    slots = step_k  # K slots per request: the bonus token and K-1 mask slots
    net_new = slots - 1 if shift else slots
    out_size = total_input + batch * slots + 8
    inputs = {
        "target_token_ids": [rng.randrange(VOCAB_SIZE) for _ in range(total_input)],
        "target_positions": [],
        "next_token_ids": [rng.randrange(VOCAB_SIZE) for _ in range(batch)],
        "out_input_ids": [SENTINEL] * out_size,
        "out_positions": [SENTINEL] * out_size,
        "out_is_rejected_token_mask": [rng.random() < 0.5 for _ in range(out_size)],
        "out_is_masked_token_mask": [rng.random() < 0.5 for _ in range(out_size)],
        "out_new_token_indices": [SENTINEL] * (batch * slots + 4),
        "out_hidden_state_mapping": [SENTINEL] * total_input,
        "query_start_loc": query_start_loc,
        "query_end_loc": query_end_loc,
        "padding_token_id": 0,
        "parallel_drafting_token_id": MASK_TOKEN_ID,
        "num_padding_slots_per_request": slots,
        "shift_input_ids": shift,
    }
    for length in lengths:
        start = rng.randrange(4000)
        inputs["target_positions"] += range(start, start + length)
    per_request = max(lengths) + net_new
    block = min(256, _next_pow2(per_request))

    def launch(torch: Any, device: str) -> Launch:
        def ints(name: str, dtype: Any) -> Any:
            return torch.tensor(inputs[name], dtype=dtype, device=device)

        i32, i64 = torch.int32, torch.int64
        args = [
            ints("target_token_ids", i32),
            ints("target_positions", i64),
            ints("next_token_ids", i32),
            ints("out_input_ids", i32),
            ints("out_positions", i64),
            ints("out_is_rejected_token_mask", torch.bool),
            ints("out_is_masked_token_mask", torch.bool),
            ints("out_new_token_indices", i32),
            ints("out_hidden_state_mapping", i32),
            ints("query_start_loc", i32),
            ints("query_end_loc", i32),
            0,
            MASK_TOKEN_ID,
            total_input,
            slots,
            shift,
        ]
        outputs = {name: 3 + i for i, name in enumerate(OUT_NAMES)}
        return Launch(
            args, {"BLOCK_SIZE_TOKENS": block}, (batch, -(-per_request // block)), outputs
        )

    label = (
        f"K={step_k} after K={previous_k}, {batch} requests, longest query {max(lengths)}, "
        f"{'shifted' if shift else 'unshifted'}"
    )
    return Case("copy_and_expand_eagle_inputs_kernel", label, inputs, launch)


OUT_NAMES = (
    "out_input_ids",
    "out_positions",
    "out_is_rejected_token_mask",
    "out_is_masked_token_mask",
    "out_new_token_indices",
    "out_hidden_state_mapping",
)


def _verify_step(rng: random.Random, previous_k: int) -> tuple[list[int], list[int]]:
    """(drafts per request, valid sampled tokens per request) of a step that verified up to
    `previous_k` drafts per request (requests without drafts: prefills, K=0 steps)."""
    drafts, valid = [], []
    for _ in range(rng.choice((1, 3, 16, 64))):
        count = previous_k if rng.random() < 0.8 else 0
        drafts.append(count)
        valid.append(rng.randint(1, count + 1))
    return drafts, valid


def prepare_inputs_cases(rng: random.Random, per_pair: int) -> Iterator[Case]:
    for previous_k in (*PREVIOUS_KS, *STEP_KS):
        for _ in range(per_pair):
            drafts, valid = _verify_step(rng, previous_k)
            batch = len(drafts)
            lengths = [1 + d if rng.random() < 0.9 else rng.randint(1, 40) + d for d in drafts]
            inputs = {
                "cu_num_draft_tokens": _cumulative(drafts),
                "valid_sampled_tokens_count": valid,
                "query_start_loc": [0, *_cumulative(lengths)],
                "token_indices_to_sample": [SENTINEL] * (batch + 2),
                "num_rejected_tokens": [SENTINEL] * (batch + 2),
            }
            yield Case(
                "eagle_prepare_inputs_padded_kernel",
                f"after K={previous_k}, {batch} requests",
                inputs,
                _prepare_inputs_launch(inputs, batch),
            )


def _prepare_inputs_launch(inputs: dict[str, Any], batch: int) -> Callable[[Any, str], Launch]:
    def launch(torch: Any, device: str) -> Launch:
        names = list(inputs)
        args = [torch.tensor(inputs[n], dtype=torch.int32, device=device) for n in names]
        outputs = {"token_indices_to_sample": 3, "num_rejected_tokens": 4}
        return Launch([*args, batch], {}, (batch,), outputs)

    return launch


def next_token_cases(rng: random.Random, per_pair: int) -> Iterator[Case]:
    for previous_k in (*PREVIOUS_KS, *STEP_KS):
        for _ in range(per_pair):
            drafts, valid = _verify_step(rng, previous_k)
            width = previous_k + 1
            rows = []
            for count in valid:
                row = [rng.randrange(VOCAB_SIZE) for _ in range(count)] + [-1] * (width - count)
                if rng.random() < 0.1:  # an id past the vocabulary is not a valid token
                    row[rng.randrange(width)] = VOCAB_SIZE + rng.randrange(64)
                rows.append(row)
            batch = len(rows)
            inputs = {
                "sampled_token_ids": rows,
                "discard_request_mask": [rng.random() < 0.1 for _ in range(batch)],
                "backup_next_token_ids": [rng.randrange(VOCAB_SIZE) for _ in range(batch)],
                "next_token_ids": [SENTINEL] * (batch + 2),
                "valid_sampled_tokens_count": [SENTINEL] * (batch + 2),
                "vocab_size": VOCAB_SIZE,
                "num_sampled_tokens_per_req": width,
            }
            yield Case(
                "eagle_prepare_next_token_padded_kernel",
                f"after K={previous_k}, {batch} requests",
                inputs,
                _next_token_launch(inputs, batch, width),
            )


def _next_token_launch(inputs: dict[str, Any], batch: int, width: int):
    def launch(torch: Any, device: str) -> Launch:
        i32 = torch.int32
        args = [
            torch.tensor(inputs["sampled_token_ids"], dtype=i32, device=device),
            torch.tensor(inputs["discard_request_mask"], dtype=torch.bool, device=device),
            torch.tensor(inputs["backup_next_token_ids"], dtype=i32, device=device),
            torch.tensor(inputs["next_token_ids"], dtype=i32, device=device),
            torch.tensor(inputs["valid_sampled_tokens_count"], dtype=i32, device=device),
            VOCAB_SIZE,
            width,
            batch,
            width,  # the row stride of sampled_token_ids
        ]
        outputs = {"next_token_ids": 3, "valid_sampled_tokens_count": 4}
        return Launch(args, {"BLOCK_SIZE_TOKENS": _next_pow2(width)}, (batch,), outputs)

    return launch


def rejection_cases(rng: random.Random, per_pair: int) -> Iterator[Case]:
    for max_spec_len in STEP_KS:
        for _ in range(per_pair * 2):
            batch = rng.choice((1, 3, 16, 64))
            drafts = [max_spec_len if rng.random() < 0.8 else 0 for _ in range(batch)]
            argmax, draft_ids = [], []
            for count in drafts:
                agree = rng.randint(0, count)
                target = [rng.randrange(VOCAB_SIZE) for _ in range(count)]
                argmax += target
                draft_ids += [
                    t if i < agree else (t + 1) % VOCAB_SIZE for i, t in enumerate(target)
                ]
            greedy = None if rng.random() < 0.5 else [rng.random() < 0.8 for _ in range(batch)]
            inputs = {
                "output_token_ids": [[-1] * (max_spec_len + 1) for _ in range(batch)],
                "cu_num_draft_tokens": _cumulative(drafts),
                "draft_token_ids": draft_ids,
                "target_argmax": argmax,
                "bonus_token_ids": [rng.randrange(VOCAB_SIZE) for _ in range(batch)],
                "is_greedy": greedy,
            }
            yield Case(
                "rejection_greedy_sample_kernel",
                f"K={max_spec_len}, {batch} requests, is_greedy "
                f"{'None' if greedy is None else 'set'}",
                inputs,
                _rejection_launch(inputs, batch, max_spec_len),
            )


def _rejection_launch(inputs: dict[str, Any], batch: int, max_spec_len: int):
    def launch(torch: Any, device: str) -> Launch:
        i32 = torch.int32
        greedy = inputs["is_greedy"]
        args = [
            torch.tensor(inputs["output_token_ids"], dtype=i32, device=device),
            torch.tensor(inputs["cu_num_draft_tokens"], dtype=i32, device=device),
            torch.tensor(inputs["draft_token_ids"], dtype=i32, device=device),
            torch.tensor(inputs["target_argmax"], dtype=torch.int64, device=device),
            torch.tensor(inputs["bonus_token_ids"], dtype=i32, device=device),
            None if greedy is None else torch.tensor(greedy, dtype=torch.bool, device=device),
            max_spec_len,
            None,
            None,
        ]
        return Launch(args, {"SYNTHETIC_MODE": False}, (batch,), {"output_token_ids": 0})

    return launch


# kernel name -> (its file, the reference, the cases)
KERNELS: dict[str, tuple[str, Callable[..., dict], Callable[..., Iterator[Case]]]] = {
    "copy_and_expand_eagle_inputs_kernel": (
        SPEC_DECODE_UTILS,
        kernel_reference.copy_and_expand_eagle_inputs,
        copy_and_expand_cases,
    ),
    "eagle_prepare_inputs_padded_kernel": (
        SPEC_DECODE_UTILS,
        kernel_reference.eagle_prepare_inputs_padded,
        prepare_inputs_cases,
    ),
    "eagle_prepare_next_token_padded_kernel": (
        SPEC_DECODE_UTILS,
        kernel_reference.eagle_prepare_next_token_padded,
        next_token_cases,
    ),
    "rejection_greedy_sample_kernel": (
        REJECTION_SAMPLER,
        kernel_reference.rejection_greedy_sample,
        rejection_cases,
    ),
}


def all_cases(
    seed: int = 0, per_pair: int = 2, only: tuple[str, ...] = tuple(KERNELS)
) -> Iterator[Case]:
    rng = random.Random(seed)
    for name, (_, _, cases) in KERNELS.items():
        if name in only:
            yield from cases(rng, per_pair)


def step_k(case: Case) -> int:
    """The K a case exercises (its layout's, or the verified drafts')."""
    inputs = case.inputs
    if "num_padding_slots_per_request" in inputs:
        return inputs["num_padding_slots_per_request"]
    if "num_sampled_tokens_per_req" in inputs:
        return inputs["num_sampled_tokens_per_req"] - 1
    if "output_token_ids" in inputs:
        return len(inputs["output_token_ids"][0]) - 1
    cumulative = inputs["cu_num_draft_tokens"]
    return max(b - a for a, b in zip([0, *cumulative], cumulative, strict=False))
