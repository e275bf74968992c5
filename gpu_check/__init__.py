"""Checks of the GPU path that run beside the image, not in it.

- `kernels`: vLLM's Triton kernels that lay out P-EAGLE's drafter inputs and verify its drafts,
  read from the CUDA wheel's own source and run against a plain reference of what they must
  compute (the same reference the host suite proves equal to the CPU build's C++
  replacements). Needs only Python, torch and Triton: `make kernel-check`.
- `vllm_source`: the CUDA wheel of the vLLM release the image is built on, its Python source
  unpacked once into a cache (the kernels above, and the static check that every
  `vllm_patches` module applies to the GPU image's vLLM).

Standard library only at import time: a bare GPU machine has torch and Triton and nothing
of ours installed.
"""
