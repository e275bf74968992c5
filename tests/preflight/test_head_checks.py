"""An EAGLE-3 head against its target: depth, sizes, aux layers, vocabulary (heads, aux_layers)."""

from __future__ import annotations

import json

import pytest

from tests.support.preflight import (
    PEAGLE,
    assert_fails,
    assert_passes,
    assert_warns,
    edit_head,
    edit_target,
    edit_weights,
    head_dir,
    logged,
    problems,
    run_check,
    to_speculators_layout,
)

# --- draft depth ---------------------------------------------------------------------------------


def test_k_past_the_trained_positions_with_p_eagle(demo_pair):
    spec = {**PEAGLE, "num_speculative_tokens": 17}
    assert_fails(
        run_check(demo_pair, spec), "17", "trained for 16", "num_speculative_tokens_trained"
    )


def test_k_past_the_trained_positions_in_sequential_mode_warns(demo_pair):
    spec = {"method": "eagle3", "num_speculative_tokens": 20}
    assert_warns(run_check(demo_pair, spec), "is 20, past the 16 positions")


# --- 5. sizes against the target --------------------------------------------------------------


def test_target_hidden_size_mismatch(pair):
    edit_head(pair, target_hidden_size=256)
    assert_fails(run_check(pair), "target_hidden_size is 256", "hidden_size is 128")


def test_head_hidden_size_mismatch(pair):
    edit_head(pair, hidden_size=256, target_hidden_size=None)
    assert_fails(run_check(pair), "hidden_size is 256", "target's hidden_size is 128")


def test_target_hidden_size_mismatch_from_the_target_side(pair):
    edit_target(pair, hidden_size=256)
    assert_fails(run_check(pair), "target_hidden_size is 128", "target's hidden_size is 256")


def test_fc_input_width_not_n_aux_times_target_hidden(pair):
    edit_weights(pair, **{"fc.weight": ("F32", [128, 200])})
    assert_fails(run_check(pair), "fc.weight input width is 200", "3 x 128 = 384")


def test_fc_for_more_aux_layers_than_vllm_builds(pair):
    edit_head(pair, eagle_aux_hidden_state_layer_ids=[1, 2, 4, 5])
    edit_weights(pair, **{"fc.weight": ("F32", [128, 512])}, mask_hidden=("F32", [1, 512]))
    result = run_check(pair)
    assert_fails(result, "fc.weight input width is 512", '"num_aux_hidden_states": 4')
    # One cause, one sentence: the aux ids and mask_hidden fit once that key is added.
    assert len(problems(result)) == 1, logged(result)


# --- 6. aux hidden-state layers ---------------------------------------------------------------


def test_aux_layer_ids_outside_the_target(pair):
    edit_head(pair, eagle_aux_hidden_state_layer_ids=[2, 4, 12])
    assert_fails(run_check(pair), "[2, 4, 12]", "include [12]", "layers 0..8")


def test_default_aux_layers_collapse_on_a_four_layer_target(pair):
    # The brief's crash: vLLM's default (2, L//2, L-3) is (2, 2, 1) for L=4.
    edit_target(pair, num_hidden_layers=4)
    edit_head(pair, eagle_aux_hidden_state_layer_ids=None)
    result = run_check(pair)
    assert_fails(result, "[2, 2, 1]", "2 distinct", "fc expects 3", "default")
    assert len(problems(result)) == 1, logged(result)


def test_duplicate_aux_layer_ids(pair):
    edit_head(pair, eagle_aux_hidden_state_layer_ids=[2, 4, 4])
    assert_fails(run_check(pair), "[2, 4, 4]", "2 distinct", "fc expects 3")


# --- 7. vocabulary ------------------------------------------------------------------------------


def test_smaller_draft_vocabulary_without_d2t(pair):
    edit_head(pair, draft_vocab_size=512)
    edit_weights(pair, **{"lm_head.weight": ("F32", [512, 128])})
    assert_fails(run_check(pair), "draft vocabulary (512)", "(1024)", "no d2t")


def test_d2t_of_the_wrong_length(pair):
    edit_head(pair, draft_vocab_size=512)
    edit_weights(pair, **{"lm_head.weight": ("F32", [512, 128]), "d2t": ("I64", [500])})
    assert_fails(run_check(pair), "d2t has shape [500]", "draft_vocab_size is 512")


def test_smaller_draft_vocabulary_with_d2t_passes(pair):
    edit_head(pair, draft_vocab_size=512)
    edit_weights(pair, **{"lm_head.weight": ("F32", [512, 128]), "d2t": ("I64", [512])})
    result = run_check(pair)
    assert result.returncode == 0, logged(result)
    assert "draft_vocab=512" in logged(result)


# --- the speculators layout -----------------------------------------------------------------------


def test_speculators_peagle_head_passes(pair):
    to_speculators_layout(pair)
    result = run_check(pair)
    assert_passes(result)
    assert "aux_layers=2,4,5" in logged(result)


def test_speculators_head_sizes_are_read_from_transformer_layer_config(pair):
    config = to_speculators_layout(pair)
    config["transformer_layer_config"]["hidden_size"] = 256
    config["target_hidden_size"] = None
    (head_dir(pair) / "config.json").write_text(json.dumps(config))
    assert_fails(run_check(pair), "hidden_size is 256", "target's hidden_size is 128")


def test_native_head_that_is_not_eagle3_under_eagle3(pair):
    edit_head(pair, architectures=["GPT2LMHeadModel"])
    assert_fails(run_check(pair), "architectures ['GPT2LMHeadModel']", "not an EAGLE-3 head")


@pytest.mark.parametrize(
    ("kind", "design", "method"),
    [
        ("dflash", "DFlash", "dflash"),
        ("dflash2", "DFlash", "dflash"),
        ("dspark", "DSpark", "dspark"),
    ],
)
def test_a_dflash_or_dspark_head_is_named_as_such(pair, kind, design, method):
    """Upstream's parallel drafters from vLLM 0.34 on, in speculators' layout."""
    config = to_speculators_layout(pair)
    config["speculators_model_type"] = kind
    (head_dir(pair) / "config.json").write_text(json.dumps(config))
    assert_fails(
        run_check(pair),
        f"a {design} head ({kind}), not a P-EAGLE one",
        f'"method": "{method}"',
        "train one for this target",
    )


def test_a_native_dflash_head_is_named_by_its_architecture(pair):
    edit_head(pair, architectures=["DFlashDraftModel"])
    assert_fails(run_check(pair), "a DFlash head (dflash), not a P-EAGLE one")
