"""[CPU][Spec Decode] The CPU expand kernel writes into the caller's tensor

On the CPU platform without Triton, `CpuPlatform.register_triton_kernel_overrides` replaces
the rejection sampler's `expand_kernel` with `cpu_triton_utils._expand_kernel_impl`, which
passes `_ensure_int64(output)` to the C++ op. For a float32 output (every use in
`apply_sampling_constraints`: temperature, top-k, top-p spread over each request's draft
positions) that is a new int64 copy: the op fills the copy, and the caller's tensor, made
with `new_empty`, keeps whatever memory it was given. The float inputs are truncated to
integers too, and greedy rows' temperature 0 is not replaced by 1.

So in any batch under speculative decoding that is not all greedy, the target's logits are
divided by uninitialised memory before sampling and verification. Seen here (P-EAGLE K=7 on
the CPU build, two greedy JSON-schema requests beside two sampled chats): about a third of
the grammar-bound requests ended with `grammar rejected tokens [0] ... Terminating request`
and a 500 (a division by ~0 or a negative turns the masked row to all -inf or +inf, whose
argmax is token 0), and the sampled requests drew from garbage distributions. Upstream:
vllm-project/vllm#55005 (issue), #55006 (an open fix of the same shape).

Fix: expand at the caller's dtype into the caller's tensor: each request's value, with
`replace_from` replaced by `replace_to`, repeated over its tokens (`repeat_interleave`). The
CUDA path is untouched: there `expand_kernel` is the Triton kernel, which stores into the
caller's tensor at its dtype, and this override is registered only without Triton.

Test: tests/vllm_patches/test_vllm_patches.py (the CPU override, called as the rejection sampler
calls it, gives [a, a, b, b, b, c] with 0 replaced, for float and integer inputs) and
tests/serving/test_fuzz.py (no fuzzed body, grammar-bound ones beside sampled ones, gets a 500).
"""

from __future__ import annotations

from vllm_patches import Edit, Patch

EXPAND = Edit(
    before="""    torch.ops._C.expand_kernel_impl(
        _ensure_int64(output),
        _ensure_int64(input_val),
        _ensure_int64(cu_num_tokens),
        replace_from,
        replace_to,
    )
""",
    after="""    # At the caller's dtype, into the caller's tensor: an int64 temporary would take
    # the writes (and truncate float temperatures and top-p values).
    cu_num_tokens = cu_num_tokens.to(torch.int64)
    counts = torch.diff(cu_num_tokens, prepend=cu_num_tokens.new_zeros(1))
    values = input_val.masked_fill(input_val == replace_from, replace_to)
    num_tokens = int(cu_num_tokens[-1]) if cu_num_tokens.numel() else 0
    output[:num_tokens].copy_(torch.repeat_interleave(values, counts))
""",
)

PATCH = Patch(
    name="cpu_expand_writes_its_output", path="utils/cpu_triton_utils.py", edits=(EXPAND,)
)
