"""[Spec Decode] Dynamic SD: a K=0 step with no drafts to verify samples as a plain step

With a drafter configured, the model runner's `_prepare_inputs()` always takes the
speculative path: it builds `SpecDecodeMetadata` (per-request draft counts, logits indices,
bonus and target indices, copied to the device) and `_sample()` then runs the rejection
sampler, even when no request in the batch has a draft. With dynamic speculative decoding
(`num_speculative_tokens_per_batch_size`) that is every step whose batch size maps to K=0:
the step verifies nothing and proposes nothing, and pays for both.

Profiled on vLLM's CPU build (P-EAGLE, a schedule at K=0 for every batch size the load
reaches, against the same target without a drafter, HumanEval chat prompts x 64 tokens,
py-spy with idle samples, one client): the worker spent 1.8% of its time in the rejection
sampler on empty drafts and 4.4% in `_prepare_inputs` against 2.2% without a drafter.

Fix: `_prepare_inputs()` takes the plain path (one logit per request, no
`SpecDecodeMetadata`, so `_sample()` runs the plain sampler) for a step scheduled at K=0
that verifies no drafts. The drafter's own code already handles `spec_decode_metadata is
None` (its non-speculative branch), and at K=0 it proposes nothing. Kept on the speculative
path: a step with K > 0, a step that still verifies drafts proposed before K fell to 0, and
hybrid models (`model_config.is_hybrid`), whose recurrent state reads a zero-draft decode
row at the speculative offset (`num_decode_draft_tokens`). Greedy outputs are unchanged;
a sampled token comes from the same distribution (the rejection sampler's bonus token with
no drafts is a plain sample from the target's probabilities).

Test: tests/vllm_patches/test_vllm_patches.py serves the demo pair with an all-K=0 schedule
in-process and counts the rejection sampler's calls: none, with answers equal to the target's alone.
"""

from __future__ import annotations

from vllm_patches import Edit, Patch

PLAIN = Edit(
    before="""        use_spec_decode = self.speculative_config is not None
        if not use_spec_decode:
            # NOTE(woosuk): Due to chunked prefills, the batch may contain
""",
    after="""        use_spec_decode = self.speculative_config is not None
        if (
            use_spec_decode
            and scheduler_output.num_spec_tokens_to_schedule == 0
            and not any(scheduler_output.scheduled_spec_decode_tokens.values())
            and not self.model_config.is_hybrid
        ):
            # Dynamic SD at K=0 with no drafts to verify: a plain step.
            use_spec_decode = False
        if not use_spec_decode:
            # NOTE(woosuk): Due to chunked prefills, the batch may contain
""",
)

PATCH = Patch(name="plain_sampling_at_k0", path="v1/worker/gpu_model_runner.py", edits=(PLAIN,))
