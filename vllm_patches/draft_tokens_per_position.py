"""[Metrics][Spec Decode] Export draft tokens per position, so per-position acceptance holds
when K changes between steps

`vllm:spec_decode_num_accepted_tokens_per_pos` counts accepted tokens at each draft position,
and the documented per-position acceptance rate divides it by `vllm:spec_decode_num_drafts`.
That is right only while every draft has the same length. With a batch-size schedule for K
(`num_speculative_tokens_per_batch_size`), or drafts cut short (a structured-output grammar
refusing a draft token, the end of the context), a draft of K=3 in an engine configured for
K=7 counts in the denominator of positions 3..6, where it drafted nothing: the later
positions' rates read low, by the share of short drafts.

The scheduler already counts draft tokens per position (`SpecDecodingStats.
num_draft_tokens_per_pos`); it is never exported. This exports it as
`vllm:spec_decode_num_draft_tokens_per_pos` (labels as the accepted counter's, plus
`position`), so that

    rate(vllm:spec_decode_num_accepted_tokens_per_pos_total[$interval]) /
    rate(vllm:spec_decode_num_draft_tokens_per_pos_total[$interval])

is each position's acceptance rate at any mix of K, and the difference between positions
p-1 and p counts the drafts of exactly p tokens: which K the engine drafted, seen from
Prometheus. No existing metric changes.

Test: tests/serving/test_metrics.py (the counter is there and its position 0 equals
num_drafts); tests/serving/test_speculation_schedule.py (under a schedule, drafts of each K add up).
"""

from __future__ import annotations

from vllm_patches import Edit, Patch

CREATE = Edit(
    before="""            self.counter_spec_decode_num_accepted_tokens_per_pos = {
                idx: [
                    base_counter.labels(*lv, str(pos)) for pos in range(num_spec_tokens)
                ]
                for idx, lv in per_engine_labelvalues.items()
            }
""",
    after="""            self.counter_spec_decode_num_accepted_tokens_per_pos = {
                idx: [
                    base_counter.labels(*lv, str(pos)) for pos in range(num_spec_tokens)
                ]
                for idx, lv in per_engine_labelvalues.items()
            }
            drafted_counter = self._counter_cls(
                name="vllm:spec_decode_num_draft_tokens_per_pos",
                documentation="Draft tokens per draft position.",
                labelnames=pos_labelnames,
            )
            self.counter_spec_decode_num_draft_tokens_per_pos = {
                idx: [
                    drafted_counter.labels(*lv, str(pos))
                    for pos in range(num_spec_tokens)
                ]
                for idx, lv in per_engine_labelvalues.items()
            }
""",
)

DECLARE = Edit(
    before="""        self.counter_spec_decode_num_accepted_tokens_per_pos: dict[
            int, list[prometheus_client.Counter]
        ] = {}
""",
    after="""        self.counter_spec_decode_num_accepted_tokens_per_pos: dict[
            int, list[prometheus_client.Counter]
        ] = {}
        self.counter_spec_decode_num_draft_tokens_per_pos: dict[
            int, list[prometheus_client.Counter]
        ] = {}
""",
)

OBSERVE = Edit(
    before="""            counter.inc(spec_decoding_stats.num_accepted_tokens_per_pos[pos])
""",
    after="""            counter.inc(spec_decoding_stats.num_accepted_tokens_per_pos[pos])
        for pos, counter in enumerate(
            self.counter_spec_decode_num_draft_tokens_per_pos.get(engine_idx, [])
        ):
            counter.inc(spec_decoding_stats.num_draft_tokens_per_pos[pos])
""",
)

PATCH = Patch(
    name="draft_tokens_per_position",
    path="v1/spec_decode/metrics.py",
    edits=(DECLARE, CREATE, OBSERVE),
)
