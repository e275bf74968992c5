"""The target: its config.json, and whether it can feed a drafter aux hidden states (target.py)."""

from __future__ import annotations

import pytest

from tests.support.preflight import (
    assert_fails,
    edit_target,
    logged,
    run_check,
    target_dir,
)


def test_target_without_config(pair):
    (target_dir(pair) / "config.json").unlink()
    assert_fails(run_check(pair), f"{target_dir(pair)} has no config.json")


def test_target_config_not_json(pair):
    (target_dir(pair) / "config.json").write_text("{")
    assert_fails(run_check(pair), "target config", "is not valid JSON")


def test_target_architecture_without_eagle3_support(pair):
    edit_target(pair, architectures=["GPT2LMHeadModel"])
    assert_fails(run_check(pair), "GPT2LMHeadModel", "aux hidden states")


@pytest.mark.parametrize("method", ["dflash", "extract_hidden_states"])
def test_other_methods_that_draft_from_aux_hidden_states_need_a_supported_target(pair, method):
    # vLLM's model runner asks the target for aux hidden states for these too.
    edit_target(pair, architectures=["GPT2LMHeadModel"])
    spec = {"method": method, "num_speculative_tokens": 3}
    assert_fails(
        run_check(pair, spec), "GPT2LMHeadModel", f'"{method}" drafter', "aux hidden states"
    )


def test_transformers_backend_feeds_any_target(pair):
    edit_target(pair, architectures=["GPT2LMHeadModel"])
    result = run_check(pair, SM_VLLM_MODEL_IMPL="transformers")
    assert result.returncode == 0, logged(result)
