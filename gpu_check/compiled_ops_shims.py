"""Shims and switches for vLLM 0.32's compiled extensions, so that the CUDA wheel's own
Python source runs on a GPU machine that has torch and Triton but not vLLM's compiled ops
(gpu_check.bundle). Test tooling only, never in the image: each shim names the place of the
CUDA wheel's source it answers, and is the smallest thing that lets that place go on.

Everything such a run computes on the GPU is torch or Triton already (the TRITON_ATTN
backend and its KV write, the native RMSNorm/SiLU/RoPE, the samplers, the P-EAGLE kernels,
xgrammar's bitmask). On the way, vLLM imports two compiled modules without a guard, looks
up about twenty `torch.ops._C` ops by name (their `.default` overloads: pattern tables of
the compile passes, FixFunctionalizationPass), and calls a few: `weak_ref_tensor` (CUDA
graph capture), `cutlass_scaled_mm_supports_block_fp8` (at import), and in eager mode the
CustomOps' kernels. The schemas are upstream's (csrc/libtorch_stable/torch_bindings.cpp).

`install()` runs in every Python process (the bundle's sitecustomize.py) before vLLM is
imported. Standard library and torch only.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Callable

# Switches, set in every process unless the caller set them.
ENVIRONMENT = {
    # v1/sample/ops/topk_topp_sampler.py:101 imports FlashInfer's sampler (compiled) unless 0.
    "VLLM_USE_FLASHINFER_SAMPLER": "0",
    # The front passes it to vLLM as --attention-backend: FLASH_ATTN (vLLM's choice on a GPU)
    # is compiled; TRITON_ATTN is Triton, its KV write too (triton_attn.py:766).
    "SM_VLLM_ATTENTION_BACKEND": "TRITON_ATTN",
    "VLLM_NO_USAGE_STATS": "1",
}
# The speculative config's part: the drafter picks its own attention backend unless the
# config names one (v1/spec_decode/llm_base_proposer.py:1282), and on bfloat16 that is
# FLASH_ATTN (gpu_check/image_check.py adds this on the bundle's path).
DRAFTER_SETTINGS = {"attention_backend": "TRITON_ATTN"}
# platforms/cuda.py:23 `import vllm._C_stable_libtorch` (its ops register on import).
EMPTY_MODULES = ("vllm._C_stable_libtorch",)

# (schema, implementation or None): None only looked up, never called on this path.
SCHEMAS: dict[str, str] = {
    # Called: utils/torch_utils.py:888, from compilation/cuda_graph.py:333 during capture.
    "weak_ref_tensor": "weak_ref_tensor(Tensor input) -> Tensor",
    # Called by Model Runner V2 (vLLM's choice without speculation): v1/worker/gpu/
    # buffer_utils.py:35, through utils/torch_utils.py:941.
    "get_cuda_view_from_cpu_tensor": "get_cuda_view_from_cpu_tensor(Tensor cpu_tensor) -> Tensor",
    # Called at import: quantization/utils/w8a8_utils.py:41 (and its kin, by capability).
    "cutlass_scaled_mm_supports_block_fp8": (
        "cutlass_scaled_mm_supports_block_fp8(int cuda_device_capability) -> bool"
    ),
    "cutlass_scaled_mm_supports_fp8": (
        "cutlass_scaled_mm_supports_fp8(int cuda_device_capability) -> bool"
    ),
    "cutlass_scaled_mm_supports_fp4": (
        "cutlass_scaled_mm_supports_fp4(int cuda_device_capability) -> bool"
    ),
    "cutlass_group_gemm_supported": (
        "cutlass_group_gemm_supported(int cuda_device_capability) -> bool"
    ),
    # Called in eager mode (custom_ops 'all', IR priority vllm_c first): activation.py:146,
    # rotary_embedding/base.py:244, kernels/vllm_c.py:43 and :86; looked up in both modes.
    "silu_and_mul": "silu_and_mul(Tensor! result, Tensor input) -> ()",
    "rms_norm": "rms_norm(Tensor! result, Tensor input, Tensor? weight, float epsilon) -> ()",
    "fused_add_rms_norm": (
        "fused_add_rms_norm(Tensor! input, Tensor! residual, Tensor? weight, float epsilon) -> ()"
    ),
    "rotary_embedding": (
        "rotary_embedding(Tensor positions, Tensor! query, Tensor!? key, int head_size, "
        "Tensor cos_sin_cache, bool is_neox, int rope_dim_offset=0, bool inverse=False) -> ()"
    ),
    # Called when a request sets a penalty: model_executor/layers/utils.py:72.
    "apply_repetition_penalties_": (
        "apply_repetition_penalties_(Tensor! logits, Tensor prompt_mask, Tensor output_mask, "
        "Tensor repetition_penalties) -> ()"
    ),
    # Looked up only: fusion/matcher_utils.py, rms_quant_fusion.py, act_quant_fusion.py,
    # qk_norm_rope_fusion.py (at import) and fix_functionalization.py (during compile).
    "silu_and_mul_quant": "silu_and_mul_quant(Tensor! result, Tensor input, Tensor scale) -> ()",
    "silu_and_mul_per_block_quant": (
        "silu_and_mul_per_block_quant(Tensor! out, Tensor input, Tensor! scales, int group_size, "
        "Tensor? scale_ub=None, bool is_scale_transposed=False) -> ()"
    ),
    "static_scaled_fp8_quant": (
        "static_scaled_fp8_quant(Tensor! result, Tensor input, Tensor scale, "
        "int[]? group_shape=None) -> ()"
    ),
    "dynamic_scaled_fp8_quant": (
        "dynamic_scaled_fp8_quant(Tensor! result, Tensor input, Tensor! scale) -> ()"
    ),
    "dynamic_per_token_scaled_fp8_quant": (
        "dynamic_per_token_scaled_fp8_quant(Tensor! result, Tensor input, Tensor! scale, "
        "Tensor? scale_ub) -> ()"
    ),
    "rms_norm_static_fp8_quant": (
        "rms_norm_static_fp8_quant(Tensor! result, Tensor input, Tensor weight, Tensor scale, "
        "float epsilon) -> ()"
    ),
    "fused_add_rms_norm_static_fp8_quant": (
        "fused_add_rms_norm_static_fp8_quant(Tensor! result, Tensor input, Tensor! residual, "
        "Tensor weight, Tensor scale, float epsilon) -> ()"
    ),
    "rms_norm_dynamic_per_token_quant": (
        "rms_norm_dynamic_per_token_quant(Tensor! result, Tensor input, Tensor weight, "
        "Tensor! scale, float epsilon, Tensor? scale_ub, Tensor!? residual) -> ()"
    ),
    "fused_qk_norm_rope": (
        "fused_qk_norm_rope(Tensor! qkv, int num_heads_q, int num_heads_k, int num_heads_v, "
        "int head_dim, float eps, Tensor q_weight, Tensor k_weight, Tensor cos_sin_cache, "
        "bool is_neox, Tensor position_ids, int forced_token_heads_per_warp=-1) -> ()"
    ),
}


def borrowed(tensor, device):
    """A tensor on `tensor`'s memory, addressed from `device`, that does not own it (the
    compiled ops' from_blob). Makes no allocation, so it is safe inside a CUDA graph capture."""
    import torch

    storage = tensor.untyped_storage()
    memory = torch._C._construct_storage_from_data_pointer(
        storage.data_ptr(), device, storage.nbytes()
    )
    alias = torch.empty(0, dtype=tensor.dtype, device=device)
    return alias.set_(memory, tensor.storage_offset(), tensor.size(), tensor.stride())


