"""SM_VLLM_SPECULATIVE_CONFIG itself: JSON, keys, types, method and K (speculative_config.py)."""

from __future__ import annotations

import pytest

from tests.support.preflight import (
    PEAGLE,
    assert_fails,
    logged,
    problems,
    run_check,
)


def test_speculative_config_not_json(demo_pair):
    assert_fails(run_check(demo_pair, '{"method": "eagle3",'), "SM_VLLM_SPECULATIVE_CONFIG", "JSON")


def test_speculative_config_not_an_object(demo_pair):
    assert_fails(
        run_check(demo_pair, '["eagle3", 3]'), "SM_VLLM_SPECULATIVE_CONFIG", "not an object"
    )


def test_unknown_key_names_the_nearest_valid_key(demo_pair):
    spec = {"method": "eagle3", "num_speculative_tokens": 3, "parallel_draftin": True}
    assert_fails(
        run_check(demo_pair, spec), '"parallel_draftin"', 'did you mean "parallel_drafting"'
    )


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("parallel_drafting", "true", "true or false"),
        ("num_speculative_tokens", "3", "whole number"),
        ("draft_tensor_parallel_size", 0, "whole number of 1 or more"),
        ("rejection_sample_method", "fast", "standard"),
    ],
)
def test_wrong_types(demo_pair, key, value, fragment):
    assert_fails(run_check(demo_pair, {**PEAGLE, key: value}), f'"{key}"', fragment)


def test_fields_vllm_fills_in_itself_are_rejected(demo_pair):
    spec = {**PEAGLE, "tensor_parallel_size": 2}
    assert_fails(run_check(demo_pair, spec), "tensor_parallel_size", "draft_tensor_parallel_size")


# --- 2. method and K ------------------------------------------------------------------------


def test_unknown_method_names_the_nearest(demo_pair):
    assert_fails(run_check(demo_pair, {**PEAGLE, "method": "eagle-3"}), '"eagle-3"', '"eagle3"')


def test_peagle_is_not_a_method(demo_pair):
    assert_fails(run_check(demo_pair, {**PEAGLE, "method": "peagle"}), '"peagle"', '"eagle3"')


def test_method_missing(demo_pair):
    spec = {"num_speculative_tokens": 3, "parallel_drafting": True}
    result = run_check(demo_pair, spec)
    assert_fails(result, 'no "method"', '"eagle3"')
    assert len(problems(result)) == 1, logged(result)


def test_num_speculative_tokens_missing(demo_pair):
    spec = {"method": "eagle3", "parallel_drafting": True}
    assert_fails(run_check(demo_pair, spec), 'no "num_speculative_tokens"')


@pytest.mark.parametrize("tokens", [2.5, 0, -1, True])
def test_num_speculative_tokens_not_a_positive_integer(demo_pair, tokens):
    spec = {**PEAGLE, "num_speculative_tokens": tokens}
    assert_fails(
        run_check(demo_pair, spec), '"num_speculative_tokens"', "whole number of 1 or more"
    )


def test_parallel_drafting_with_a_method_that_cannot_draft_in_parallel(demo_pair):
    spec = {"method": "ngram", "num_speculative_tokens": 3, "parallel_drafting": True}
    assert_fails(run_check(demo_pair, spec), '"parallel_drafting"', '"ngram"', "remove it")
