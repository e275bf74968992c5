"""The Triton kernels of a P-EAGLE step, read from vLLM's own source and held to
`gpu_check.kernel_reference` on many batches, with K changing from step to step as a batch
size schedule changes it (`vllm_patches/parallel_drafting_dynamic_k.py`).

`python3 -m gpu_check kernels --vllm-source DIR` (make kernel-check), where DIR holds `vllm/`
of the CUDA wheel (`python -m gpu_check.vllm_source` unpacks it). It needs this machine's
torch and Triton and nothing else: no vLLM, no venv. The kernels are compiled and run on the
GPU; without one it says so and exits 77 (nothing checked). `--interpret` runs the same
kernels in Triton's interpreter on the CPU instead (TRITON_INTERPRET=1): the host suite does,
so the check itself is tested where there is no GPU.
"""

from __future__ import annotations

import ast
import os
import random
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpu_check import kernel_reference

NO_GPU_EXIT = 77  # the "skipped" exit of automake's test harness: nothing was checked
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


class KernelSourceError(Exception):
    """vLLM's source is not where it was said to be, or no longer has a kernel we check."""


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


@dataclass
class Result:
    kernel: str
    cases: int = 0
    step_ks: set[int] = field(default_factory=set)
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0


# --- reading the kernels from vLLM's source ----------------------------------------------


def load_kernels(source_root: Path, relative: str, names: list[str]) -> dict[str, Any]:
    """The named `@triton.jit` functions of one vLLM file, defined afresh from its text with
    this machine's Triton (the rest of the file, and vLLM, are never imported)."""
    import triton
    import triton.language as tl

    path = source_root / relative
    if not path.is_file():
        raise KernelSourceError(
            f"{path} is missing; pass --vllm-source a folder holding vLLM's vllm/ "
            "(python -m gpu_check.vllm_source unpacks the CUDA wheel's)."
        )
    tree = ast.parse(path.read_text(), filename=str(path))
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    if missing := sorted(set(names) - {n.name for n in found}):
        raise KernelSourceError(f"{path} no longer defines {missing}; port gpu_check/kernels.py")
    namespace: dict[str, Any] = {"triton": triton, "tl": tl, "__name__": "vllm_kernels"}
    # Compiled with the file's own name and line numbers: Triton reads each kernel's text
    # back from the file.
    exec(compile(ast.Module(body=found, type_ignores=[]), str(path), "exec"), namespace)
    return {name: namespace[name] for name in names}


# --- the cases ---------------------------------------------------------------------------


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


def compare(case: Case, run: Callable[[Launch], None], torch: Any, device: str) -> str | None:
    """Launch `case` with `run` and compare every output with the reference; the first
    difference, or None."""
    launch = case.launch(torch, device)
    run(launch)
    reference = KERNELS[case.kernel][1](**case.inputs)
    for name, index in launch.outputs.items():
        got = launch.args[index].cpu().tolist()
        want = reference[name]
        if got != want:
            flat_got = got if not got or not isinstance(got[0], list) else sum(got, [])
            flat_want = want if not want or not isinstance(want[0], list) else sum(want, [])
            pairs = enumerate(zip(flat_got, flat_want, strict=True))
            at = next(i for i, (g, w) in pairs if g != w)
            return (
                f"{case.label}: {name}[{at}] is {flat_got[at]}, the reference says {flat_want[at]}"
            )
    return None


def check(
    source_root: Path,
    device: str,
    seed: int = 0,
    per_pair: int = 2,
    only: tuple[str, ...] = tuple(KERNELS),
) -> list[Result]:
    """Run every case's Triton kernel on `device` ('cuda', or 'cpu' under the interpreter)."""
    import torch

    kernels: dict[str, Any] = {}
    for relative in {KERNELS[name][0] for name in only}:
        names = [name for name in only if KERNELS[name][0] == relative]
        kernels.update(load_kernels(source_root, relative, names))
    results = {name: Result(name) for name in only}
    for case in all_cases(seed, per_pair, only):
        result = results[case.kernel]
        kernel = kernels[case.kernel]

        def run(launch: Launch, kernel: Any = kernel) -> None:
            kernel[launch.grid](*launch.args, **launch.constexprs)
            if device == "cuda":
                torch.cuda.synchronize()

        began = time.perf_counter()
        try:
            failure = compare(case, run, torch, device)
        except Exception as error:  # a kernel that fails to compile or launch is a finding
            failure = f"{case.label}: {type(error).__name__}: {error}"
        result.seconds += time.perf_counter() - began
        result.cases += 1
        result.step_ks.add(step_k(case))
        if failure:
            result.failures.append(failure)
    return list(results.values())


def report(results: list[Result], header: str) -> str:
    lines = [header, "", "| kernel | cases | K covered | mismatches | seconds |"]
    lines.append("|---|---|---|---|---|")
    for r in results:
        ks = ",".join(str(k) for k in sorted(r.step_ks))
        lines.append(f"| {r.kernel} | {r.cases} | {ks} | {len(r.failures)} | {r.seconds:.1f} |")
    for r in results:
        for failure in r.failures[:5]:
            lines.append(f"- {r.kernel}: {failure}")
    return "\n".join(lines)


def environment(device: str) -> str:
    import torch
    import triton

    where = torch.cuda.get_device_name(0) if device == "cuda" else "CPU, Triton's interpreter"
    return (
        f"{where}; Python {sys.version.split()[0]}, torch {torch.__version__}, "
        f"triton {triton.__version__}"
    )


def main(
    source_root: Path,
    interpret: bool,
    seed: int,
    per_pair: int,
    only: tuple[str, ...] = tuple(KERNELS),
) -> int:
    if interpret:
        # Read when a kernel is defined: the kernels are defined after this.
        os.environ["TRITON_INTERPRET"] = "1"
    try:
        import torch
        import triton  # noqa: F401
    except ImportError as error:
        print(f"kernel check: this Python has no {error.name}; it needs torch and Triton.")
        return 2
    if not interpret and not torch.cuda.is_available():
        print(
            f"kernel check: no CUDA GPU here (torch {torch.__version__} sees none), so nothing "
            "was checked. Run it on a GPU machine, or add --interpret to run the kernels in "
            "Triton's interpreter on the CPU."
        )
        return NO_GPU_EXIT
    device = "cpu" if interpret else "cuda"
    began = time.perf_counter()
    try:
        results = check(source_root, device, seed, per_pair, only)
    except KernelSourceError as error:
        print(f"kernel check: {error}")
        return 2
    failed = sum(len(r.failures) for r in results)
    header = (
        f"Kernel check: vLLM's P-EAGLE Triton kernels against the reference "
        f"({source_root}), {environment(device)}, {time.perf_counter() - began:.1f} s: "
        f"{'ALL EQUAL' if not failed else f'{failed} MISMATCHES'}"
    )
    print(report(results, header))
    return 1 if failed else 0
