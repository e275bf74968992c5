"""What P-EAGLE needs beyond EAGLE-3: mask token, mask_hidden, a config vLLM keeps (p_eagle.py)."""

from __future__ import annotations

import json

import pytest

from tests.support.preflight import (
    assert_fails,
    assert_passes,
    assert_warns,
    edit_head,
    edit_weights,
    head_dir,
    logged,
    run_check,
    to_speculators_layout,
)


def test_parallel_drafting_without_mask_token(pair):
    edit_head(pair, ptd_token_id=None)
    assert_fails(
        run_check(pair),
        "config.json: no ptd_token_id",
        "mask token id",
        '"parallel_drafting": false',
    )


def test_mask_token_outside_the_vocabulary(pair):
    edit_head(pair, ptd_token_id=5000)
    assert_fails(run_check(pair), "ptd_token_id 5000 is outside the vocabulary (0..1023)")


def test_parallel_drafting_without_mask_hidden(pair):
    edit_weights(pair, drop=("mask_hidden",))
    assert_fails(run_check(pair), "no mask_hidden tensor")


def test_mask_hidden_of_the_wrong_width(pair):
    edit_weights(pair, mask_hidden=("F32", [1, 256]))
    assert_fails(run_check(pair), "mask_hidden has shape [1, 256]", "3 x 128 = 384")


def test_sequential_mode_needs_no_mask_token(pair):
    edit_head(pair, ptd_token_id=None, parallel_drafting=None)
    edit_weights(pair, drop=("mask_hidden",))
    result = run_check(pair, {"method": "eagle3", "num_speculative_tokens": 3})
    assert result.returncode == 0, logged(result)


def test_p_eagle_head_run_sequentially_warns(demo_pair):
    result = run_check(demo_pair, {"method": "eagle3", "num_speculative_tokens": 3})
    assert_warns(result, "is a P-EAGLE head", '"parallel_drafting": true')


# --- the speculators layout -----------------------------------------------------------------------


def test_speculators_peagle_head_without_mask_token_id(pair):
    config = to_speculators_layout(pair)
    del config["mask_token_id"]
    (head_dir(pair) / "config.json").write_text(json.dumps(config))
    assert_fails(run_check(pair), "no mask_token_id", "mask token id")


def test_speculators_peagle_head_run_sequentially_warns(pair):
    to_speculators_layout(pair)
    result = run_check(pair, {"method": "eagle3", "num_speculative_tokens": 3})
    assert_warns(result, "speculators_model_type peagle")


def test_speculators_eagle3_head_without_mask_token_fails_p_eagle(pair):
    to_speculators_layout(pair, kind="eagle3")
    assert_fails(run_check(pair), "no ptd_token_id")


def write_head(root, config: dict) -> None:
    (head_dir(root) / "config.json").write_text(json.dumps(config))


@pytest.mark.parametrize("key", ["fc_norm", "norm_output"])
def test_speculators_peagle_key_that_vllm_drops_is_refused(pair, key):
    # vLLM's update_peagle builds the drafter's config without these top-level keys.
    config = to_speculators_layout(pair)
    write_head(pair, {**config, key: True})
    result = run_check(pair)
    assert_fails(
        result,
        str(head_dir(pair) / "config.json"),
        f'"{key}" is set at the top level',
        "update_peagle",
        f'move "{key}" into transformer_layer_config',
    )


@pytest.mark.parametrize("key", ["fc_norm", "norm_output"])
def test_speculators_peagle_key_inside_transformer_layer_config_passes(pair, key):
    config = to_speculators_layout(pair)
    config["transformer_layer_config"][key] = True
    write_head(pair, {**config, key: True})
    assert_passes(run_check(pair))


def test_speculators_eagle3_head_keeps_fc_norm(pair):
    # update_eagle3, unlike update_peagle, copies fc_norm and norm_output over.
    config = to_speculators_layout(pair, kind="eagle3")
    write_head(pair, {**config, "fc_norm": True, "norm_output": True})
    result = run_check(pair, {"method": "eagle3", "num_speculative_tokens": 3})
    assert result.returncode == 0, logged(result)


def test_speculators_peagle_key_switched_off_passes(pair):
    config = to_speculators_layout(pair)
    write_head(pair, {**config, "fc_norm": False, "norm_output": False})
    assert_passes(run_check(pair))
