"""[Sampler][Spec Decode] Top-k without sorting accepts a batch of no rows

`apply_top_k_only` (the PyTorch top-k path taken where a CPU sync is allowed: the CPU
platform, which has no Triton) calls `k.max()` on the per-row top-k values, and `max()` of
an empty tensor raises. Under speculative decoding the rejection sampler passes it the
target's logits at the draft positions only; a step that verifies no drafts (a prompt's
step, a request whose drafts were all trimmed, a batch whose drafter proposed nothing yet)
has none, so `apply_sampling_constraints` hands it `[0, vocab]` logits and an empty `k`.
Any sampled request that sets `top_k` (and no `top_p`) therefore raises in the worker at its
first step, and the `RuntimeError: max(): Expected reduction dim to be specified for
input.numel() == 0` kills EngineCore: every request in flight gets a 500 and the engine must
be restarted. Seen here on vLLM's CPU build with P-EAGLE K=3: one chat request with
`temperature: 0.8, top_k: 5` ends the engine.

Fix: return the logits as they are when there are no rows, as the Triton path
(`apply_top_k_top_p_triton`, `batch_size == 0`) already does. Nothing changes for a batch
with rows. On CUDA the Triton path is taken and this function is not reached; the patched
text is the same in the CUDA wheel.

Test: tests/vllm_patches/test_vllm_patches.py (empty logits and k through
`apply_top_k_top_p_pytorch` as the CPU platform calls it) and tests/serving/test_speculation.py
(sampled chats with `top_k` on the P-EAGLE container are answered and the engine stays up; top_k=1
answers the greedy tokens).
"""

from __future__ import annotations

from vllm_patches import Edit, Patch

NO_ROWS = Edit(
    before="""    no_top_k_mask = k == logits.shape[1]
    # Set non-top-k rows to 1 so that we can gather.
""",
    after="""    if logits.shape[0] == 0:
        # No rows (a speculative step verifying no drafts): nothing to mask, and the
        # max() below has nothing to reduce.
        return logits
    no_top_k_mask = k == logits.shape[1]
    # Set non-top-k rows to 1 so that we can gather.
""",
)

PATCH = Patch(name="top_k_of_no_rows", path="v1/sample/ops/topk_topp_sampler.py", edits=(NO_ROWS,))
