"""Real-shaped public pairs (model_data_sources.public_shapes): `check` judges each as it
would the real checkpoints, reading only configs and safetensors headers, and names each
target's tool and reasoning parsers; the header-only head files take no disk for weights."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from model_data_sources import public_shapes
from serving import exit_codes

PARSERS = {
    "qwen3-coder-30b-a3b-fp8": "tool calls parsed by qwen3_coder:",
    "gpt-oss-20b": "reasoning parsed by openai_gptoss",
    "gemma-4-31b-it": "reasoning parsed by gemma4",
}


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    root = tmp_path_factory.mktemp("public_shapes")
    return {folder.name: folder for folder in public_shapes.write(root)}


def check(folder, config: dict) -> subprocess.CompletedProcess:
    env = {**os.environ, "OPT_ML_ROOT": str(folder)}
    env["SM_VLLM_SPECULATIVE_CONFIG"] = json.dumps(config)
    return subprocess.run(
        [sys.executable, "-m", "serving", "check"], env=env, capture_output=True, text=True
    )


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_check_passes_a_real_shaped_pair_and_names_its_parsers(pairs, name):
    folder = pairs[name]
    checked = check(folder, json.loads((folder / "speculative-config.json").read_text()))
    assert checked.returncode == 0, checked.stdout
    assert PARSERS[name] in checked.stdout
    assert "p-eagle=on K=7" in checked.stdout
    head = folder / "additional-model-data-sources" / public_shapes.CHANNEL / "model.safetensors"
    assert head.stat().st_size > 10**9 and head.stat().st_blocks * 512 < 10**6


def test_a_mask_hidden_sized_for_another_target_is_named(pairs):
    folder = pairs["qwen3-coder-30b-a3b-fp8"]
    pair = next(p for p in public_shapes.pairs() if p["name"] == folder.name)
    head = folder / "additional-model-data-sources" / public_shapes.CHANNEL
    tensors = {**pair["head_tensors"], "mask_hidden": ["BF16", [1, 1, 4096]]}
    public_shapes.header_only_safetensors(head / "model.safetensors", tensors)
    checked = check(folder, json.loads((folder / "speculative-config.json").read_text()))
    assert checked.returncode == exit_codes.BAD_CONFIG
    assert "mask_hidden" in checked.stdout and "Traceback" not in checked.stdout
