"""gpu_check's kernel check (make kernel-check): its reference is what the CPU build's C++
computes, vLLM's Triton kernels (the CUDA wheel's source, in Triton's interpreter) agree with
it, a kernel that computes something else is reported, and a machine without a GPU is told
that nothing was checked."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from gpu_check import kernel_cases, kernels, vllm_source
from harness.locations import REPO_ROOT


@pytest.fixture(scope="module")
def cuda_source():
    return vllm_source.ensure()


def test_the_reference_is_what_the_cpu_builds_kernels_compute():
    from vllm.platforms import current_platform

    current_platform.import_kernels()
    from vllm.utils import cpu_triton_utils as cpu

    cpp = {
        "copy_and_expand_eagle_inputs_kernel": cpu._copy_and_expand_eagle_inputs_kernel_impl,
        "eagle_prepare_inputs_padded_kernel": cpu._eagle_prepare_inputs_padded_kernel_impl,
        "eagle_prepare_next_token_padded_kernel": cpu._eagle_prepare_next_token_padded_kernel_impl,
        "rejection_greedy_sample_kernel": cpu._rejection_greedy_sample_kernel_impl,
    }
    cases = list(kernel_cases.all_cases(seed=0, per_pair=2))
    failures = [
        failure
        for case in cases
        if (
            failure := kernels.compare(
                case, lambda launch, case=case: cpp[case.kernel](*launch.args, **launch.constexprs),
                torch, "cpu",
            )
        )
    ]  # fmt: skip
    assert len(cases) > 200 and failures == []
    # Every K a schedule can step through, with the step before at another K.
    assert {kernel_cases.step_k(case) for case in cases} >= set(kernel_cases.STEP_KS)


def run_check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gpu_check", "kernels", *args],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=300,
    )


def test_the_cuda_wheels_triton_kernels_agree_with_the_reference(cuda_source):
    ran = run_check("--vllm-source", str(cuda_source), "--interpret", "--cases", "1")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "ALL EQUAL" in ran.stdout
    for name in kernel_cases.KERNELS:
        assert f"| {name} |" in ran.stdout


def test_a_kernel_that_lays_out_other_positions_is_reported(cuda_source, tmp_path):
    source = cuda_source / kernel_cases.SPEC_DECODE_UTILS
    broken = tmp_path / kernel_cases.SPEC_DECODE_UTILS
    broken.parent.mkdir(parents=True)
    text = source.read_text()
    assert text.count("positions = start_pos + j\n") == 1
    broken.write_text(
        text.replace("positions = start_pos + j\n", "positions = start_pos + j + 1\n")
    )
    only = ("--only", "copy_and_expand_eagle_inputs_kernel")
    ran = run_check("--vllm-source", str(tmp_path), "--interpret", "--cases", "1", *only)
    assert ran.returncode == 1
    assert "MISMATCHES" in ran.stdout
    assert "copy_and_expand_eagle_inputs_kernel: K=" in ran.stdout
    assert "out_positions[" in ran.stdout


def test_without_a_gpu_it_says_nothing_was_checked(cuda_source):
    ran = run_check("--vllm-source", str(cuda_source))
    assert ran.returncode == kernels.NO_GPU_EXIT, ran.stdout + ran.stderr
    assert "no CUDA GPU here" in ran.stdout and "nothing was checked" in ran.stdout


def test_a_folder_without_vllms_source_is_named(tmp_path):
    ran = run_check("--vllm-source", str(tmp_path), "--interpret")
    assert ran.returncode == 2
    assert str(tmp_path / kernel_cases.SPEC_DECODE_UTILS) in ran.stdout
    assert "Traceback" not in ran.stdout + ran.stderr