def weak_ref_tensor(tensor):
    """An alias that does not keep the memory alive: CUDA graph capture keeps its outputs so,
    and the graph's pool owns the memory."""
    return borrowed(tensor, tensor.device)


def get_cuda_view_from_cpu_tensor(cpu_tensor):
    """The GPU's view of pinned host memory: under unified virtual addressing a pinned
    page's device address is its host address, so the view is that address on the GPU."""
    import torch

    return borrowed(cpu_tensor, torch.device("cuda", torch.cuda.current_device()))


def silu_and_mul(result, x) -> None:
    import torch.nn.functional as F

    half = x.shape[-1] // 2
    result.copy_(F.silu(x[..., :half]) * x[..., half:])


def rms_norm(result, x, weight, epsilon: float) -> None:
    from vllm import ir  # vLLM's own native implementation

    result.copy_(ir.ops.rms_norm.impls["native"].impl_fn(x, weight, epsilon))


def fused_add_rms_norm(x, residual, weight, epsilon: float) -> None:
    from vllm import ir

    out, added = ir.ops.fused_add_rms_norm.impls["native"].impl_fn(x, residual, weight, epsilon)
    residual.copy_(added)
    x.copy_(out)


def rotary_embedding(
    positions, query, key, head_size, cos_sin_cache, is_neox, rope_dim_offset=0, inverse=False
) -> None:
    from vllm.model_executor.layers.rotary_embedding.base import RotaryEmbedding

    if rope_dim_offset or inverse:
        raise NotImplementedError("rotary_embedding shim: rope_dim_offset and inverse are 0")
    rotary_dim = cos_sin_cache.shape[-1]
    q, k = RotaryEmbedding.forward_static(
        positions, query, key, head_size, rotary_dim, cos_sin_cache, is_neox
    )
    query.copy_(q.view_as(query))
    if key is not None:
        key.copy_(k.view_as(key))


