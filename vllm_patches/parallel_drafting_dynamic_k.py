"""[Spec Decode] Dynamic SD with parallel drafting (P-EAGLE/PARD): lay out the step's K.

With `num_speculative_tokens_per_batch_size` (dynamic speculative decoding) the scheduler
picks K per step and the V1 runner passes it to `propose(num_speculative_tokens, ...)`.
A parallel-drafting proposer sized its per-request slots (`extra_slots_per_request`,
`net_num_new_slots_per_request`, `needs_extra_input_slots`) once in `__init__` for the
configured (largest) K and never updated them. A step with a smaller K then sampled
batch x largest-K rows and failed in `draft_token_ids.view(-1, K)` ("shape '[-1, 3]' is
invalid for input of size 133" for 19 requests, largest K 7, step K 3), and a K=0 step
still ran the whole largest-K drafter pass before returning no drafts.

This syncs the three layout fields with the step's K at the top of `propose()` (K slots
per request, K-1 of them mask slots for EAGLE-style drafters), and at K=0 returns an empty
[batch, 0] tensor before any drafter work. The target model verifies every draft, so
outputs are unchanged; the cost of skipping the K=0 pass is that the drafter's KV cache
is not written for the tokens of K=0 steps, which can lower acceptance after K rises
again. DFlash keeps its own layout (`DFlashProposer.set_inputs_first_pass`) and its K=0
pass, so it is left as it is. Same idea as vllm-project/vllm PR 45695 (open).
"""

from vllm_patches import Edit, Patch

EDIT1 = Edit(
    before="""        self.num_speculative_tokens = num_speculative_tokens
        self._last_draft_probs = None
        batch_size = common_attn_metadata.batch_size()
""",
    after="""        self.num_speculative_tokens = num_speculative_tokens
        self._last_draft_probs = None
        batch_size = common_attn_metadata.batch_size()

        if self.parallel_drafting and self.method != "dflash":
            # Dynamic SD: K changes per step. Lay out this step's K slots per
            # request, not the configured maximum K from __init__.
            if num_speculative_tokens == 0:
                # No drafts this step: skip the drafter entirely.
                return torch.empty(
                    batch_size, 0, device=self.device, dtype=torch.int64
                )
            self.extra_slots_per_request = num_speculative_tokens
            self.net_num_new_slots_per_request = num_speculative_tokens - (
                1 if self.pass_hidden_states_to_model else 0
            )
            self.needs_extra_input_slots = self.net_num_new_slots_per_request > 0
""",
)

PATCH = Patch(
    name="parallel_drafting_dynamic_k",
    path="v1/spec_decode/llm_base_proposer.py",
    edits=(EDIT1,),
)
