"""gpu_check's Python path for a bare GPU machine (make gpu-bundle): what can be checked
without a GPU. The bundle's vLLM is the CUDA wheel's source with every patch applied; with
the shims (gpu_check/compiled_ops_shims.py) it imports on this machine's CPU torch, the CUDA
platform's modules and every module the path reaches included; the shims do what the
compiled ops they stand for do; and run.sh says in one sentence that it found no GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_check import bundle, vllm_source
from harness.locations import REPO_ROOT
from vllm_patches import check

# What the path reaches: the CUDA platform, the server, the engine and its worker, the
# TRITON_ATTN backend, the Llama target and its EAGLE-3 drafter, P-EAGLE's proposer, the
# samplers, the grammar, the compile passes; and the front, and its vLLM plugin.
PATH_MODULES = (
    "vllm.platforms.cuda", "vllm.entrypoints.openai.api_server", "vllm.v1.engine.core",
    "vllm.v1.worker.gpu_worker", "vllm.v1.worker.gpu_model_runner",
    "vllm.v1.attention.backends.triton_attn", "vllm.model_executor.models.llama",
    "vllm.model_executor.models.llama_eagle3", "vllm.v1.spec_decode.eagle",
    "vllm.v1.sample.sampler", "vllm.v1.sample.rejection_sampler",
    "vllm.v1.structured_output.backend_xgrammar", "vllm.compilation.backends",
    "vllm.compilation.passes.pass_manager",
    "vllm.compilation.passes.utility.fix_functionalization",
    "serving.server", "serving.parser_failures",
)  # fmt: skip


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """The bundle's source tree, as build() archives it."""
    tree = tmp_path_factory.mktemp("bundle") / "src"
    bundle.source_tree(vllm_source.ensure(), tree)
    return tree


def run_python(source: Path, code: str) -> subprocess.CompletedProcess:
    """`code` in a fresh Python whose path starts with the bundle's source (its
    sitecustomize installs the shims), then the repository."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(source), str(REPO_ROOT)])}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600
    )


def test_every_patch_is_applied_to_the_bundles_vllm_and_its_metadata_names_it(source):
    assert set(check(source / "vllm").values()) == {"applied"}
    assert "Name: vllm\nVersion: 0.32.0" in (source / "vllm-0.32.0.dist-info/METADATA").read_text()
    plugin = source / "sagemaker_vllm_peagle-0.1.0.dist-info" / "entry_points.txt"
    assert "serving.parser_failures:register" in plugin.read_text()
    assert not any((source / "vllm" / part).exists() for part in bundle.PRUNED)


def test_the_cuda_path_imports_on_this_cpu_torch_with_the_shims(source):
    code = f"""
import importlib, json, sys
from importlib.metadata import version
found = {{}}
for name in {PATH_MODULES!r}:
    try:
        importlib.import_module(name)
        found[name] = "ok"
    except Exception as error:
        found[name] = f"{{type(error).__name__}}: {{error}}"
import vllm
print(json.dumps({{"modules": found, "vllm": vllm.__file__, "version": version("vllm")}}))
"""
    ran = run_python(source, code)
    assert ran.returncode == 0, ran.stderr[-3000:]
    result = json.loads(ran.stdout.strip().splitlines()[-1])
    assert {name: "ok" for name in PATH_MODULES} == result["modules"]
    assert result["vllm"].startswith(str(source)) and result["version"] == "0.32.0"


def test_the_shims_do_what_the_compiled_ops_do(source):
    """Each called op against what it stands for, on this CPU (the CPU build registers its own
    `_C` ops, so the shims' functions are called directly); the looked-up ones have their
    `.default`; an op vLLM asks for with hasattr is still absent, so no feature is switched on
    by a stand-in."""
    code = """
import json
import torch
from gpu_check import compiled_ops_shims as shims
found = {}
x = torch.randn(4, 8)
alias = shims.weak_ref_tensor(x[:, 2:])
x.add_(1)
found["alias"] = alias.data_ptr() == x[:, 2:].data_ptr() and torch.equal(alias, x[:, 2:])
found["alias_strides"] = alias.stride() == x[:, 2:].stride()
import torch.nn.functional as F
def rms(value, weight, eps=1e-6):
    return value * torch.rsqrt(value.pow(2).mean(-1, keepdim=True) + eps) * weight
out = torch.empty(4, 4)
shims.silu_and_mul(out, x)
found["silu_and_mul"] = torch.equal(out, F.silu(x[:, :4]) * x[:, 4:])
weight = torch.rand(8) + 0.5
out = torch.empty_like(x)
shims.rms_norm(out, x, weight, 1e-6)
found["rms_norm"] = torch.allclose(out, rms(x, weight), atol=1e-5)
residual = torch.randn(4, 8)
added_x, added_residual = x.clone(), residual.clone()
shims.fused_add_rms_norm(added_x, added_residual, weight, 1e-6)
found["fused_add_residual"] = torch.allclose(added_residual, x + residual, atol=1e-6)
found["fused_add_rms_norm"] = torch.allclose(added_x, rms(x + residual, weight), atol=1e-5)
found["unsupported"] = shims.unsupported(90) is False
print(json.dumps(found))
"""
    ran = run_python(source, code)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert set(json.loads(ran.stdout.strip().splitlines()[-1]).values()) == {True}


def test_on_a_torch_without_vllms_ops_the_stand_ins_are_what_vllm_looks_up(source, tmp_path):
    """The shims alone (no vLLM imported): every op in SCHEMAS there with `.default`, the
    called ones working, and an op vLLM checks for with hasattr still absent."""
    code = """
import json
import torch
from gpu_check import compiled_ops_shims as shims
shims.compiled_ops()
found = {name: hasattr(torch.ops._C, name) for name in shims.SCHEMAS}
found["default"] = all(hasattr(getattr(torch.ops._C, n), "default") for n in shims.SCHEMAS)
x = torch.arange(6.0)
found["weak_ref_tensor"] = torch.ops._C.weak_ref_tensor(x).data_ptr() == x.data_ptr()
found["block_fp8"] = torch.ops._C.cutlass_scaled_mm_supports_block_fp8(90) is False
found["absent"] = not hasattr(torch.ops._C, "per_token_group_fp8_quant")
print(json.dumps(found))
"""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}  # no sitecustomize, no vLLM
    ran = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert set(json.loads(ran.stdout.strip().splitlines()[-1]).values()) == {True}


def test_without_a_gpu_run_sh_says_so_in_one_sentence(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(bundle.RUN_SH)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    ran = subprocess.run(
        ["bash", str(script)], cwd=REPO_ROOT, env=env, capture_output=True, text=True
    )
    assert ran.returncode == 3
    assert ran.stderr.strip() == (
        "gpu-bundle: no GPU found (torch.cuda.is_available() is False): nothing was run."
    )


def test_the_wheels_are_locked_and_the_limit_is_the_device_machines():
    versions = bundle.locked_versions("engine")
    assert all(name in versions for name in bundle.WHEELS)
    assert bundle.LIMIT_BYTES == 64 * 2**20
    assert bundle.repository_bytes() < bundle.LIMIT_BYTES