def apply_repetition_penalties_(logits, prompt_mask, output_mask, penalties) -> None:
    from vllm._custom_ops import apply_repetition_penalties_torch

    apply_repetition_penalties_torch(logits, prompt_mask, output_mask, penalties)


def unsupported(capability: int) -> bool:
    return False


IMPLEMENTATIONS: dict[str, Callable] = {
    "weak_ref_tensor": weak_ref_tensor,
    "get_cuda_view_from_cpu_tensor": get_cuda_view_from_cpu_tensor,
    "cutlass_scaled_mm_supports_block_fp8": unsupported,
    "cutlass_scaled_mm_supports_fp8": unsupported,
    "cutlass_scaled_mm_supports_fp4": unsupported,
    "cutlass_group_gemm_supported": unsupported,
    "silu_and_mul": silu_and_mul,
    "rms_norm": rms_norm,
    "fused_add_rms_norm": fused_add_rms_norm,
    "rotary_embedding": rotary_embedding,
    "apply_repetition_penalties_": apply_repetition_penalties_,
}
_kept: list = []  # the torch.library.Library must outlive install()


class EmptyModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """An empty module for each name in `names`, imported as if it were there."""

    def __init__(self, names: tuple[str, ...]):
        self.names = set(names)

    def find_spec(self, name, path=None, target=None):
        return importlib.machinery.ModuleSpec(name, self) if name in self.names else None

    def create_module(self, spec):
        return types.ModuleType(spec.name, "a gpu_check.compiled_ops_shims stand-in")

    def exec_module(self, module) -> None:
        pass


def flash_attn_package() -> None:
    """vllm_flash_attn/__init__.py:33 raises ImportError without FA2 or FA3 (compiled), and
    attention/backends/fa_utils.py:22 imports it unguarded on CUDA (Llama reaches it through
    layers/attention). The package without its __init__: its modules still import from
    disk, and a name asked of it comes from flash_attn_interface (FA2/FA3 unavailable, as
    they are). The attention backend is TRITON_ATTN (ENVIRONMENT), so nothing calls them."""
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        return
    folder = os.path.join(next(iter(spec.submodule_search_locations)), "vllm_flash_attn")
    name = "vllm.vllm_flash_attn"
    package = types.ModuleType(name)
    package.__path__ = [folder]
    package.__package__ = name
    package.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
    package.__spec__.submodule_search_locations = [folder]

    def forwarded(attribute: str):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        interface = importlib.import_module(f"{name}.flash_attn_interface")
        return getattr(interface, attribute)

    package.__getattr__ = forwarded
    sys.modules.setdefault(name, package)


def compiled_ops() -> None:
    import torch

    library = torch.library.Library("_C", "FRAGMENT")
    _kept.append(library)
    for name, schema in SCHEMAS.items():
        if hasattr(torch.ops._C, name):
            continue
        library.define(schema)
        if name in IMPLEMENTATIONS:
            library.impl(name, IMPLEMENTATIONS[name], "CompositeExplicitAutograd")
        if name == "weak_ref_tensor":  # traced shapes: an alias has its input's
            torch.library.register_fake("_C::weak_ref_tensor", lib=library)(torch.empty_like)


def install() -> None:
    if _kept:
        return
    for variable, value in ENVIRONMENT.items():
        os.environ.setdefault(variable, value)
    sys.meta_path.insert(0, EmptyModules(EMPTY_MODULES))
    flash_attn_package()
    compiled_ops()
