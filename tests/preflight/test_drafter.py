"""Finding the drafter and reading its files: directory, config.json, safetensors (drafter.py)."""

from __future__ import annotations

import shutil

import pytest

from tests.support.preflight import (
    PEAGLE,
    assert_fails,
    assert_passes,
    edit_json,
    head_dir,
    logged,
    run_check,
    target_dir,
)


def test_drafter_directory_missing(pair):
    shutil.rmtree(head_dir(pair))
    assert_fails(run_check(pair), f"drafter directory {head_dir(pair)} does not exist")


def test_a_head_inside_the_model_serves_when_there_is_no_channel(pair):
    # A model tarball packed with its head (Batch Transform mounts no extra channel).
    shutil.move(head_dir(pair), target_dir(pair) / "eagle")
    result = run_check(pair)
    assert_passes(result)
    assert str(target_dir(pair) / "eagle") in logged(result)
    # Checked by the same preflight: a broken head inside the model is refused as one in
    # the channel would be.
    edit_json(target_dir(pair) / "eagle" / "config.json", draft_vocab_size=7)
    assert run_check(pair).returncode != 0


def test_the_channel_wins_over_a_head_inside_the_model(pair):
    shutil.copytree(head_dir(pair), target_dir(pair) / "eagle")
    edit_json(target_dir(pair) / "eagle" / "config.json", draft_vocab_size=7)
    assert_passes(run_check(pair))


def test_a_relative_head_path_is_read_inside_the_model(pair):
    shutil.move(head_dir(pair), target_dir(pair) / "heads")
    result = run_check(pair, {**PEAGLE, "model": "heads"})
    assert_passes(result)
    assert str(target_dir(pair) / "heads") in logged(result)


def test_drafter_path_in_config_missing(pair):
    spec = {**PEAGLE, "model": str(pair / "nowhere")}
    assert_fails(run_check(pair, spec), f"drafter directory {pair / 'nowhere'}", "does not exist")


def test_drafter_directory_empty(pair):
    shutil.rmtree(head_dir(pair))
    head_dir(pair).mkdir()
    assert_fails(run_check(pair), f"drafter directory {head_dir(pair)} is empty")


def test_drafter_config_missing(pair):
    (head_dir(pair) / "config.json").unlink()
    assert_fails(run_check(pair), f"drafter {head_dir(pair)} has no config.json")


def test_drafter_config_not_json(pair):
    (head_dir(pair) / "config.json").write_text('{"architectures": [')
    assert_fails(run_check(pair), f"{head_dir(pair) / 'config.json'} is not valid JSON")


def test_drafter_without_safetensors(pair):
    (head_dir(pair) / "model.safetensors").rename(head_dir(pair) / "pytorch_model.bin")
    assert_fails(run_check(pair), "no *.safetensors", "pytorch_model.bin")


def test_truncated_safetensors(pair):
    weights = head_dir(pair) / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100_000])
    assert_fails(run_check(pair), str(weights), "truncated")


def test_corrupt_safetensors_header(pair):
    weights = head_dir(pair) / "model.safetensors"
    blob = bytearray(weights.read_bytes())
    blob[8:16] = b"\x00garbage"
    weights.write_bytes(bytes(blob))
    assert_fails(run_check(pair), str(weights), "corrupt safetensors header")


def test_safetensors_too_short_for_a_header(pair):
    (head_dir(pair) / "model.safetensors").write_bytes(b"\x01\x02")
    assert_fails(run_check(pair), "too short", "truncated")


@pytest.mark.parametrize("method", ["draft_model", "medusa", "mlp_speculator", "dflash"])
def test_method_with_a_drafter_of_its_own_but_no_model(pair, method):
    # The eagle channel is for EAGLE heads; these methods need "model" set.
    shutil.rmtree(head_dir(pair))
    spec = {"method": method, "num_speculative_tokens": 3}
    assert_fails(run_check(pair, spec), f'"method": "{method}"', 'names no "model"', 'set "model"')


def test_custom_class_without_model(demo_pair):
    spec = {"method": "custom_class", "num_speculative_tokens": 3}
    assert_fails(run_check(demo_pair, spec), '"custom_class" needs "model"', "proposer class")
