"""[Spec Decode] Dynamic SD: pick K for the batch the drafts are verified in, waiting requests counted

With dynamic speculative decoding (`num_speculative_tokens_per_batch_size`), the scheduler
picks a step's K from the number of requests it scheduled in that step. The drafts that K
asks for are verified in the next step, whose batch also holds the requests that were still
waiting. While a burst of requests is admitted (prefill chunks spread over several steps
by the token budget), the first steps schedule a fraction of the burst, so they pick the K
of a small batch: the drafter prefills those prompts and drafts at that K, and the next
step verifies K drafts per request in a batch the schedule says should not draft at all.
A schedule that ends in K=0 at high load (where speculation loses) therefore drafts at its
highest K exactly when a load spike arrives.

Fix: the lookup takes the scheduled requests plus the waiting queue, clamped to the
schedule's largest batch size (`max_num_seqs`), which is also what the request admission
reads for the EAGLE prefix-cache block (`keep_prefix_block_at_k0`). A load that stays within
one range is unchanged. A waiting request that cannot join yet (the KV cache is full)
counts too; the step then drafts at the K of the load the engine holds, which is no higher
than that of the batch it runs. Once the waiting queue is empty nothing changes: as a burst
drains, K rises with the shrinking batch as before.

Measured on vLLM's CPU build (P-EAGLE, the schedule [[1,16,7],[17,40,3],[41,1024,0]],
64 clients each sending one HumanEval chat prompt for 64 tokens at once, side by side with
the same target and no drafter): see docs/speed-at-every-load.md in the repository that
carries this patch.

Test: tests/test_vllm_patches.py serves the demo pair in-process with a token budget that
admits a burst of four prompts over several steps, and records every step's K with the
requests scheduled and waiting: no step drafts while the load is in the schedule's K=0 range.
"""

from __future__ import annotations

from vllm_patches import Edit, Patch

LOOKUP = Edit(
    before="""        # Dynamic speculative decoding: compute optimal K
        num_spec_tokens_to_schedule = self.num_spec_tokens
        if self.dynamic_sd_lookup is not None and len(num_scheduled_tokens) > 0:
            num_spec_tokens_to_schedule = self.dynamic_sd_lookup[
                len(num_scheduled_tokens)
            ]
""",
    after="""        # Dynamic speculative decoding: compute optimal K for the batch its
        # drafts are verified in: this step's requests and the waiting ones.
        num_spec_tokens_to_schedule = self.num_spec_tokens
        if self.dynamic_sd_lookup is not None and len(num_scheduled_tokens) > 0:
            num_spec_tokens_to_schedule = self.dynamic_sd_lookup[
                min(
                    len(num_scheduled_tokens) + len(self.waiting),
                    len(self.dynamic_sd_lookup) - 1,
                )
            ]
""",
)

PATCH = Patch(name="dynamic_k_counts_waiting", path="v1/core/sched/scheduler.py", edits=(LOOKUP,))
