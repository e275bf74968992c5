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
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpu_check.kernel_cases import KERNELS, Case, Launch, all_cases, step_k

NO_GPU_EXIT = 77  # the "skipped" exit of automake's test harness: nothing was checked


class KernelSourceError(Exception):
    """vLLM's source is not where it was said to be, or no longer has a kernel we check."""


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
    # In KERNELS' order: a set's would follow the run's string hashing, and a missing file
    # would then be named at random.
    for relative in dict.fromkeys(KERNELS[name][0] for name in only):
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
