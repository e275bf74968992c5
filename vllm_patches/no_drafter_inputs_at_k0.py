"""[Spec Decode] Dynamic SD: with synchronous scheduling, a K=0 step builds no drafter inputs

With dynamic speculative decoding (`num_speculative_tokens_per_batch_size`) a step whose
batch size maps to K=0 proposes nothing: a parallel-drafting proposer returns an empty
[batch, 0] draft before any drafter work. The model runner's `propose_draft_token_ids()`
still prepares the drafter's inputs first: `prepare_next_token_ids_padded()` (a kernel
over the sampled tokens) and, for EAGLE-3, the concatenation of the target's auxiliary
hidden states over every scheduled token. With asynchronous scheduling the next tokens are
read by the next step's inputs (`_copy_valid_sampled_token_count`); with synchronous
scheduling nothing reads them.

Measured on vLLM's CPU build, where the kernel runs through the CPU Triton shim (P-EAGLE,
a schedule at K=0 for every batch size, one client, in-process, against the same target
without a drafter): about 0.35 ms of a 10 ms step, the gap between the two engines.

Fix: for a parallel-drafting proposer (DFlash excepted, which drafts at K=0), a step
scheduled at K=0 under synchronous scheduling returns the empty draft at once, the same
[batch, 0] tensor the proposer would return. Asynchronous scheduling keeps the path as it
is. Outputs are unchanged: the step has no drafts either way.

Test: tests/vllm_patches/test_vllm_patches.py serves the demo pair in-process with a schedule that
drafts only while a request is alone and counts `prepare_next_token_ids_padded` calls on
steps with two requests (K=0): none, with answers equal to the same prompt's alone.
"""

from __future__ import annotations

from vllm_patches import Edit, Patch

EMPTY_DRAFT = Edit(
    before="""            if spec_config.disable_padded_drafter_batch:
                # When padded-batch is disabled, the sampled_token_ids should be
                # the cpu-side list[list[int]] of valid sampled tokens for each
                # request, with invalid requests having empty lists.
""",
    after="""            if (
                num_spec_tokens_to_schedule == 0
                and self.valid_sampled_token_count_event is None
                and getattr(self.drafter, "parallel_drafting", False)
                and not spec_config.use_dflash()
            ):
                # Dynamic SD at K=0, synchronous scheduling: the proposer drafts
                # nothing and nothing reads this step's next tokens.
                return torch.empty(
                    common_attn_metadata.batch_size(),
                    0,
                    device=self.device,
                    dtype=torch.int64,
                )
            if spec_config.disable_padded_drafter_batch:
                # When padded-batch is disabled, the sampled_token_ids should be
                # the cpu-side list[list[int]] of valid sampled tokens for each
                # request, with invalid requests having empty lists.
""",
)

PATCH = Patch(
    name="no_drafter_inputs_at_k0", path="v1/worker/gpu_model_runner.py", edits=(EMPTY_DRAFT,)
)
