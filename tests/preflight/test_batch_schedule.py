"""The batch-size schedule for K, num_speculative_tokens_per_batch_size (batch_schedule.py):
what vLLM would silently reinterpret is refused before any weights load, naming the entry."""

from __future__ import annotations

import pytest

from tests.support.preflight import (
    PEAGLE,
    assert_fails,
    edit_head,
    logged,
    problems,
    run_check,
)

KEY = "num_speculative_tokens_per_batch_size"
SEVEN = {**PEAGLE, "num_speculative_tokens": 7}


def schedule(*ranges: list) -> dict:
    return {**SEVEN, KEY: list(ranges)}


def assert_passes_with(result, summary: str) -> None:
    """Exit 0, and the start-up summary states the schedule."""
    assert result.returncode == 0, logged(result)
    assert f"K=7 K_by_batch_size={summary} " in logged(result)


def test_a_schedule_from_1_to_max_num_seqs_passes_and_is_stated(demo_pair):
    spec = schedule([1, 4, 7], [5, 16, 3], [17, 64, 0])
    result = run_check(demo_pair, spec, SM_VLLM_MAX_NUM_SEQS="64")
    assert_passes_with(result, "1-4:7,5-16:3,17-64:0")


def test_without_max_num_seqs_the_schedule_must_reach_vllms_largest_default(demo_pair):
    result = run_check(demo_pair, schedule([1, 4, 7], [5, 1024, 0]))
    assert_passes_with(result, "1-4:7,5-1024:0")
    assert_fails(
        run_check(demo_pair, schedule([1, 4, 7], [5, 256, 0])),
        "ends at batch size 256",
        "SM_VLLM_MAX_NUM_SEQS",
        "1024",
    )


def test_a_schedule_short_of_max_num_seqs_is_refused(demo_pair):
    assert_fails(
        run_check(demo_pair, schedule([1, 4, 7], [5, 32, 3]), SM_VLLM_MAX_NUM_SEQS="64"),
        "ends at batch size 32",
        "max_num_seqs 64",
        "end the last range at 64",
    )


@pytest.mark.parametrize(
    ("ranges", "entry", "starts"),
    [
        (([2, 64, 7],), "entry 0 [2, 64, 7]", "start at batch size 1"),
        (([1, 4, 7], [6, 64, 3]), "entry 1 [6, 64, 3]", "start at 5"),
        (([1, 8, 7], [5, 64, 3]), "entry 1 [5, 64, 3]", "start at 9"),
        (([5, 64, 3], [1, 4, 7]), "entry 0 [5, 64, 3]", "start at batch size 1"),
    ],
    ids=["not-from-1", "gap", "overlap", "out-of-order"],
)
def test_ranges_in_order_with_no_gap_or_overlap(demo_pair, ranges, entry, starts):
    result = run_check(demo_pair, schedule(*ranges), SM_VLLM_MAX_NUM_SEQS="64")
    assert_fails(result, entry, starts)


def test_a_k_above_num_speculative_tokens_is_refused(demo_pair):
    spec = {**schedule([1, 4, 9], [5, 64, 3])}
    assert_fails(
        run_check(demo_pair, spec, SM_VLLM_MAX_NUM_SEQS="64"),
        "entry 0 [1, 4, 9]",
        '"num_speculative_tokens" (7)',
        "Lower it to 7",
    )


def test_a_k_above_the_heads_trained_depth_is_refused(pair):
    edit_head(pair, num_speculative_tokens_trained=4)
    spec = {**PEAGLE, "num_speculative_tokens": 5, KEY: [[1, 4, 4], [5, 64, 5]]}
    result = run_check(pair, spec, SM_VLLM_MAX_NUM_SEQS="64")
    assert_fails(result, "entry 1 [5, 64, 5]", "trained depth (4)", "Lower it to 4")


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ([], "non-empty list"),
        ([[1, 64]], "entry 0 is [1, 64]"),
        ([[1, 64, "7"]], "three whole numbers"),
        ([[1, 64, -1]], "K 0 or more"),
        ([[4, 2, 3]], "first no larger than the last"),
    ],
)
def test_malformed_entries_are_named(demo_pair, value, fragment):
    assert_fails(run_check(demo_pair, {**SEVEN, KEY: value}), KEY, fragment)


def test_data_parallelism_drops_the_schedule_so_it_is_refused(demo_pair):
    result = run_check(
        demo_pair,
        schedule([1, 64, 7]),
        SM_VLLM_MAX_NUM_SEQS="64",
        SM_VLLM_DATA_PARALLEL_SIZE="2",
    )
    assert_fails(result, "data parallelism", "SM_VLLM_DATA_PARALLEL_SIZE")


def test_one_problem_one_error(demo_pair):
    result = run_check(demo_pair, schedule([1, 4, 7], [6, 64, 3]), SM_VLLM_MAX_NUM_SEQS="64")
    assert len([line for line in problems(result) if KEY in line]) == 1
