"""[Core][Spec Decode] Dynamic SD: a step that scheduled K=0 has no drafts to fetch

With synchronous scheduling (the CPU platform's only mode; a user can turn asynchronous
scheduling off too), every speculative step ends in `post_step()`, which makes a third round
trip to the workers, `take_draft_token_ids`, for the drafts the step proposed. With dynamic
speculative decoding (`num_speculative_tokens_per_batch_size`), a step whose batch size maps
to K=0 proposes none: the scheduler asked for no drafts, the proposer returns an empty
[batch, 0] draft, and the scheduler cleared every request's `spec_token_ids` when it
scheduled the step. The RPC still runs and brings back empty lists.

Profiled on vLLM's CPU build (P-EAGLE, a schedule at K=0 for every batch size the load
reaches, against the same target without a drafter, HumanEval chat prompts x 64 tokens, a
2-core machine, py-spy with idle samples): the engine core's busy loop spent 2.8% of its
time in `take_draft_token_ids` at one client and 1.7% at 64, where the engine without a
drafter spends nothing, and the worker waited on its message queue that much longer.

Fix: `step()` notes whether its scheduler output asked for drafts
(`num_spec_tokens_to_schedule > 0`), and `post_step()` fetches drafts only after a step that
did. A step with K > 0, a configuration without a per-batch-size schedule (K is then always
the configured one), and the batch-queue path (which never records the flag) are unchanged.
Asynchronous scheduling (the default on GPUs) does not fetch drafts in `post_step()` at all,
so it is unchanged too.

Measured with `python -m bench ab` (`bench compare` since 2026-12-03; that all-K=0 schedule;
the same engine fetching the empty drafts (A, through a temporary switch) and not (B), both up
together, 2 interleaved rounds of 32 HumanEval prompts x 64 tokens): 1.06x output tokens/s at
one client, 1.07x at 16, 0.97x at 64 (one batch of 64 requests a round: within that level's
noise); no request failed.

Test: tests/vllm_patches/test_vllm_patches.py runs `EngineCore.step()` and `post_step()` on a
stand-in engine and counts the draft fetches: one after a K=7 step, none after a K=0 step.
"""

from __future__ import annotations

from vllm_patches import Edit, Patch

NOTE = Edit(
    before="""        self._attach_iteration_details(engine_core_outputs, iteration_details)
        self._attach_weight_version(engine_core_outputs)

        return engine_core_outputs, scheduler_output.total_num_scheduled_tokens > 0

    def post_step(self, model_executed: bool) -> None:
        # When using async scheduling we can't get draft token ids in advance,
        # so we update draft token ids in the worker process and don't
        # need to update draft token ids here.
        if self.check_for_draft_tokens and not self.async_scheduling and model_executed:
""",
    after="""        self._attach_iteration_details(engine_core_outputs, iteration_details)
        self._attach_weight_version(engine_core_outputs)
        # Dynamic SD: a step scheduled at K=0 proposed no drafts to fetch.
        self._step_proposed_drafts = scheduler_output.num_spec_tokens_to_schedule > 0

        return engine_core_outputs, scheduler_output.total_num_scheduled_tokens > 0

    def post_step(self, model_executed: bool) -> None:
        # When using async scheduling we can't get draft token ids in advance,
        # so we update draft token ids in the worker process and don't
        # need to update draft token ids here.
        if (
            self.check_for_draft_tokens
            and not self.async_scheduling
            and model_executed
            and getattr(self, "_step_proposed_drafts", True)
        ):
""",
)

PATCH = Patch(name="no_draft_fetch_at_k0", path="v1/engine/core.py", edits=(NOTE,))
