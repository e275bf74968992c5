"""K that follows the batch size (`num_speculative_tokens_per_batch_size`) with P-EAGLE: the
engine drafts the schedule's K for each step, and greedy answers stay those of the target
alone while requests run across every range of the schedule (vllm_patches/
parallel_drafting_dynamic_k.py; without it the first step below the largest K crashed the
engine: "shape '[-1, 3]' is invalid for input of size 133")."""

from __future__ import annotations

from tests.support.containers import SCHEDULED_CONFIG
from tests.support.schedule_load import (
    assert_greedy_answers_equal_across_the_schedule,
    payload,
    staggered,
    tokens,
)

SCHEDULE = SCHEDULED_CONFIG["num_speculative_tokens_per_batch_size"]
LARGEST_K = SCHEDULED_CONFIG["num_speculative_tokens"]


def test_greedy_answers_equal_the_targets_across_every_range_of_the_schedule(scheduled, plain):
    assert_greedy_answers_equal_across_the_schedule(scheduled, plain, SCHEDULE)


def test_one_request_alone_drafts_the_largest_k(scheduled):
    drafts = scheduled.metric("vllm:spec_decode_num_drafts_total")
    drafted = scheduled.metric("vllm:spec_decode_num_draft_tokens_total")
    tokens(scheduled.url, payload(0))
    drafts = scheduled.metric("vllm:spec_decode_num_drafts_total") - drafts
    drafted = scheduled.metric("vllm:spec_decode_num_draft_tokens_total") - drafted
    assert drafts > 0
    assert drafted == LARGEST_K * drafts


def test_a_full_batch_drafts_fewer_tokens_per_step(scheduled):
    """With requests running together the schedule's smaller K (and no drafts at all from
    batch 5) take over: fewer draft tokens per drafting step than K=7 alone gives."""
    drafts = scheduled.metric("vllm:spec_decode_num_drafts_total")
    drafted = scheduled.metric("vllm:spec_decode_num_draft_tokens_total")
    staggered(scheduled.url)
    drafts = scheduled.metric("vllm:spec_decode_num_drafts_total") - drafts
    drafted = scheduled.metric("vllm:spec_decode_num_draft_tokens_total") - drafted
    assert 0 < drafted / drafts < LARGEST_K
